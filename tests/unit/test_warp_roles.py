"""The warp roles: `hopper.warp_specialize` (one region per role), `sched.params` and the
ring slots in `#hopper.warp_roles`.

Editing the stages or the register split in the partitioned kernel's `sched.params`
(before carry-ring-positions, whose ring positions' types hold the stages) changes the
kernel exactly as compiling with them from the start does; a ring position of other
stages than `sched.params` is refused; a warp
specialization that disagrees with the op's regions, or a `hopper.warp_roles` that
disagrees with the IR, is refused, naming what disagrees.
"""

from __future__ import annotations

import pytest
from cases import carry_positions, partitioned
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp

from mmcomp.analysis.warp_roles import ROLE_ATTR, ROLES_ATTR, warp_roles, warp_specialize_of
from mmcomp.dialects.hopper import WarpRolesAttr
from mmcomp.dialects.ptx.target import emit_ptx
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.ir.registry import context
from mmcomp.passes.convert_arith_to_ptx import ConvertArithToPtx
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.passes.convert_scf_to_ptx import ConvertScfToPtx
from mmcomp.passes.lower_schedule_to_hopper import lower_kernel
from mmcomp.passes.partition_warp_roles import partition


def edit_params(func: FuncOp, **changes: object) -> None:
    """Change the kernel's sched.params in place."""
    attr = func.attributes[PARAMS_ATTR]
    assert isinstance(attr, ScheduleParamsAttr)
    func.attributes[PARAMS_ATTR] = ScheduleParamsAttr(attr.data.replace(**changes))


def ptx_of(func: FuncOp) -> str:
    """The PTX text of a partitioned kernel."""
    module = lower_kernel(func)
    outer = ModuleOp([module])
    ConvertHopperToPtx().apply(context(), outer)
    ConvertScfToPtx().apply(context(), outer)
    ConvertArithToPtx().apply(context(), outer)
    return emit_ptx(outer)


def test_the_attribute_holds_only_the_slots():
    func = partitioned("linear_256")
    assert func.attributes[ROLES_ATTR] == WarpRolesAttr(2)
    params = func.attributes[PARAMS_ATTR]
    assert isinstance(params, ScheduleParamsAttr)
    roles = warp_roles(func)
    assert (roles.stages, roles.registers, roles.specialization) == (
        params.data.stages,
        params.data.registers,
        params.data.warp_specialization,
    )


@pytest.mark.parametrize(
    "name, changes",
    [
        ("linear_256", {"stages": 2}),
        ("linear_256", {"registers": (24, 240)}),
        ("pingpong_linear", {"stages": 3}),
        ("none_linear", {"stages": 5}),
    ],
)
def test_an_edit_of_the_partitioned_params_is_the_kernel_compiled_with_it(
    name: str, changes: dict[str, object]
):
    edited = partitioned(name, positions=False)
    edit_params(edited, **changes)
    carry_positions(edited)
    assert ptx_of(edited) == ptx_of(partitioned(name, **changes))
    roles, edited_roles = warp_roles(partitioned(name)), warp_roles(edited)
    for key, value in changes.items():
        assert getattr(edited_roles, key) == value != getattr(roles, key)


def test_the_stages_set_the_barriers():
    func = partitioned("linear_256", positions=False)
    edit_params(func, stages=2)
    carry_positions(func)
    text = ptx_of(func)
    assert text.count("mbarrier.init") == 4


def test_a_stages_edit_after_the_positions_are_carried_is_refused():
    func = partitioned("linear_256")
    edit_params(func, stages=2)
    with pytest.raises(
        ScheduleError,
        match=r"the producer region's ring position has 7 stages, but sched.params has "
        r"stages = 2 \(run carry-ring-positions after editing the stages\)",
    ):
        lower_kernel(func)


def test_a_specialization_edit_that_disagrees_with_the_regions_is_refused():
    func = partitioned("linear_256")
    edit_params(func, warp_specialization="none", registers=(168, 168))
    with pytest.raises(
        ScheduleError,
        match=r"hopper.warp_specialize is cooperative, but sched.params has "
        r"warp_specialization = none",
    ):
        lower_kernel(func)


def test_the_producer_region_is_the_slice_of_the_loads():
    func = partitioned("split_k_linear")
    roles_op = warp_specialize_of(func, "test")
    producer = [op.name for op in roles_op.producer.walk()]
    consumer = [op.name for op in roles_op.consumer.walk()]
    assert producer.count("sched.load_tile") == 2
    assert not {"sched.mma", "sched.epilogue", "sched.store_tile", "sched.arrive"} & set(producer)
    assert {"sched.mma", "sched.epilogue", "sched.arrive"} <= set(consumer)
    assert not any(ROLE_ATTR in op.attributes for op in func.walk())


def test_the_non_specialized_kernel_has_no_producer_region():
    func = partitioned("none_linear")
    roles_op = warp_specialize_of(func, "test")
    assert not roles_op.specialized and not roles_op.producer.blocks


def test_partitioning_twice_changes_nothing():
    func = partitioned("pingpong_linear")
    text = str(func)
    partition(func)
    assert str(func) == text


def test_a_dictionary_of_roles_is_refused():
    func = partitioned("linear_256")
    func.attributes[ROLES_ATTR] = DictionaryAttr({"stages": IntegerAttr(2, i64)})
    with pytest.raises(ScheduleError, match=r"must be a #hopper.warp_roles<slots = N>"):
        lower_kernel(func)


def test_slots_that_disagree_with_the_loads_are_refused():
    func = partitioned("linear_256")
    func.attributes[ROLES_ATTR] = WarpRolesAttr(3)
    with pytest.raises(ScheduleError, match=r"slots = 3, but the K loop loads 2 tiles"):
        lower_kernel(func)


@pytest.mark.parametrize("family", ["linear", "matmul", "horizontal"])
def test_a_64_row_cooperative_tile_splits_n_between_the_consumers(family: str) -> None:
    """A cooperative tile of one wgmma's 64 rows: each consumer takes 64 rows by half the
    columns (the whole A tile, its half of each B tile), run by the PTX value model on a
    K-major B (linear), an MN-major one (matmul: [K, N]) and two B operands (horizontal)
    against float64, outputs poisoned."""
    import numpy as np
    from cases import FAMILIES, TOLERANCE, inputs_for, relative_error
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.interp.reference import reference
    from mmcomp.pipeline import run_pipeline

    fusion = FAMILIES[family](100, 200, 320)
    params = {"tile": (64, 128, 64), "warp_specialization": "cooperative", "stages": 2}
    module, chosen, _ = run_pipeline(fusion.module, {**params, "epilogue": "registers"})
    assert chosen.column_split and chosen.warpgroup == (64, 64)
    assert chosen.consumer_warpgroups == 2
    text, plan = lower_to_ptx(module)
    inputs = inputs_for(fusion)
    want = [np.asarray(w) for w in reference(fusion, *inputs, accumulate=np.float64)]
    poisoned = [
        np.full(w.shape, np.nan, dtype=out.numpy_dtype)
        for w, out in zip(want, fusion.outputs, strict=True)
    ]
    got = run_values(text, plan, inputs, poisoned)
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        error = relative_error(g, w)
        assert error < TOLERANCE[fusion.outputs[index].dtype], f"output {index}: {error}"


def test_what_a_64_row_cooperative_tile_is_not_built_with() -> None:
    """Block-wise scales and quantization take their scales over whole tile rows, and a B
    operand contiguous along N is split in whole 64-wide boxes: the cuda back end refuses
    them, naming the tile (`check_column_split`); the CPU executor runs them."""
    from cases import matmul

    import mmcomp
    from mmcomp.dialects.sched import Problem, ScheduleParams, derive_instr, derive_warpgroup

    tile = (64, 128, 128)
    warpgroup = derive_warpgroup(tile, "cooperative")
    params = ScheduleParams(
        tile=tile, warpgroup=warpgroup, instr=derive_instr(warpgroup, 1), epilogue="registers"
    )
    problem = Problem({"m": 256, "n": 256, "k": 512}, element_bytes=1, block_scaled=True)
    with pytest.raises(ScheduleError, match="block-wise scales are not built on it"):
        params.check_column_split(problem)
    quantizing = Problem({"m": 256, "n": 256, "k": 512}, quantize=("row",))
    with pytest.raises(ScheduleError, match="a quantizing epilogue is not built on it"):
        params.check_column_split(quantizing)
    fusion = matmul(100, 200, 320)  # b [K, N]: contiguous along N
    keywords = {"tile": (64, 64, 64), "warp_specialization": "cooperative"}
    with pytest.raises(ScheduleError, match="each consumer's n must be a multiple of 64"):
        mmcomp.compile(fusion, **keywords)
    assert mmcomp.compile(fusion, backend="interp", **keywords).params.column_split  # pyright: ignore[reportAttributeAccessIssue]
