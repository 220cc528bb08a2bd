"""The schedule parameters: syntax, defaults, derived shapes, and every validation rule."""

from __future__ import annotations

import itertools

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

import mmcomp
from mmcomp.arch import limits as hw
from mmcomp.dialects.fusion import Fusion as FusionDialect
from mmcomp.dialects.sched import (
    SWIZZLE_LIMIT,
    Problem,
    Sched,
    ScheduleOp,
    ScheduleParams,
    ScheduleParamsAttr,
    derive_instr,
    derive_warpgroup,
    problem_of,
    swizzle_index,
    tile_rows,
)
from mmcomp.errors import ScheduleError
from mmcomp.passes.propagate_axis_mapping import propagate

BIG = Problem({"m": 4096, "n": 4096, "k": 4096})


def parse_attr(text: str) -> ScheduleParamsAttr:
    ctx = Context()
    for dialect in (Builtin, Func, FusionDialect, Sched):
        ctx.load_dialect(dialect)
    attr = Parser(ctx, text).parse_attribute()
    assert isinstance(attr, ScheduleParamsAttr)
    return attr


def test_defaults_are_cutlass_hopper_bf16():
    params = ScheduleParams()
    assert params.tile == (128, 256, 64)
    assert params.warpgroup == (64, 256)
    assert params.instr == (64, 256, 16)
    assert params.stages == 4
    assert params.registers == (40, 232)
    assert params.consumer_warpgroups == 2
    assert params.threads == 384
    assert params.accumulator_registers == 128
    params.check(BIG)


def test_print_then_parse_gives_the_same_params():
    variants = [
        ScheduleParams(),
        ScheduleParams.build({"tile": (64, 128, 64), "warp_specialization": "pingpong"}),
        ScheduleParams.build(
            {
                "tile": (128, 128, 64),
                "strategy": "one-tile-per-cta",
                "raster": "auto",
                "cluster": (2, 1),
                "split_k": 3,
                "epilogue": "registers",
                "swizzle": 1,
            }
        ),
    ]
    for params in variants:
        attr = ScheduleParamsAttr(params)
        text = str(attr)
        assert text == f"#sched.params<{params.format()}>"
        assert parse_attr(text).data == params


def test_keys_left_out_take_defaults_and_shapes_are_derived():
    params = parse_attr("#sched.params<tile = 128x128x64, strategy = one-tile-per-cta>").data
    assert params.warpgroup == (64, 128)
    assert params.instr == (64, 128, 16)
    assert params.stages == ScheduleParams().stages
    assert params.strategy == "one-tile-per-cta"
    assert parse_attr("#sched.params<>").data.complete() == ScheduleParams()


def test_parsed_params_remember_the_written_keys_only():
    attr = parse_attr("#sched.params<swizzle = 8, tile = 128x256x64, epilogue = smem>")
    params = attr.data
    # Written keys count even at their default value; the order is canonical.
    assert params.written == frozenset({"tile", "swizzle", "epilogue"})
    assert params.written_keys == ("tile", "swizzle", "epilogue")
    assert params.written_values() == {"tile": (128, 256, 64), "swizzle": 8, "epilogue": "smem"}
    assert str(attr) == "#sched.params<tile = 128x256x64, swizzle = 8, epilogue = smem>"
    assert parse_attr(str(attr)) == attr
    # Every key written: nothing is left to choose, and it prints in full.
    full = parse_attr(f"#sched.params<{ScheduleParams().format()}>").data
    assert full.written is None
    assert full == ScheduleParams()
    assert full.written_values() == {key: getattr(full, key) for key in ScheduleParams.KEYS}
    # `<>` writes nothing.
    empty = parse_attr("#sched.params<>")
    assert empty.data.written == frozenset()
    assert str(empty) == "#sched.params<>"


def test_pingpong_alone_parses_with_a_64_row_fill():
    params = parse_attr("#sched.params<warp_specialization = pingpong>").data
    assert params.written == frozenset({"warp_specialization"})
    assert (params.tile, params.warpgroup, params.instr) == (
        (64, 256, 64),
        (64, 256),
        (64, 256, 16),
    )
    assert params.accumulator_registers == 128
    both = parse_attr("#sched.params<warp_specialization = pingpong, epilogue = registers>").data
    assert both.written_values() == {"warp_specialization": "pingpong", "epilogue": "registers"}
    assert both.tile == (64, 256, 64)
    assert tile_rows("pingpong") == 64
    assert tile_rows("cooperative") == tile_rows("none") == 128
    # A written tile is taken as written, and checked with the other keys.
    with pytest.raises(ParseError, match=r"warpgroup tile 128x256 needs 256 f32 accumulator"):
        parse_attr("#sched.params<tile = 128x256x64, warp_specialization = pingpong>")


def test_schedule_op_fixes_every_key():
    partial = ScheduleParams.partial({"tile": (128, 128, 64)})
    for params in (partial, ScheduleParamsAttr(partial)):
        op = ScheduleOp(params)
        assert op.params.data.written is None
        assert op.params.data == partial.complete()


def test_unwritten_keys_must_hold_their_fill():
    partial = ScheduleParams.partial({"tile": (128, 128, 64)})
    with pytest.raises(VerifyException, match=r"stages is not written, so it must hold its fill 4"):
        ScheduleParamsAttr(partial.replace(stages=3))
    with pytest.raises(VerifyException, match=r"written keys tiles are not schedule parameters"):
        ScheduleParamsAttr(partial.replace(written=frozenset({"tiles"})))
    assert (
        ScheduleParams.partial({key: getattr(ScheduleParams(), key) for key in ScheduleParams.KEYS})
        == ScheduleParams()
    )


@pytest.mark.parametrize("swizzle", [1, 2, 3, 8, 16, 64, SWIZZLE_LIMIT])
def test_swizzle_groups_up_to_one_per_sm_are_valid(swizzle):
    ScheduleParams(swizzle=swizzle).validate()
    assert parse_attr(f"#sched.params<swizzle = {swizzle}>").data.swizzle == swizzle


def test_derived_shapes():
    assert derive_warpgroup((128, 256, 64), "cooperative") == (64, 256)
    # A 64-row cooperative tile: the two consumers split its N (whole 8-column halves).
    assert derive_warpgroup((64, 256, 64), "cooperative") == (64, 128)
    assert derive_warpgroup((64, 24, 64), "cooperative") == (64, 24)
    assert derive_warpgroup((64, 256, 64), "none") == (64, 256)
    assert derive_warpgroup((128, 128, 64), "pingpong") == (128, 128)
    assert derive_instr((64, 256)) == (64, 256, 16)
    assert derive_instr((64, 96)) == (64, 96, 16)
    assert derive_instr((64, 128), element_bytes=4) == (64, 128, 8)


INVALID = [
    (
        {"tile": (128, 128, 40)},
        r"tile 128x128x40 .* not divisible by the instruction shape m64n128k16",
    ),
    ({"tile": (128, 100, 64)}, r"instr m64n100k16: wgmma n must be a multiple of 8 from 8 to 256"),
    ({"tile": (96, 128, 64)}, r"not divisible by the instruction shape"),
    ({"instr": (64, 264, 16)}, r"wgmma n must be a multiple of 8 from 8 to 256"),
    ({"tile": (128, 512, 64), "warpgroup": (64, 256)}, r"n = 512 exceeds the TMA box limit of 256"),
    ({"stages": 1}, r"stages = 1: the TMA/wgmma pipeline needs at least 2 stages"),
    ({"swizzle": 0}, r"swizzle = 0: the group size must be at least 1"),
    (
        {"swizzle": 133},
        r"swizzle = 133: the group size must be at most 132, the SMs of one wave",
    ),
    ({"swizzle": 4096}, r"swizzle = 4096: the group size must be at most 132"),
    ({"split_k": 0}, r"split_k = 0: must be at least 1"),
    ({"cluster": (4, 4)}, r"cluster 4x4 has 16 CTAs; the portable limit is 8"),
    ({"cluster": (0, 1)}, r"cluster 0x1: every extent must be positive"),
    ({"registers": (40, 230)}, r"consumer count 230 must be a multiple of 8 from 24 to 256"),
    ({"registers": (16, 232)}, r"producer count 16 must be a multiple of 8 from 24 to 256"),
    ({"registers": (40, 264)}, r"consumer count 264 must be a multiple of 8"),
    (
        {"registers": (64, 256)},
        r"\(64 \+ 2 x 256\) registers x 128 threads = 73728, over the 65536",
    ),
    (
        {"tile": (128, 256, 64), "warp_specialization": "pingpong"},
        r"256 f32 accumulator registers per thread; 232 consumer registers leave 168 .*pingpong",
    ),
    (
        {"tile": (128, 256, 64), "warpgroup": (64, 256), "warp_specialization": "pingpong"},
        r"pingpong gives each consumer warpgroup a whole tile",
    ),
    ({"tile": (128, 256, 64), "registers": (40, 168)}, r"168 consumer registers leave 104"),
    (
        {"tile": (256, 256, 64), "warpgroup": (64, 256)},
        r"needs 4 consumer warpgroups; .* at most 2",
    ),
    ({"strategy": "stream-j"}, r'unknown strategy "stream-j"; expected one of "one-tile-per-cta"'),
    ({"strategy": "stream-k", "split_k": 2}, r"strategy stream-k with split_k = 2: .* must be 1"),
    (
        {"strategy": "hybrid-stream-k", "cluster": (1, 2)},
        r"strategy hybrid-stream-k with cluster 1x2: .* runs with cluster 1x1",
    ),
    ({"raster": "diagonal"}, r'unknown raster "diagonal"; expected one of "m", "n", "auto"'),
    ({"epilogue": "tma"}, r'unknown epilogue "tma"; expected one of "registers", "smem"'),
    ({"warp_specialization": "triple"}, r'unknown warp_specialization "triple"'),
]


@pytest.mark.parametrize(("changes", "message"), INVALID)
def test_invalid_params_are_rejected_with_the_value_and_the_limit(changes, message):
    params = ScheduleParams.build(changes)
    with pytest.raises(ScheduleError, match=message):
        params.validate()
    with pytest.raises(VerifyException, match=message):
        ScheduleParamsAttr(params)


def test_unknown_key_is_rejected():
    with pytest.raises(ScheduleError, match=r"unknown schedule parameter 'tiles'"):
        ScheduleParams.build({"tiles": (128, 128, 64)})


def test_invalid_text_is_a_parse_error_naming_the_value():
    with pytest.raises(ParseError, match=r"stages = 1: the TMA/wgmma pipeline needs at least 2"):
        parse_attr("#sched.params<stages = 1>")
    with pytest.raises(ParseError, match=r"instr: expected a wgmma shape such as m64n256k16"):
        parse_attr("#sched.params<instr = wgmma>")
    with pytest.raises(ParseError, match=r"tile: expected 3 extents separated by 'x', found 128"):
        parse_attr("#sched.params<tile = 128>")


def test_shared_memory_over_the_limit_names_bytes_and_limit():
    params = ScheduleParams.build({"tile": (256, 256, 64), "stages": 4, "epilogue": "registers"})
    with pytest.raises(
        ScheduleError,
        match=r"tile 256x256x64 with 4 stages needs 263248 bytes of shared memory "
        r"\(a 131072, b 131072, barriers 80, alignment 1024\); the device allows 232448",
    ):
        params.check(BIG)


def test_shared_memory_counts_every_b_operand_and_the_epilogue():
    params = ScheduleParams()
    one = params.smem_bytes(BIG)
    # Barriers: a full and an empty one per stage, then split-K's 16-byte word. Epilogue: two
    # 64 x 128-byte boxes for each of the two consumer warpgroups, 1024-aligned after the
    # barriers; 1024 bytes more for the alignment of the base.
    assert one == {
        "a": 4 * 16384,
        "b": 4 * 32768,
        "barriers": 2 * 4 * 8 + 16,
        "epilogue": 2 * 2 * 64 * 128,
        "alignment": (1024 - 80) + 1024,
    }
    assert sum(one.values()) == params.shared_memory(BIG).dynamic_bytes
    assert sum(one.values()) <= hw.MAX_DYNAMIC_SMEM_PER_BLOCK
    horizontal = Problem(BIG.extents, b_operands=2)
    assert params.smem_bytes(horizontal)["b"] == 2 * one["b"]
    with pytest.raises(ScheduleError, match=r"for 1 A and 2 B operand tiles needs 362496 bytes"):
        params.check(horizontal)
    # A box row is 128 bytes whatever the output type (64 bf16 or 32 f32 columns).
    f32_out = Problem(BIG.extents, output_bytes=(4, 2))
    assert params.smem_bytes(f32_out)["epilogue"] == one["epilogue"]
    assert params.replace(epilogue="registers").smem_bytes(BIG)["epilogue"] == 0


def test_split_k_larger_than_the_k_blocks():
    params = ScheduleParams.build({"tile": (128, 128, 64), "split_k": 5})
    with pytest.raises(
        ScheduleError, match=r"split_k = 5 is larger than the 4 K blocks of k = 200"
    ):
        params.check(Problem({"m": 300, "n": 500, "k": 200}))
    params.replace(split_k=4).check(Problem({"m": 300, "n": 500, "k": 200}))


def test_cluster_wider_than_the_tile_grid():
    params = ScheduleParams.build({"tile": (128, 128, 64), "cluster": (1, 8)})
    with pytest.raises(ScheduleError, match=r"8 CTAs along n but the problem has only 4 tiles"):
        params.check(Problem({"m": 300, "n": 500, "k": 200}))


def test_instruction_k_must_match_the_input_type():
    params = ScheduleParams.build({"tile": (128, 128, 32)})
    with pytest.raises(ScheduleError, match=r"inputs of 4 bytes need wgmma k = 8"):
        params.check(Problem(BIG.extents, element_bytes=4))
    ScheduleParams.build({"tile": (128, 128, 32)}, element_bytes=4).check(
        Problem(BIG.extents, element_bytes=4)
    )


def test_raster_auto_walks_along_the_shorter_side():
    params = ScheduleParams(raster="auto")
    assert params.raster_for(tiles_m=4, tiles_n=10) == "m"
    assert params.raster_for(tiles_m=10, tiles_n=4) == "n"
    assert ScheduleParams(raster="n").raster_for(4, 10) == "n"


@pytest.mark.parametrize(
    ("slow", "fast", "group"), [(4, 3, 1), (4, 3, 2), (5, 7, 4), (8, 8, 8), (3, 5, 8)]
)
def test_swizzle_index_visits_every_tile_once(slow, fast, group):
    seen = [swizzle_index(t, slow, fast, group) for t in range(slow * fast)]
    assert sorted(seen) == list(itertools.product(range(slow), range(fast)))
    if group == 1:
        assert seen == [divmod(t, fast) for t in range(slow * fast)]
    # The first `min(group, slow) * fast` tiles stay inside the first band of the slow axis.
    first_band = seen[: min(group, slow) * fast]
    assert {s for s, _ in first_band} == set(range(min(group, slow)))


def test_problem_of_a_horizontal_fusion():
    f = mmcomp.Fusion("horizontal")
    a = f.input("a", (256, 512), "bf16")
    w1 = f.input("w1", (1024, 512), "bf16")
    w2 = f.input("w2", (1024, 512), "bf16")
    f.output(f.cast(f.silu(f.linear(a, w1)) * f.linear(a, w2), "bf16"))
    module = propagate(f)
    func = next(op for op in module.ops if op.name == "func.func")
    problem = problem_of(func)
    assert dict(problem.extents) == {"m": 256, "n": 1024, "k": 512}
    assert (problem.a_operands, problem.b_operands) == (1, 2)
    assert problem.element_bytes == 2
    assert problem.output_bytes == (2,)
