"""The `sched` dialect: which CTA computes which tile, in what order, over which K range.

Design (the passes and the executor that read it are described in
docs/schedule-passes.md):

* The schedule parameters live in ONE attribute, `#sched.params<...>` (ScheduleParamsAttr;
  `.data` is a frozen `ScheduleParams`, always valid). Before `tile-split` they sit on the
  `func.func` as the discardable attribute `sched.params` (PARAMS_ATTR). The attribute
  remembers which keys its text wrote (`ScheduleParams.written`): `choose-schedule` keeps
  those and lets the heuristic choose the others for the problem, as `mmcomp.compile` does
  with its keywords. Until then a key left out holds a problem-free fill (the defaults
  below, a 64-row tile under ping-pong, warpgroup / instr derived from the tile), which
  must be valid with the written keys, so `#sched.params<tile = 128x128x64>` and
  `#sched.params<warp_specialization = pingpong>` are valid. A partial attribute prints
  only its written keys; `sched.schedule` fixes every key. Printed in full:

      #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4,
                    cluster = 1x1, raster = m, swizzle = 8, strategy = persistent,
                    split_k = 1, warp_specialization = cooperative, registers = 40/232,
                    epilogue = smem>

* The iteration space and its transforms: one `sched.schedule params #sched.params<...>`
  op in the body of the scheduled `func.func` (its verifier checks the params against the
  function: shared memory for every A and B operand, split-K against the K blocks, ...).
  Its single block lists transforms on axis handles of type `!sched.axis<extent>`:

      sched.schedule params #sched.params<tile = 128x128x64, swizzle = 8> {
        %m, %n, %k = sched.space m = 300, n = 500, k = 200
        %mt, %mi = sched.split %m by 128 : !sched.axis<300>        // m = mt * 128 + mi
        %nt, %ni = sched.split %n by 128 : !sched.axis<500>
        %kt, %ki = sched.split %k by 64 : !sched.axis<200>
        %ks, %kb = sched.split %kt into 2 : !sched.axis<4>         // split-K: 2 slices
        %t = sched.swizzle %nt, %mt group 8 : !sched.axis<4>, !sched.axis<3>
        %it, %cta = sched.split %t by 12 : !sched.axis<12>          // persistent loop
        sched.parallelize %cta to block_x : !sched.axis<12>
        sched.parallelize %it to serial : !sched.axis<1>
        sched.reorder %it, %kb : !sched.axis<1>, !sched.axis<2>
      }

  - `sched.split %a by F`: a = outer * F + inner; outer has ceil(E / F) values, inner F.
    `sched.split %a into P`: P outer values, inner ceil(E / P), same formula (the last
    parts may be short or empty). Indices a >= E are out of bounds (boundary tiles).
  - `sched.merge %x, %y, ...`: t = (x * Y + y) * Z + ...; the LAST operand varies fastest.
  - `sched.swizzle %slow, %fast group G`: a merge of two axes in grouped order (CUTLASS and
    Triton grouped rasterization; D2's `merge raster R swizzle G`): the slow axis is cut
    into bands of G; bands are visited in order; inside a band the fast axis advances
    slowest and the slow axis fastest. G = 1 is `sched.merge %slow, %fast`. Inverse, with
    S, F the extents (`swizzle_index`):
      band = t / (G * F); r = t % (G * F); g = min(G, S - band * G)
      slow = band * G + r % g; fast = r / g
    Raster m (the M tile index fastest for swizzle 1) is `sched.swizzle %nt, %mt`; raster n
    is `sched.swizzle %mt, %nt`.
  - `sched.parallelize %a to block_x | block_y | block_z | warpgroup | instruction |
    serial`: binds an axis to a hardware index or a sequential loop. The persistent loop
    `for t = blockIdx.x; t < tiles; t += gridDim.x` is `split %t by grid`, inner on
    block_x, outer serial.
  - `sched.reorder %a, %b, ...`: the serial loop order, outermost first.
  Every op takes an optional `{...}` attribute dictionary before its `:` for pass-specific
  annotations (e.g. `{grid = 12 : i64}`).

* `materialize-schedule` lowers to scf / arith / memref / gpu plus these tile-level ops,
  which the CPU executor runs with numpy and the Hopper lowering maps to TMA / wgmma:

      %a = sched.load_tile %A[%i, %j] : memref<300x200xbf16> -> tensor<128x64xbf16>
      %z = sched.zero_tile : tensor<128x128xf32>
      %c = sched.mma %a [m, k], %b [n, k], %z [m, n]
             : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
      %o = sched.epilogue(%c, %bias) : (tensor<128x128xf32>, tensor<1x128xf32>)
             -> tensor<128x128xbf16> { ^bb0(...): fusion ops ...; sched.yield %r : ... }
      sched.store_tile %o, %C[%i, %j] : tensor<128x128xbf16>, memref<300x500xbf16>
      // split-K through an f32 workspace, reduced in slice order 0, 1, ..., S-1:
      sched.store_partial %c, %ws[%slice, %tile] : tensor<128x128xf32>, memref<2x12x128x128xf32>
      %old = sched.arrive %counters[%tile] : memref<12xi32> -> index
      %sum = sched.reduce_partials %ws[%tile] : memref<2x12x128x128xf32> -> tensor<128x128xf32>

  load_tile reads the box starting at the indices (one per memref dimension) and reads
  zeros out of bounds; store_tile writes the box clipped to the memref's bounds; mma adds
  the product over k to the f32 accumulator, tile axes named by roles as in `fusion.mma`
  (batch and absent axes have extent 1 in a tile).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntAttr,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Data,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp import hardware as hw
from mmcomp.dialects.fusion import (
    AxisRolesAttr,
    IterationSpaceAttr,
    dtype_name,
    parse_role_list,
    print_role_list,
)
from mmcomp.dialects.fusion import MmaOp as FusionMmaOp
from mmcomp.dialects.syntax import (
    parse_attributes_and_type,
    parse_keyword_attributes,
    print_attributes_and_region,
    print_attributes_and_types,
    with_attributes,
)
from mmcomp.errors import ScheduleError

PARAMS_ATTR = "sched.params"
"""Name of the discardable attribute that carries the params on a `func.func`."""

RASTERS = ("m", "n", "auto")
"""Raster orders: the tile index along M or N varies fastest, or the heuristic picks."""
STRATEGIES = ("one-tile-per-cta", "persistent")
"""Tiling strategies (stream-K is reserved for later)."""
WARP_SPECIALIZATIONS = ("none", "cooperative", "pingpong")
"""Warp specializations: none, two consumers sharing a tile, or two alternating tiles."""
EPILOGUES = ("registers", "smem")
"""Epilogue modes: store from registers, or stage in shared memory and store with TMA."""
BINDINGS = ("block_x", "block_y", "block_z", "warpgroup", "instruction", "serial")
"""What `sched.parallelize` binds an axis to."""
SWIZZLE_LIMIT = hw.SM_COUNT
"""Largest swizzle group: a wave of W CTAs in groups of G loads about G + W / G operand
tiles, at G = W (the SMs) as many as plain raster's 1 + W, so no wider group helps (below
it any G is taken, as Triton's GROUP_SIZE_M; CUTLASS rounds max_swizzle_size down to 1, 2,
4 or 8)."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


_TILE_CANDIDATES = tuple(
    sorted(
        ((m, n) for m in (256, 128, 64) for n in (256, 192, 128, 64) if m * n <= 128 * 256),
        key=lambda tile: (-tile[0] * tile[1], -tile[1]),
    )
)
"""CTA tiles (m, n) that a register-bound error suggests, largest first."""


def _align(size: int, alignment: int) -> int:
    return _ceil_div(size, alignment) * alignment


def _shape(dims: Sequence[int]) -> str:
    return "x".join(str(d) for d in dims)


# --------------------------------------------------------------------------------------
# The problem a schedule is checked against
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """What the parameters are checked against: extents, operand counts, element sizes."""

    extents: Mapping[str, int]
    """The iteration space, e.g. {"b0": 4, "m": 300, "n": 500, "k": 200}."""
    element_bytes: int = 2
    """Bytes per element of the A and B operands (2 for bf16 and f16)."""
    a_operands: int = 1
    """Distinct A tiles loaded per K block (1: a horizontal fusion shares A)."""
    b_operands: int = 1
    """Distinct B tiles loaded per K block (2 for a horizontal fusion)."""
    output_bytes: tuple[int, ...] = (2,)
    """Bytes per element of each fusion output (sizes the shared-memory epilogue)."""
    epilogue_tiles: int = 0
    """Full [M, N] tiles the epilogue holds besides the accumulator: [M, N] operands it
    reads, and outputs beyond the first (they raise its register pressure)."""
    contractions: int = 1
    """fusion.mma ops: one f32 accumulator tile each in every consumer thread."""
    tile_operands: int = 0
    """Epilogue operands with both an m and an n axis ([M, N]): a tile's worth each."""
    row_operands: int = 0
    """Epilogue operands with an n axis and no m axis (bias [N], rows [1, N])."""
    column_operands: int = 0
    """Epilogue operands with an m axis and no n axis (columns [M, 1])."""
    operand_shapes: tuple[tuple[int, ...], ...] = ()
    """Shapes of the mma operands (loaded by TMA), in the order they are first used."""
    row_divisions: int = 0
    """Epilogue divisions by a row value (n but no m axis, e.g. `y / bias`)."""

    @property
    def m(self) -> int:
        """Extent of the M axis (1 when absent)."""
        return self.extents.get("m", 1)

    @property
    def n(self) -> int:
        """Extent of the N axis (1 when absent)."""
        return self.extents.get("n", 1)

    @property
    def k(self) -> int:
        """Extent of the K axis (1 when absent)."""
        return self.extents.get("k", 1)

    @property
    def batch(self) -> int:
        """Product of the batch extents (1 when there are none)."""
        count = 1
        for name, extent in self.extents.items():
            if name.startswith("b"):
                count *= extent
        return count


# --------------------------------------------------------------------------------------
# The parameters
# --------------------------------------------------------------------------------------


REGISTER_BASE = 40
"""Consumer registers a kernel needs besides its tiles (addresses, indices, loop and
barrier state), measured with ptxas: see `ScheduleParams.consumer_registers`."""


def tile_rows(warp_specialization: str) -> int:
    """Rows of the CTA tile chosen when none is given: one wgmma's 64 under ping-pong (each
    consumer warpgroup takes a whole tile), else 128, split between two consumers."""
    return hw.WGMMA_M if warp_specialization == "pingpong" else 2 * hw.WGMMA_M


def derive_warpgroup(tile: tuple[int, int, int], warp_specialization: str) -> tuple[int, int]:
    """The warpgroup tile mmcomp uses for a CTA tile under a warp specialization."""
    tile_m, tile_n, _ = tile
    if warp_specialization == "pingpong":
        return (tile_m, tile_n)
    if tile_m >= 2 * hw.WGMMA_M and tile_m % (2 * hw.WGMMA_M) == 0:
        return (tile_m // 2, tile_n)
    return (tile_m, tile_n)


def derive_instr(warpgroup: tuple[int, int], element_bytes: int = 2) -> tuple[int, int, int]:
    """The wgmma shape (m, n, k) covering a warpgroup tile in as few instructions as fit."""
    n = min(warpgroup[1], hw.WGMMA_N_MAX)
    while n > hw.WGMMA_N_MIN and warpgroup[1] % n:
        n -= hw.WGMMA_N_STEP
    return (hw.WGMMA_M, max(n, hw.WGMMA_N_MIN), hw.wgmma_k(element_bytes))


@dataclass(frozen=True)
class ScheduleParams:
    """Every schedule parameter; the defaults are CUTLASS's for large bf16 GEMMs on Hopper."""

    tile: tuple[int, int, int] = (128, 256, 64)
    """CTA tile (m, n, k)."""
    warpgroup: tuple[int, int] = (64, 256)
    """Tile of one consumer warpgroup (m, n)."""
    instr: tuple[int, int, int] = (64, 256, 16)
    """wgmma instruction shape (m, n, k)."""
    stages: int = 4
    """Shared-memory pipeline stages."""
    cluster: tuple[int, int] = (1, 1)
    """Thread-block cluster shape (along m, along n)."""
    raster: str = "m"
    """Raster order: "m" (M tile index fastest), "n" or "auto"."""
    swizzle: int = 8
    """Swizzle group size of the grouped tile order (1: plain raster), 1 to SWIZZLE_LIMIT."""
    strategy: str = "persistent"
    """"one-tile-per-cta" or "persistent"."""
    split_k: int = 1
    """Number of K slices computed by different CTAs and reduced through an f32 workspace."""
    warp_specialization: str = "cooperative"
    """"none", "cooperative" (consumers share a tile) or "pingpong" (they alternate)."""
    registers: tuple[int, int] = (40, 232)
    """setmaxnreg counts (producer, consumer)."""
    epilogue: str = "smem"
    """"registers" or "smem" (staged in shared memory, stored with TMA)."""
    written: frozenset[str] | None = None
    """The keys fixed by `#sched.params<...>` text that left others out; None when every
    key is fixed. The other keys hold the fill of `ScheduleParams.build` until
    choose-schedule chooses them for the problem."""

    KEYS: ClassVar[tuple[str, ...]] = (
        "tile",
        "warpgroup",
        "instr",
        "stages",
        "cluster",
        "raster",
        "swizzle",
        "strategy",
        "split_k",
        "warp_specialization",
        "registers",
        "epilogue",
    )

    @property
    def consumer_warpgroups(self) -> int:
        """Consumer warpgroups per CTA (math warpgroups for "none")."""
        if self.warp_specialization == "pingpong":
            return 2
        return (self.tile[0] // self.warpgroup[0]) * (self.tile[1] // self.warpgroup[1])

    @property
    def threads(self) -> int:
        """Threads per CTA: the consumers plus one producer warpgroup when specialized."""
        producers = 0 if self.warp_specialization == "none" else 1
        return (self.consumer_warpgroups + producers) * hw.WARPGROUP_SIZE

    @property
    def accumulator_registers(self) -> int:
        """f32 accumulator registers per consumer thread."""
        return self.warpgroup[0] * self.warpgroup[1] // hw.WARPGROUP_SIZE

    def consumer_registers(self, problem: Problem) -> dict[str, int]:
        """Registers a consumer thread needs, by what holds them (an upper estimate).

        Per thread of a warpgroup tile wm x wn: each accumulator and each [M, N] epilogue
        operand tile wm * wn / 128 values, each row operand ([N], [1, N]) wn / 4, each
        column operand ([M, 1]) wm / 32, each division by a row value wn / 4 more (its
        reciprocals), with split-K and several contractions under the shared-memory
        epilogue or without specialization each accumulator once more (their partials are
        reduced together), and REGISTER_BASE besides. ptxas (13.0,
        sm_90a) on silu*mul, the horizontal fusion, bias rows and [M, 1] columns at 64 to
        256 wide tiles spilled where this sum passes the setmaxnreg count, and assembled
        without spills wherever it does not (docs/schedule.md).
        """
        tile = self.accumulator_registers
        wg_m, wg_n = self.warpgroup
        split = 0
        staged = self.epilogue == "smem" or self.warp_specialization == "none"
        if self.split_k > 1 and problem.contractions > 1 and staged:
            split = tile * problem.contractions
        return {
            "accumulators": tile * problem.contractions,
            "[M, N] operands": tile * problem.tile_operands,
            "rows": (problem.row_operands + problem.row_divisions) * wg_n // 4,
            "columns": problem.column_operands * wg_m // 32,
            "split-K reduction": split,
            "addresses and indices": REGISTER_BASE,
        }

    def fits_registers(self, problem: Problem, margin: int = 0) -> bool:
        """The consumer threads' registers hold what `consumer_registers` estimates, with
        `margin` registers to spare."""
        return sum(self.consumer_registers(problem).values()) + margin <= self.registers[1]

    def replace(self, **changes: object) -> ScheduleParams:
        """A copy with some fields changed (not validated)."""
        return dataclasses.replace(self, **changes)  # pyright: ignore[reportArgumentType]

    @property
    def written_keys(self) -> tuple[str, ...]:
        """The fixed keys, in KEYS order (all of them unless `written` says otherwise)."""
        if self.written is None:
            return self.KEYS
        return tuple(key for key in self.KEYS if key in self.written)

    def written_values(self) -> dict[str, object]:
        """The values of the fixed keys, by key."""
        return {key: getattr(self, key) for key in self.written_keys}

    def complete(self) -> ScheduleParams:
        """These values with every key fixed (the filled-in ones included)."""
        return self.replace(written=None)

    def raster_for(self, tiles_m: int, tiles_n: int) -> str:
        """The concrete raster order; "auto" walks along M when there are more N tiles."""
        if self.raster != "auto":
            return self.raster
        return "m" if tiles_n > tiles_m else "n"

    def validate(self) -> None:
        """Raise ScheduleError unless every value is in range on its own and with the others.

        Params that leave keys out (`written`) are valid when some tile completes them:
        choose-schedule chooses the tile for the problem, so the written registers need not
        fit the accumulators of the fill's 128x256 tile (`#sched.params<warp_specialization
        = none, registers = 168/168>` is valid: 128x128 fits)."""
        self._validate_written()
        self._validate_positive()
        self._validate_names()
        self._validate_counts()
        first: ScheduleError | None = None
        for candidate in self._completions():
            try:
                candidate._validate_shapes()
                candidate._validate_registers()
                return
            except ScheduleError as error:
                first = first or error
        assert first is not None
        raise first

    def _completions(self) -> list[ScheduleParams]:
        """These params, then (when the tile is not written) the same with each tile
        `mmcomp.heuristics.choose_tile` may choose in place of the fill (its rows for the
        warp specialization, 256, 128 or 64 wide; ping-pong's 128x128), warpgroup and
        instr derived again."""
        completions: list[ScheduleParams] = [self]
        if self.written is None or "tile" in self.written:
            return completions
        rows = tile_rows(self.warp_specialization)
        tiles = [(rows, n) for n in (256, 128, 64)]
        if self.warp_specialization == "pingpong":
            tiles.append((2 * hw.WGMMA_M, 128))
        for tile_m, tile_n in tiles:
            tile = (tile_m, tile_n, self.tile[2])
            warpgroup = self.warpgroup
            if "warpgroup" not in self.written:
                warpgroup = derive_warpgroup(tile, self.warp_specialization)
            instr = self.instr
            if "instr" not in self.written:
                i_m, i_n, _ = derive_instr(warpgroup)
                instr = (i_m, i_n, self.instr[2])
            completions.append(self.replace(tile=tile, warpgroup=warpgroup, instr=instr))
        return completions

    def _validate_written(self) -> None:
        if self.written is None:
            return
        unknown = sorted(self.written - set(self.KEYS))
        if unknown:
            raise ScheduleError(
                f"written keys {', '.join(unknown)} are not schedule parameters; expected "
                f"among {', '.join(self.KEYS)}"
            )
        filled = ScheduleParams.partial(self.written_values())
        for key in self.KEYS:
            if getattr(self, key) != getattr(filled, key):
                raise ScheduleError(
                    f"{key} is not written, so it must hold its fill {getattr(filled, key)}, "
                    f"found {getattr(self, key)}"
                )

    def _validate_positive(self) -> None:
        for key in ("tile", "warpgroup", "instr", "cluster", "registers"):
            value = getattr(self, key)
            if not all(isinstance(v, int) and v > 0 for v in value):
                raise ScheduleError(f"{key} {_shape(value)}: every extent must be positive")

    def _validate_names(self) -> None:
        choices = {
            "raster": RASTERS,
            "strategy": STRATEGIES,
            "warp_specialization": WARP_SPECIALIZATIONS,
            "epilogue": EPILOGUES,
        }
        for key, allowed in choices.items():
            value = getattr(self, key)
            if value not in allowed:
                expected = ", ".join(f'"{a}"' for a in allowed)
                raise ScheduleError(f'unknown {key} "{value}"; expected one of {expected}')

    def _validate_counts(self) -> None:
        if self.stages < 2:
            raise ScheduleError(
                f"stages = {self.stages}: the TMA/wgmma pipeline needs at least 2 stages"
            )
        if self.swizzle < 1:
            raise ScheduleError(f"swizzle = {self.swizzle}: the group size must be at least 1")
        if self.swizzle > SWIZZLE_LIMIT:
            raise ScheduleError(
                f"swizzle = {self.swizzle}: the group size must be at most {SWIZZLE_LIMIT}, the "
                f"SMs of one wave (a wider group loads as many tiles per wave as swizzle = 1)"
            )
        if self.split_k < 1:
            raise ScheduleError(f"split_k = {self.split_k}: must be at least 1")
        cluster_size = self.cluster[0] * self.cluster[1]
        if cluster_size > hw.MAX_CLUSTER_SIZE:
            raise ScheduleError(
                f"cluster {_shape(self.cluster)} has {cluster_size} CTAs; the portable "
                f"limit is {hw.MAX_CLUSTER_SIZE}"
            )

    def _validate_shapes(self) -> None:
        tile_m, tile_n, tile_k = self.tile
        wg_m, wg_n = self.warpgroup
        i_m, i_n, i_k = self.instr
        if i_m != hw.WGMMA_M:
            raise ScheduleError(f"instr m{i_m}n{i_n}k{i_k}: wgmma has m = {hw.WGMMA_M}")
        if not (hw.WGMMA_N_MIN <= i_n <= hw.WGMMA_N_MAX and i_n % hw.WGMMA_N_STEP == 0):
            raise ScheduleError(
                f"instr m{i_m}n{i_n}k{i_k}: wgmma n must be a multiple of {hw.WGMMA_N_STEP} "
                f"from {hw.WGMMA_N_MIN} to {hw.WGMMA_N_MAX}"
            )
        if i_k not in (8, 16, 32):
            raise ScheduleError(
                f"instr m{i_m}n{i_n}k{i_k}: wgmma k is 16 for 16-bit inputs (8 tf32, 32 fp8)"
            )
        for axis, extent in (("m", tile_m), ("n", tile_n), ("k", tile_k)):
            if extent > hw.TMA_MAX_BOX:
                raise ScheduleError(
                    f"tile {_shape(self.tile)}: {axis} = {extent} exceeds the TMA box "
                    f"limit of {hw.TMA_MAX_BOX}"
                )
        if wg_m % i_m or wg_n % i_n or tile_k % i_k:
            raise ScheduleError(
                f"tile {_shape(self.tile)} with warpgroup tile {_shape(self.warpgroup)} is "
                f"not divisible by the instruction shape m{i_m}n{i_n}k{i_k}"
            )
        if tile_m % wg_m or tile_n % wg_n:
            raise ScheduleError(
                f"tile {_shape(self.tile)} is not divisible by the warpgroup tile "
                f"{_shape(self.warpgroup)}"
            )
        if self.warp_specialization == "pingpong" and (wg_m, wg_n) != (tile_m, tile_n):
            raise ScheduleError(
                f"pingpong gives each consumer warpgroup a whole tile, so the warpgroup "
                f"tile {_shape(self.warpgroup)} must equal the CTA tile {tile_m}x{tile_n}"
            )
        consumers = self.consumer_warpgroups
        if consumers > hw.MAX_CONSUMER_WARPGROUPS:
            raise ScheduleError(
                f"tile {_shape(self.tile)} with warpgroup tile {_shape(self.warpgroup)} needs "
                f"{consumers} consumer warpgroups; the kernels have at most "
                f"{hw.MAX_CONSUMER_WARPGROUPS}"
            )

    def _validate_registers(self) -> None:
        for role, count in zip(("producer", "consumer"), self.registers, strict=True):
            if count % hw.SETMAXNREG_STEP or not (hw.SETMAXNREG_MIN <= count <= hw.SETMAXNREG_MAX):
                raise ScheduleError(
                    f"registers {self.registers[0]}/{self.registers[1]}: the {role} count "
                    f"{count} must be a multiple of {hw.SETMAXNREG_STEP} from "
                    f"{hw.SETMAXNREG_MIN} to {hw.SETMAXNREG_MAX} (setmaxnreg)"
                )
        producer, consumer = self.registers
        consumers = self.consumer_warpgroups
        if self.warp_specialization == "none":
            total = consumers * consumer * hw.WARPGROUP_SIZE
            what = f"({consumers} x {consumer})"
        else:
            total = (producer + consumers * consumer) * hw.WARPGROUP_SIZE
            what = f"({producer} + {consumers} x {consumer})"
        if total > hw.REGISTERS_PER_SM:
            raise ScheduleError(
                f"registers {producer}/{consumer}: {what} registers x {hw.WARPGROUP_SIZE} "
                f"threads = {total}, over the {hw.REGISTERS_PER_SM} registers of an SM"
            )
        available = consumer - hw.ACCUMULATOR_HEADROOM
        if self.accumulator_registers > available:
            hint = " (pingpong: use cooperative or a smaller tile)" * (
                self.warp_specialization == "pingpong"
            )
            raise ScheduleError(
                f"warpgroup tile {_shape(self.warpgroup)} needs {self.accumulator_registers} "
                f"f32 accumulator registers per thread; {consumer} consumer registers leave "
                f"{available} after {hw.ACCUMULATOR_HEADROOM} for addresses and the "
                f"epilogue{hint}"
            )

    def smem_bytes(self, problem: Problem) -> dict[str, int]:
        """Shared memory each part of the kernel needs (bytes): a, b, epilogue, barriers."""
        tile_m, tile_n, tile_k = self.tile
        eb = problem.element_bytes
        a_tile = _align(tile_m * tile_k * eb, hw.SMEM_ALIGNMENT)
        b_tile = _align(tile_n * tile_k * eb, hw.SMEM_ALIGNMENT)
        epilogue = 0
        if self.epilogue == "smem":
            boxes = hw.MAX_CONSUMER_WARPGROUPS * hw.EPILOGUE_BUFFERS
            epilogue = boxes * _align(hw.EPILOGUE_BOX_BYTES, hw.SMEM_ALIGNMENT)
        return {
            "a": self.stages * problem.a_operands * a_tile,
            "b": self.stages * problem.b_operands * b_tile,
            "epilogue": epilogue,
            "barriers": 2 * self.stages * hw.MBARRIER_BYTES,
        }

    def check(self, problem: Problem) -> None:
        """Raise ScheduleError unless the params are valid and fit the problem."""
        check_extents(problem)
        self._validate_positive()
        self._validate_names()
        self._validate_counts()
        self._validate_shapes()
        expected_k = hw.wgmma_k(problem.element_bytes)
        if self.instr[2] != expected_k:
            raise ScheduleError(
                f"instr m{self.instr[0]}n{self.instr[1]}k{self.instr[2]}: inputs of "
                f"{problem.element_bytes} bytes need wgmma k = {expected_k}"
            )
        parts = self.smem_bytes(problem)
        total = sum(parts.values())
        if total > hw.MAX_DYNAMIC_SMEM_PER_BLOCK:
            detail = ", ".join(f"{name} {size}" for name, size in parts.items() if size)
            operands = ""
            if problem.a_operands + problem.b_operands > 2:
                operands = f" for {problem.a_operands} A and {problem.b_operands} B operand tiles"
            raise ScheduleError(
                f"tile {_shape(self.tile)} with {self.stages} stages{operands} needs {total} "
                f"bytes of shared memory ({detail}); the device allows "
                f"{hw.MAX_DYNAMIC_SMEM_PER_BLOCK}"
            )
        self._validate_registers()
        self._check_consumer_registers(problem)
        k_blocks = _ceil_div(problem.k, self.tile[2])
        if self.split_k > k_blocks:
            raise ScheduleError(
                f"split_k = {self.split_k} is larger than the {k_blocks} K blocks of "
                f"k = {problem.k} with tile k = {self.tile[2]}"
            )
        tiles_m = _ceil_div(problem.m, self.tile[0])
        tiles_n = _ceil_div(problem.n, self.tile[1])
        work = problem.batch * tiles_m * tiles_n * self.split_k
        if work > hw.MAX_WORK_UNITS:
            raise ScheduleError(
                f"tile {_shape(self.tile)} with split_k = {self.split_k} gives {work} work "
                f"units (batch {problem.batch} x {tiles_m} M tiles x {tiles_n} N tiles x "
                f"{self.split_k} slices); the kernel's {hw.INDEX_BITS}-bit tile loop counts "
                f"at most {hw.MAX_WORK_UNITS}"
            )
        for axis, size, tiles in (("m", self.cluster[0], tiles_m), ("n", self.cluster[1], tiles_n)):
            if size > tiles:
                raise ScheduleError(
                    f"cluster {_shape(self.cluster)}: {size} CTAs along {axis} but the problem "
                    f"has only {tiles} tiles along {axis}"
                )

    def _check_consumer_registers(self, problem: Problem) -> None:
        if self.fits_registers(problem):
            return
        needed = self.consumer_registers(problem)
        detail = ", ".join(f"{what} {count}" for what, count in needed.items() if count)
        fitting = [
            f"({tile[0]}, {tile[1]}, {self.tile[2]})"
            for tile in _TILE_CANDIDATES
            if self._tile_fits_registers(tile, problem)
        ]
        advice = (
            f"tiles that fit: tile={' or '.join(fitting[:3])}"
            if fitting
            else "no tile fits; use fewer epilogue operands"
        )
        if needed["split-K reduction"] and self.replace(split_k=1).fits_registers(problem):
            advice += ", or split_k = 1 with this tile"
            if self.warp_specialization != "none":
                advice += " (or epilogue = registers)"
        raise ScheduleError(
            f"tile {_shape(self.tile)} under {self.warp_specialization}: a consumer thread "
            f"needs about {sum(needed.values())} registers ({detail}), more than its "
            f"{self.registers[1]} (registers {self.registers[0]}/{self.registers[1]}), so "
            f"ptxas would spill; {advice}"
        )

    def _tile_fits_registers(self, tile: tuple[int, int], problem: Problem) -> bool:
        """Whether the CTA tile (m, n), in place of this one, fits the consumer registers."""
        if self.warp_specialization != "pingpong" and tile[0] < 2 * hw.WGMMA_M:
            return False
        full = (tile[0], tile[1], self.tile[2])
        candidate = self.replace(
            tile=full, warpgroup=derive_warpgroup(full, self.warp_specialization)
        )
        if candidate.accumulator_registers > self.registers[1] - hw.ACCUMULATOR_HEADROOM:
            return False
        return candidate.fits_registers(problem)

    def format(self) -> str:
        """The text inside `#sched.params<...>`: the fixed keys, in KEYS order."""
        i_m, i_n, i_k = self.instr
        text = {
            "tile": _shape(self.tile),
            "warpgroup": _shape(self.warpgroup),
            "instr": f"m{i_m}n{i_n}k{i_k}",
            "cluster": _shape(self.cluster),
            "registers": f"{self.registers[0]}/{self.registers[1]}",
        }
        return ", ".join(
            f"{key} = {text.get(key, getattr(self, key))}" for key in self.written_keys
        )

    @staticmethod
    def build(values: Mapping[str, object], element_bytes: int = 2) -> ScheduleParams:
        """Params with every key fixed: `values`, and for each key left out its default,
        except that a tile left out has `tile_rows` rows and warpgroup and instr are
        derived from the tile."""
        unknown = [key for key in values if key not in ScheduleParams.KEYS]
        if unknown:
            raise ScheduleError(
                f"unknown schedule parameter {unknown[0]!r}; expected one of "
                + ", ".join(ScheduleParams.KEYS)
            )
        params = ScheduleParams().replace(**values)
        if "tile" not in values:
            _, tile_n, tile_k = params.tile
            params = params.replace(tile=(tile_rows(params.warp_specialization), tile_n, tile_k))
        if "warpgroup" not in values:
            params = params.replace(
                warpgroup=derive_warpgroup(params.tile, params.warp_specialization)
            )
        if "instr" not in values:
            params = params.replace(instr=derive_instr(params.warpgroup, element_bytes))
        return params

    @staticmethod
    def partial(values: Mapping[str, object]) -> ScheduleParams:
        """Params that fix only the keys of `values`, as `#sched.params<...>` text does; the
        others hold the fill of `build` (16-bit inputs) until choose-schedule chooses them."""
        params = ScheduleParams.build(values)
        if set(values) == set(ScheduleParams.KEYS):
            return params
        return params.replace(written=frozenset(values))


# --------------------------------------------------------------------------------------
# Attributes and types
# --------------------------------------------------------------------------------------

_INSTR = re.compile(r"m(\d+)n(\d+)k(\d+)")


def _parse_dims(parser: AttrParser, key: str, count: int) -> tuple[int, ...]:
    pos = parser.pos
    dims = parser.parse_dimension_list()
    if len(dims) != count or any(d < 0 for d in dims):
        parser.raise_error(
            f"{key}: expected {count} extents separated by 'x', found {_shape(dims) or 'none'}",
            pos,
            parser.pos,
        )
    return tuple(dims)


def _parse_name(parser: AttrParser) -> str:
    """A bare identifier, possibly with '-' inside (`one-tile-per-cta`)."""
    words = [parser.parse_identifier()]
    while parser.parse_optional_punctuation("-") is not None:
        words.append(parser.parse_identifier())
    return "-".join(words)


def _parse_value(parser: AttrParser, key: str) -> object:
    if key in ("tile",):
        return _parse_dims(parser, key, 3)
    if key in ("warpgroup", "cluster"):
        return _parse_dims(parser, key, 2)
    if key == "instr":
        pos = parser.pos
        text = parser.parse_identifier()
        match = _INSTR.fullmatch(text)
        if match is None:
            parser.raise_error(
                f"instr: expected a wgmma shape such as m64n256k16, found {text}", pos
            )
        assert match is not None
        return tuple(int(g) for g in match.groups())
    if key == "registers":
        producer = parser.parse_integer(allow_negative=False, allow_boolean=False)
        parser.parse_punctuation("/")
        consumer = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return (producer, consumer)
    if key in ("stages", "swizzle", "split_k"):
        return parser.parse_integer(allow_boolean=False)
    return _parse_name(parser)


@irdl_attr_definition
class ScheduleParamsAttr(Data[ScheduleParams]):
    """The schedule parameters, `#sched.params<tile = 128x256x64, ...>`; always valid.

    Parsed from text that leaves keys out, the params remember the keys written
    (`ScheduleParams.written`) and print only those; the keys left out hold the fill of
    `ScheduleParams.build`. The written keys must be valid with the fill, or (with the
    tile left out) with a tile that choose-schedule may choose instead.
    """

    name = "sched.params"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> ScheduleParams:
        values: dict[str, object] = {}
        start = parser.pos
        parser.parse_punctuation("<")
        while parser.parse_optional_punctuation(">") is None:
            if values:
                parser.parse_punctuation(",")
            pos = parser.pos
            key = parser.parse_identifier()
            if key not in ScheduleParams.KEYS:
                parser.raise_error(
                    f"unknown schedule parameter '{key}'; expected one of "
                    + ", ".join(ScheduleParams.KEYS),
                    pos,
                    parser.pos,
                )
            if key in values:
                parser.raise_error(f"schedule parameter '{key}' given twice", pos)
            parser.parse_punctuation("=")
            values[key] = _parse_value(parser, key)
        try:
            params = ScheduleParams.partial(values)
            params.validate()
        except ScheduleError as error:
            parser.raise_error(str(error), start, parser.pos)
        return params

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.format()}>")

    def __post_init__(self) -> None:
        if not isinstance(self.data, ScheduleParams):
            raise VerifyException(f"#sched.params holds ScheduleParams, not {self.data!r}")
        try:
            self.data.validate()
        except ScheduleError as error:
            raise VerifyException(f"#sched.params: {error}") from error
        super().__post_init__()

    @property
    def params(self) -> ScheduleParams:
        """The parameters."""
        return self.data


@irdl_attr_definition
class AxisType(ParametrizedAttribute, TypeAttribute):
    """A handle on one axis of the iteration space or of a transform's result."""

    name = "sched.axis"

    extent: IntAttr
    """How many values the axis takes."""

    def __init__(self, extent: int | IntAttr):
        super().__init__(IntAttr(extent) if isinstance(extent, int) else extent)

    def verify(self) -> None:
        if self.extent.data < 1:
            raise VerifyException(f"!sched.axis extent must be positive, found {self.extent.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            extent = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [IntAttr(extent)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.extent.data}>")


def _extent(value: SSAValue) -> int:
    typ = value.type
    if not isinstance(typ, AxisType):
        raise VerifyException(f"expected a !sched.axis, found {typ}")
    return typ.extent.data


# --------------------------------------------------------------------------------------
# Schedule ops: the iteration space and its transforms
# --------------------------------------------------------------------------------------


def _print_transform(printer: Printer, op: Operation, words: str = "") -> None:
    """Print a transform: ` %a, %b WORDS {attrs} : !sched.axis<A>, !sched.axis<B>`."""
    printer.print_string(" ")
    printer.print_list(op.operands, printer.print_operand)
    printer.print_string(words)
    print_attributes_and_types(printer, op, op.operand_types)


@irdl_op_definition
class ScheduleOp(IRDLOperation):
    """The schedule of the enclosing `func.func`: params, iteration space, transforms."""

    name = "sched.schedule"

    params = prop_def(ScheduleParamsAttr)
    """The schedule parameters."""
    body = region_def("single_block")
    """The iteration space and the transforms, in order."""

    traits = traits_def(NoTerminator())

    def __init__(self, params: ScheduleParams | ScheduleParamsAttr, body: Region | None = None):
        """A schedule with these params, every key fixed (keys left out of a partial
        `#sched.params` keep their fill)."""
        if isinstance(params, ScheduleParamsAttr):
            params = params.data
        params = ScheduleParamsAttr(params.complete())
        super().__init__(
            properties={"params": params},
            regions=[body if body is not None else Region(Block())],
        )

    @property
    def space(self) -> SpaceOp | None:
        """The `sched.space` op of the body, if any."""
        for op in self.body.block.ops:
            if isinstance(op, SpaceOp):
                return op
        return None

    def problem(self) -> Problem | None:
        """The problem the params are checked against (None without a `sched.space`)."""
        space = self.space
        if space is None:
            return None
        parent = self.parent_op()
        if parent is not None and parent.name == "func.func":
            return dataclasses.replace(problem_of(parent), extents=space.extents)
        return Problem(space.extents)

    def verify_(self) -> None:
        spaces = [op for op in self.body.block.ops if isinstance(op, SpaceOp)]
        if len(spaces) > 1:
            raise VerifyException("sched.schedule holds more than one sched.space")
        problem = self.problem()
        if problem is None:
            return
        try:
            self.params.data.check(problem)
        except ScheduleError as error:
            raise VerifyException(f"sched.schedule: {error}") from error

    @classmethod
    def parse(cls, parser: Parser) -> ScheduleOp:
        parser.parse_keyword("params")
        pos = parser.pos
        params = parser.parse_attribute()
        if not isinstance(params, ScheduleParamsAttr):
            parser.raise_error(f"expected #sched.params<...>, found {params}", pos)
        attrs = parse_keyword_attributes(parser)
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        return with_attributes(cls(params, body), attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" params ")
        printer.print_attribute(self.params)
        print_attributes_and_region(printer, self, self.body, print_entry_block_args=False)


@irdl_op_definition
class SpaceOp(IRDLOperation):
    """The kernel's iteration space: one axis handle per axis, batch first, then m, n, k."""

    name = "sched.space"

    names = prop_def(ArrayAttr[StringAttr])
    """The axis names (b0, b1, ..., m, n, k)."""
    axes = var_result_def(AxisType)
    """One handle per axis."""

    def __init__(self, extents: Mapping[str, int]):
        super().__init__(
            properties={"names": ArrayAttr([StringAttr(name) for name in extents])},
            result_types=[[AxisType(extent) for extent in extents.values()]],
        )
        for result, name in zip(self.axes, extents, strict=True):
            result.name_hint = name

    @property
    def extents(self) -> dict[str, int]:
        """Axis name -> extent, in order."""
        return {name.data: _extent(axis) for name, axis in zip(self.names, self.axes, strict=True)}

    def axis(self, name: str) -> SSAValue:
        """The handle of the axis called `name`."""
        for axis_name, axis in zip(self.names, self.axes, strict=True):
            if axis_name.data == name:
                return axis
        raise KeyError(f"sched.space has no axis {name!r}")

    def verify_(self) -> None:
        if len(self.names) != len(self.axes):
            raise VerifyException(
                f"sched.space names {len(self.names)} axes but has {len(self.axes)} results"
            )
        seen: set[str] = set()
        for name in self.names:
            if not re.fullmatch(r"b\d+|m|n|k", name.data):
                raise VerifyException(
                    f"sched.space axis '{name.data}': expected b0, b1, ..., m, n or k"
                )
            if name.data in seen:
                raise VerifyException(f"sched.space axis '{name.data}' appears twice")
            seen.add(name.data)

    @classmethod
    def parse(cls, parser: Parser) -> SpaceOp:
        def entry() -> tuple[str, int]:
            name = parser.parse_identifier(context_msg=" as an axis name")
            parser.parse_punctuation("=")
            return name, parser.parse_integer(allow_negative=False, allow_boolean=False)

        entries = parser.parse_comma_separated_list(parser.Delimiter.NONE, entry)
        return with_attributes(cls(dict(entries)), parser.parse_optional_attr_dict())

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + ", ".join(f"{k} = {v}" for k, v in self.extents.items()))
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class SplitOp(IRDLOperation):
    """Split an axis: a = outer * inner_extent + inner; a >= extent is out of bounds."""

    name = "sched.split"

    axis = operand_def(AxisType)
    """The axis split."""
    factor = prop_def(IntAttr)
    """Extent of the inner axis (`by F`), or of the outer axis (`into P`, with `parts`)."""
    parts = opt_prop_def(UnitAttr)
    """Present for `into P`: P outer parts of ceil(extent / P) (the last may be short)."""
    outer = result_def(AxisType)
    """The outer axis."""
    inner = result_def(AxisType)
    """The inner axis."""

    def __init__(self, axis: SSAValue, factor: int, parts: bool = False):
        outer, inner = _split_extents(_extent(axis), factor, parts)
        super().__init__(
            operands=[axis],
            properties={"factor": IntAttr(factor)} | ({"parts": UnitAttr()} if parts else {}),
            result_types=[AxisType(outer), AxisType(inner)],
        )

    def verify_(self) -> None:
        factor = self.factor.data
        if factor < 1:
            raise VerifyException(f"sched.split factor must be positive, found {factor}")
        extent = _extent(self.axis)
        how = "into" if self.parts is not None else "by"
        expected = _split_extents(extent, factor, self.parts is not None)
        found = (_extent(self.outer), _extent(self.inner))
        if found != expected:
            raise VerifyException(
                f"sched.split of an axis of {extent} {how} {factor}: expected outer x inner "
                f"{expected[0]} x {expected[1]}, found {found[0]} x {found[1]}"
            )
        if self.parts is not None and factor > extent:
            raise VerifyException(
                f"sched.split into {factor} parts of an axis of only {extent} values"
            )

    @classmethod
    def parse(cls, parser: Parser) -> SplitOp:
        operand = parser.parse_unresolved_operand()
        parts = parser.parse_keyword_in(("by", "into")) == "into"
        factor = parser.parse_integer(allow_negative=False, allow_boolean=False)
        attrs, typ = parse_attributes_and_type(parser)
        if factor < 1:
            parser.raise_error(f"sched.split factor must be positive, found {factor}")
        return with_attributes(cls(parser.resolve_operand(operand, typ), factor, parts), attrs)

    def print(self, printer: Printer) -> None:
        how = "into" if self.parts is not None else "by"
        _print_transform(printer, self, f" {how} {self.factor.data}")


def _split_extents(extent: int, factor: int, parts: bool) -> tuple[int, int]:
    """(outer, inner) extents of `sched.split` by or into `factor`."""
    factor = max(factor, 1)
    if parts:
        return factor, _ceil_div(extent, factor)
    return _ceil_div(extent, factor), factor


@irdl_op_definition
class MergeOp(IRDLOperation):
    """Merge axes into one: t = (x * Y + y) * Z + z; the last axis varies fastest."""

    name = "sched.merge"

    axes = var_operand_def(AxisType)
    """The merged axes, slowest first."""
    result = result_def(AxisType)
    """The product of the extents."""

    def __init__(self, axes: Sequence[SSAValue]):
        extent = 1
        for axis in axes:
            extent *= _extent(axis)
        super().__init__(operands=[axes], result_types=[AxisType(extent)])

    def verify_(self) -> None:
        if not self.axes:
            raise VerifyException("sched.merge needs at least one axis")
        extent = 1
        for axis in self.axes:
            extent *= _extent(axis)
        if _extent(self.result) != extent:
            raise VerifyException(
                f"sched.merge result extent {_extent(self.result)} is not the product "
                f"{extent} of its axes"
            )

    @classmethod
    def parse(cls, parser: Parser) -> MergeOp:
        axes, attrs = _parse_axis_list(parser)
        return with_attributes(cls(axes), attrs)

    def print(self, printer: Printer) -> None:
        _print_transform(printer, self)


@irdl_op_definition
class SwizzleOp(IRDLOperation):
    """Merge two tile axes in grouped order: bands of `group` along the slow axis."""

    name = "sched.swizzle"

    slow = operand_def(AxisType)
    """The axis cut into bands (fastest inside a band)."""
    fast = operand_def(AxisType)
    """The axis walked inside each band."""
    group = prop_def(IntAttr)
    """Band width (the swizzle parameter); 1 is a plain merge."""
    result = result_def(AxisType)
    """The linear tile index."""

    def __init__(self, slow: SSAValue, fast: SSAValue, group: int):
        super().__init__(
            operands=[slow, fast],
            properties={"group": IntAttr(group)},
            result_types=[AxisType(_extent(slow) * _extent(fast))],
        )

    def verify_(self) -> None:
        if self.group.data < 1:
            raise VerifyException(
                f"sched.swizzle group must be at least 1, found {self.group.data}"
            )
        extent = _extent(self.slow) * _extent(self.fast)
        if _extent(self.result) != extent:
            raise VerifyException(
                f"sched.swizzle result extent {_extent(self.result)} is not {extent}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> SwizzleOp:
        unresolved = _parse_axis_operands(parser)
        if len(unresolved) != 2:
            parser.raise_error(f"sched.swizzle takes two axes, found {len(unresolved)}")
        parser.parse_keyword("group")
        group = parser.parse_integer(allow_negative=False, allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        slow, fast = _resolve_axes(parser, unresolved)
        return with_attributes(cls(slow, fast, group), attrs)

    def print(self, printer: Printer) -> None:
        _print_transform(printer, self, f" group {self.group.data}")


def swizzle_index(t: int, slow_extent: int, fast_extent: int, group: int) -> tuple[int, int]:
    """The (slow, fast) indices that `sched.swizzle ... group G` maps linear index t to."""
    band_size = group * fast_extent
    band, rest = divmod(t, band_size)
    width = min(group, slow_extent - band * group)
    return band * group + rest % width, rest // width


def _parse_axis_operands(parser: Parser) -> list[UnresolvedOperand]:
    """Parse the axis operands of a transform: `%a, %b, ...`."""
    return parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)


def _parse_axis_list(parser: Parser) -> tuple[list[SSAValue], dict[str, Attribute]]:
    """Parse `%a, %b, ... {attrs} : !sched.axis<A>, ...` (merge and reorder)."""
    unresolved = _parse_axis_operands(parser)
    attrs = parser.parse_optional_attr_dict()
    return _resolve_axes(parser, unresolved), attrs


def _resolve_axes(parser: Parser, unresolved: Sequence[UnresolvedOperand]) -> list[SSAValue]:
    """Parse `: type, type, ...` and resolve the axis operands with them."""
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    if len(types) != len(unresolved):
        parser.raise_error(f"expected {len(unresolved)} axis types, found {len(types)}")
    return list(parser.resolve_operands(unresolved, types, parser.pos))


@irdl_op_definition
class ReorderOp(IRDLOperation):
    """The order of the serial loops over these axes, outermost first."""

    name = "sched.reorder"

    axes = var_operand_def(AxisType)
    """The axes, outermost first."""

    def __init__(self, axes: Sequence[SSAValue]):
        super().__init__(operands=[axes])

    def verify_(self) -> None:
        if len(set(self.axes)) != len(self.axes):
            raise VerifyException("sched.reorder lists an axis twice")

    @classmethod
    def parse(cls, parser: Parser) -> ReorderOp:
        axes, attrs = _parse_axis_list(parser)
        return with_attributes(cls(axes), attrs)

    def print(self, printer: Printer) -> None:
        _print_transform(printer, self)


@irdl_op_definition
class ParallelizeOp(IRDLOperation):
    """Bind an axis to blockIdx.x/y/z, a warpgroup, one instruction, or a serial loop."""

    name = "sched.parallelize"

    axis = operand_def(AxisType)
    """The axis bound."""
    to = prop_def(StringAttr)
    """One of BINDINGS."""

    def __init__(self, axis: SSAValue, to: str):
        super().__init__(operands=[axis], properties={"to": StringAttr(to)})

    def verify_(self) -> None:
        if self.to.data not in BINDINGS:
            raise VerifyException(
                f"sched.parallelize to '{self.to.data}': expected one of {', '.join(BINDINGS)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ParallelizeOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        pos = parser.pos
        to = parser.parse_identifier(context_msg=" as a binding")
        if to not in BINDINGS:
            parser.raise_error(
                f"sched.parallelize to '{to}': expected one of {', '.join(BINDINGS)}",
                pos,
                parser.pos,
            )
        attrs, typ = parse_attributes_and_type(parser)
        return with_attributes(cls(parser.resolve_operand(operand, typ), to), attrs)

    def print(self, printer: Printer) -> None:
        _print_transform(printer, self, f" to {self.to.data}")


# --------------------------------------------------------------------------------------
# Tile-level ops (after materialize-schedule)
# --------------------------------------------------------------------------------------


def _check_box(op: str, memref: Attribute, tile: Attribute, indices: int) -> None:
    """Ranks and element types of a tile and the memref box it moves from or to agree."""
    assert isinstance(memref, MemRefType) and isinstance(tile, TensorType)
    memref_rank, tile_rank = memref.get_num_dims(), tile.get_num_dims()
    if memref_rank != tile_rank or indices != memref_rank:
        raise VerifyException(
            f"{op}: memref {memref} has rank {memref_rank}, tile {tile} rank {tile_rank}, "
            f"with {indices} indices; all three must agree"
        )
    if memref.element_type != tile.element_type:
        raise VerifyException(
            f"{op}: tile element type {tile.element_type} differs from the memref's "
            f"{memref.element_type}"
        )


@irdl_op_definition
class LoadTileOp(IRDLOperation):
    """Load the box at `indices` of a memref as a tile; out-of-bounds elements read zero."""

    name = "sched.load_tile"

    source = operand_def(MemRefType)
    """The operand in global memory."""
    indices = var_operand_def(IndexType)
    """The box's first element, one index per dimension."""
    result = result_def(TensorType)
    """The tile."""

    assembly_format = "$source `[` $indices `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue], tile_type: TensorType):
        super().__init__(operands=[source, indices], result_types=[tile_type])

    def verify_(self) -> None:
        _check_box("sched.load_tile", self.source.type, self.result.type, len(self.indices))


@irdl_op_definition
class StoreTileOp(IRDLOperation):
    """Store a tile to the box at `indices` of a memref, clipped to the memref's bounds."""

    name = "sched.store_tile"

    value = operand_def(TensorType)
    """The tile."""
    dest = operand_def(MemRefType)
    """The output in global memory."""
    indices = var_operand_def(IndexType)
    """The box's first element, one index per dimension."""

    assembly_format = "$value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, indices])

    def verify_(self) -> None:
        _check_box("sched.store_tile", self.dest.type, self.value.type, len(self.indices))


@irdl_op_definition
class ZeroTileOp(IRDLOperation):
    """A tile of zeros (the initial accumulator)."""

    name = "sched.zero_tile"

    result = result_def(TensorType)
    """The tile."""

    assembly_format = "attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, tile_type: TensorType):
        super().__init__(result_types=[tile_type])


@irdl_op_definition
class MmaOp(IRDLOperation):
    """acc + the contraction of tiles a and b over k, axes named by roles, in f32."""

    name = "sched.mma"

    a = operand_def(TensorType)
    """The A tile."""
    b = operand_def(TensorType)
    """The B tile."""
    acc = operand_def(TensorType)
    """The f32 accumulator tile."""
    a_roles = prop_def(AxisRolesAttr)
    """Role of each axis of a (as in `fusion.mma`); absent and batch axes have extent 1."""
    b_roles = prop_def(AxisRolesAttr)
    """Role of each axis of b."""
    acc_roles = prop_def(AxisRolesAttr)
    """Role of each axis of the accumulator."""
    result = result_def(TensorType)
    """The new accumulator."""

    traits = traits_def(Pure())

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        acc: SSAValue,
        a_roles: Sequence[str] | AxisRolesAttr,
        b_roles: Sequence[str] | AxisRolesAttr,
        acc_roles: Sequence[str] | AxisRolesAttr,
    ):
        def roles(value: Sequence[str] | AxisRolesAttr) -> AxisRolesAttr:
            return value if isinstance(value, AxisRolesAttr) else AxisRolesAttr(value)

        super().__init__(
            operands=[a, b, acc],
            properties={
                "a_roles": roles(a_roles),
                "b_roles": roles(b_roles),
                "acc_roles": roles(acc_roles),
            },
            result_types=[acc.type],
        )

    def verify_(self) -> None:
        extents: dict[str, int] = {}
        for what, value, roles in (
            ("a", self.a, self.a_roles.roles),
            ("b", self.b, self.b_roles.roles),
            ("acc", self.acc, self.acc_roles.roles),
        ):
            typ = cast(TensorType, value.type)
            shape = typ.get_shape()
            if len(shape) != len(roles):
                raise VerifyException(
                    f"sched.mma operand '{what}': {len(roles)} roles {list(roles)} for a tile "
                    f"of rank {len(shape)}"
                )
            for role, extent in zip(roles, shape, strict=True):
                if role == "_" or role.startswith("b"):
                    if extent != 1:
                        raise VerifyException(
                            f"sched.mma operand '{what}': axis with role {role} has extent "
                            f"{extent}; a tile has extent 1 along absent and batch axes"
                        )
                    continue
                if extents.setdefault(role, extent) != extent:
                    raise VerifyException(
                        f"sched.mma operand '{what}': axis {role} has extent {extent}, "
                        f"expected {extents[role]}"
                    )
        if "k" in self.acc_roles.roles:
            raise VerifyException("sched.mma operand 'acc': the accumulator has no k axis")
        acc_type = cast(TensorType, self.acc.type)
        if acc_type.element_type != f32:
            raise VerifyException(
                f"sched.mma operand 'acc': expected element type f32, found {acc_type.element_type}"
            )
        if self.result.type != self.acc.type:
            raise VerifyException(
                f"sched.mma result {self.result.type} differs from the accumulator {self.acc.type}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> MmaOp:
        operands: list[UnresolvedOperand] = []
        roles: list[list[str]] = []
        for index in range(3):
            if index:
                parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
            roles.append(parse_role_list(parser))
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != 3:
            parser.raise_error(f"sched.mma expects 3 types (a, b, acc), found {len(types)}")
        a, b, acc = parser.resolve_operands(operands, types, parser.pos)
        return with_attributes(cls(a, b, acc, *roles), attrs)

    def print(self, printer: Printer) -> None:
        for index, (value, roles) in enumerate(
            ((self.a, self.a_roles), (self.b, self.b_roles), (self.acc, self.acc_roles))
        ):
            printer.print_string(", " if index else " ")
            printer.print_operand(value)
            printer.print_string(" ")
            print_role_list(printer, roles.roles)
        print_attributes_and_types(printer, self, self.operand_types)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a `sched.epilogue` region with the output tiles."""

    name = "sched.yield"

    values = var_operand_def()
    """The output tiles."""

    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class EpilogueOp(IRDLOperation):
    """The fusion's pointwise epilogue on tiles: block arguments are the input tiles."""

    name = "sched.epilogue"

    inputs = var_operand_def(TensorType)
    """The accumulator tiles and the epilogue operand tiles."""
    outputs = var_result_def(TensorType)
    """The output tiles, in the order of the region's `sched.yield`."""
    body = region_def("single_block")
    """fusion-dialect pointwise ops on the tiles."""

    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], output_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[output_types], regions=[body])

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [arg.type for arg in block.args]
        input_types = [value.type for value in self.inputs]
        if arg_types != input_types:
            raise VerifyException(
                "sched.epilogue: block argument types "
                f"({', '.join(map(str, arg_types))}) differ from the input tile types "
                f"({', '.join(map(str, input_types))})"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("sched.epilogue: the region must end with sched.yield")
        yielded = [value.type for value in last.values]
        output_types = [value.type for value in self.outputs]
        if yielded != output_types:
            raise VerifyException(
                f"sched.epilogue yields ({', '.join(map(str, yielded))}) but its results are "
                f"({', '.join(map(str, output_types))})"
            )

    @classmethod
    def parse(cls, parser: Parser) -> EpilogueOp:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = parser.resolve_operands(operands, function_type.inputs.data, parser.pos)
        attrs = parse_keyword_attributes(parser)
        body = parser.parse_region()
        return with_attributes(cls(inputs, function_type.outputs.data, body), attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") : ")
        printer.print_function_type([v.type for v in self.inputs], [v.type for v in self.outputs])
        print_attributes_and_region(printer, self, self.body, print_entry_block_args=True)


# Split-K: partial tiles through an f32 workspace, reduced in a fixed order.


def _check_workspace(op: str, workspace: Attribute, tile: Attribute, indices: int) -> None:
    """The workspace is [leading..., tile...] f32 with one index per leading dimension."""
    assert isinstance(workspace, MemRefType) and isinstance(tile, TensorType)
    ws_shape, tile_shape = tuple(workspace.get_shape()), tuple(tile.get_shape())
    lead = len(ws_shape) - len(tile_shape)
    if lead != indices or ws_shape[lead:] != tile_shape:
        raise VerifyException(
            f"{op}: workspace {workspace} must be [{indices} leading dims] x the tile shape "
            f"{_shape(tile_shape)}, with one index per leading dim ({indices} given)"
        )
    if workspace.element_type != f32 or tile.element_type != f32:
        raise VerifyException(f"{op}: the workspace and the tile must be f32")


@irdl_op_definition
class StorePartialOp(IRDLOperation):
    """Store a whole f32 partial tile into the workspace at [slice, tile, ...] (no clipping)."""

    name = "sched.store_partial"

    value = operand_def(TensorType)
    """The partial accumulator tile."""
    workspace = operand_def(MemRefType)
    """The f32 workspace: [slices, tiles, tile...]."""
    indices = var_operand_def(IndexType)
    """One index per leading workspace dimension (slice, tile)."""

    assembly_format = (
        "$value `,` $workspace `[` $indices `]` attr-dict `:` type($value) `,` type($workspace)"
    )

    def __init__(self, value: SSAValue, workspace: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, workspace, indices])

    def verify_(self) -> None:
        _check_workspace(
            "sched.store_partial", self.workspace.type, self.value.type, len(self.indices)
        )


@irdl_op_definition
class ArriveOp(IRDLOperation):
    """Atomically add 1 to a counter and return its old value (split-K arrival)."""

    name = "sched.arrive"

    counters = operand_def(MemRefType)
    """The i32 arrival counters, one per tile."""
    indices = var_operand_def(IndexType)
    """The counter's index."""
    old = result_def(IndexType)
    """The value before the increment."""

    assembly_format = "$counters `[` $indices `]` attr-dict `:` type($counters) `->` type($old)"

    def __init__(self, counters: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[counters, indices], result_types=[IndexType()])

    def verify_(self) -> None:
        typ = cast(MemRefType, self.counters.type)
        if typ.get_num_dims() != len(self.indices):
            raise VerifyException(
                f"sched.arrive: counters {typ} need {typ.get_num_dims()} indices, "
                f"found {len(self.indices)}"
            )


@irdl_op_definition
class ReducePartialsOp(IRDLOperation):
    """The sum of the workspace's partial tiles over its first axis, in order 0, 1, ..."""

    name = "sched.reduce_partials"

    workspace = operand_def(MemRefType)
    """The f32 workspace: [slices, tiles, tile...]."""
    indices = var_operand_def(IndexType)
    """One index per workspace dimension between the slice axis and the tile (the tile)."""
    result = result_def(TensorType)
    """The reduced f32 tile."""

    assembly_format = (
        "$workspace `[` $indices `]` attr-dict `:` type($workspace) `->` type($result)"
    )

    def __init__(self, workspace: SSAValue, indices: Sequence[SSAValue], tile_type: TensorType):
        super().__init__(operands=[workspace, indices], result_types=[tile_type])

    def verify_(self) -> None:
        _check_workspace(
            "sched.reduce_partials", self.workspace.type, self.result.type, len(self.indices) + 1
        )


# --------------------------------------------------------------------------------------
# The problem of a function after propagate-axis-mapping
# --------------------------------------------------------------------------------------


def _element_bytes(typ: Attribute) -> int:
    element = typ.element_type if isinstance(typ, TensorType | MemRefType) else typ
    name = dtype_name(element)
    return hw.ELEMENT_BYTES.get(name or "f32", 4)


def check_extents(problem: Problem) -> None:
    """Raise ScheduleError for a problem past what a kernel can index.

    Tile indices, loop bounds and TMA coordinates are 32-bit (signed in TMA), so every
    iteration axis is at most MAX_EXTENT (so every TMA dimension is below
    TMA_MAX_GLOBAL_DIM too); an mma operand is a TMA tensor, whose byte strides are below
    TMA_STRIDE_LIMIT. (Its rank is checked where its tensor map is built.)
    """
    for axis, extent in problem.extents.items():
        if extent > hw.MAX_EXTENT:
            name = (
                f"{_AXIS_NAMES[axis]} (iteration axis {axis})"
                if axis in _AXIS_NAMES
                else f"batch axis {axis}"
            )
            raise ScheduleError(
                f"{name} = {extent}: past what the kernel can "
                f"index; each extent must be at most {hw.MAX_EXTENT} (2^31 - "
                f"{hw.TMA_MAX_BOX}: tile indices, loop bounds and TMA coordinates are "
                f"{hw.INDEX_BITS}-bit integers)"
            )
    for index, shape in enumerate(problem.operand_shapes):
        what = f"mma operand {index} ({_shape(shape)})"
        stride = problem.element_bytes
        for axis in range(len(shape) - 1, 0, -1):
            stride *= shape[axis]
            if stride >= hw.TMA_STRIDE_LIMIT:
                raise ScheduleError(
                    f"{what}: axis {axis - 1} has a stride of {stride} bytes; TMA strides "
                    f"are below 2^40 = {hw.TMA_STRIDE_LIMIT} bytes"
                )


_AXIS_NAMES = {"m": "M", "n": "N", "k": "K"}


def problem_of(func: Operation) -> Problem:
    """The Problem of a `func.func` after propagate-axis-mapping (its space and mma ops)."""
    space = func.attributes.get("fusion.space")
    extents = dict(space.extents) if isinstance(space, IterationSpaceAttr) else {}
    a_values: list[SSAValue] = []
    b_values: list[SSAValue] = []
    element_bytes = 2
    for op in func.walk():
        if not isinstance(op, FusionMmaOp):
            continue
        if op.a not in a_values:
            a_values.append(op.a)
        if op.b not in b_values:
            b_values.append(op.b)
        element_bytes = max(element_bytes, _element_bytes(op.a.type), _element_bytes(op.b.type))
    output_bytes: tuple[int, ...] = (2,)
    epilogue_tiles = 0
    operands = {"tile": 0, "row": 0, "column": 0}
    if isinstance(func, FuncOp):
        if func.function_type.outputs.data:
            output_bytes = tuple(_element_bytes(t) for t in func.function_type.outputs.data)
        operands = _epilogue_operands(func, a_values + b_values)
        epilogue_tiles = len(output_bytes) - 1 + operands["tile"]
    return Problem(
        extents=extents,
        element_bytes=element_bytes,
        a_operands=max(len(a_values), 1),
        b_operands=max(len(b_values), 1),
        output_bytes=output_bytes,
        epilogue_tiles=epilogue_tiles,
        contractions=max(sum(isinstance(op, FusionMmaOp) for op in func.walk()), 1),
        row_divisions=sum(_divides_by_a_row(op) for op in func.walk()),
        operand_shapes=tuple(_tensor_shape(value) for value in a_values + b_values),
        tile_operands=operands["tile"],
        row_operands=operands["row"],
        column_operands=operands["column"],
    )


def _divides_by_a_row(op: Operation) -> bool:
    """Whether `op` is a fusion.div whose divisor is a row value broadcast along m (roles
    with n and without m, before its casts and broadcasts)."""
    if op.name != "fusion.div":
        return False
    value = op.operands[1]
    while isinstance(value.owner, Operation) and value.owner.name in (
        "fusion.broadcast",
        "fusion.cast",
    ):
        value = value.owner.operands[0]
    owner = value.owner
    if isinstance(owner, Operation):
        roles = owner.attributes.get("fusion.roles")
    else:
        parent = owner.parent_op()
        index = value.index if isinstance(value, BlockArgument) else 0
        arg_attrs = parent.arg_attrs if isinstance(parent, FuncOp) else None
        entry = arg_attrs.data[index] if arg_attrs is not None else None
        roles = entry.data.get("fusion.roles") if isinstance(entry, DictionaryAttr) else None
    if not isinstance(roles, AxisRolesAttr):
        return False
    return "n" in roles.roles and "m" not in roles.roles


def _tensor_shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType | MemRefType)
    return tuple(value_type.get_shape())


def _epilogue_operands(func: FuncOp, mma_operands: Sequence[SSAValue]) -> dict[str, int]:
    """Function arguments other than mma operands, counted by shape: "tile" (roles with m
    and n), "row" (n, no m) and "column" (m, no n)."""
    arg_attrs = func.arg_attrs.data if func.arg_attrs is not None else ()
    counts = {"tile": 0, "row": 0, "column": 0}
    for arg, attrs in zip(func.body.block.args, arg_attrs, strict=False):
        roles = attrs.data.get("fusion.roles") if isinstance(attrs, DictionaryAttr) else None
        if arg in mma_operands or not isinstance(roles, AxisRolesAttr):
            continue
        has_m, has_n = "m" in roles.roles, "n" in roles.roles
        if has_m and has_n:
            counts["tile"] += 1
        elif has_n:
            counts["row"] += 1
        elif has_m:
            counts["column"] += 1
    return counts


Sched = Dialect(
    "sched",
    [
        ScheduleOp,
        SpaceOp,
        SplitOp,
        MergeOp,
        SwizzleOp,
        ReorderOp,
        ParallelizeOp,
        LoadTileOp,
        StoreTileOp,
        ZeroTileOp,
        MmaOp,
        EpilogueOp,
        YieldOp,
        StorePartialOp,
        ArriveOp,
        ReducePartialsOp,
    ],
    [ScheduleParamsAttr, AxisType],
)
"""The schedule dialect."""
