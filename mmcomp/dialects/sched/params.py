"""The schedule parameters: `ScheduleParams` and their attribute, `#sched.params<...>`.

The keys, their defaults and how a partial attribute is filled are described in the
docstring of the `sched` package.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.ir import (
    Data,
)
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.arch import limits as hw
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.dialects.sched.problem import (
    Problem,
    ceil_div,
    check_extents,
    format_dims,
    quantize_problem,
)
from mmcomp.dialects.sched.shared_memory import SharedMemoryLayout
from mmcomp.errors import ScheduleError

PARAMS_ATTR = "sched.params"
"""Name of the discardable attribute that carries the params on a `func.func`."""

RASTERS = ("m", "n", "auto")
"""Raster orders: the tile index along M or N varies fastest, or the heuristic picks."""
STRATEGIES = ("one-tile-per-cta", "persistent", "stream-k", "hybrid-stream-k")
"""Tiling strategies: one tile per CTA, persistent tiles, stream-K (the CTAs split the
K blocks of all tiles evenly), and data-parallel waves with a stream-K tail."""
STREAM_K_STRATEGIES = ("stream-k", "hybrid-stream-k")
"""The strategies whose CTAs split the K blocks of all tiles (fixed up in the workspace)."""
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


_TILE_CANDIDATES = tuple(
    sorted(
        ((m, n) for m in (256, 128, 64) for n in (256, 192, 128, 64) if m * n <= 128 * 256),
        key=lambda tile: (-tile[0] * tile[1], -tile[1]),
    )
)
"""CTA tiles (m, n) that a register-bound error suggests, largest first."""


def _align(size: int, alignment: int) -> int:
    return ceil_div(size, alignment) * alignment


# The parameters


REGISTER_BASE = 40
"""Consumer registers a kernel needs besides its tiles (addresses, indices, loop and
barrier state), measured with ptxas: see `ScheduleParams.consumer_registers`."""


EPILOGUE_SUBTILE_STEP = 8
"""Columns of the narrowest epilogue subtile: one 8-column block of the wgmma fragment (a
thread holds 2 of them in each of its rows)."""


BLOCK_PIPELINE_CHUNK = 64
"""The widest block-wise partial (wgmma n) of which a consumer keeps two in flight: two of
64 columns take as many registers as one of 128 (`ScheduleParams.block_partials_in_flight`)."""


def tile_rows(warp_specialization: str) -> int:
    """Rows of the CTA tile chosen when none is given: one wgmma's 64 under ping-pong (each
    consumer warpgroup takes a whole tile), else 128, split between two consumers."""
    return hw.WGMMA_M if warp_specialization == "pingpong" else 2 * hw.WGMMA_M


def derive_warpgroup(
    tile: tuple[int, int, int], warp_specialization: str, swap_ab: bool = False
) -> tuple[int, int]:
    """The warpgroup tile mmcomp uses for a CTA tile under a warp specialization (with
    `swap_ab`, two consumers split the tile's N, wgmma's rows, instead of its M)."""
    tile_m, tile_n, _ = tile
    if swap_ab:
        return swapped_warpgroup(tile, warp_specialization)
    if warp_specialization == "pingpong":
        return (tile_m, tile_n)
    if tile_m >= 2 * hw.WGMMA_M and tile_m % (2 * hw.WGMMA_M) == 0:
        return (tile_m // 2, tile_n)
    return (tile_m, tile_n)


def derive_instr(
    warpgroup: tuple[int, int],
    element_bytes: int = 2,
    swap_ab: bool = False,
    block_scaled: bool = False,
) -> tuple[int, int, int]:
    """The wgmma shape (m, n, k) covering a warpgroup tile in as few instructions as fit
    (with `swap_ab`, the tile's N is wgmma's m and its M wgmma's n); with `block_scaled`,
    at most one N block of block-wise scales wide (each wgmma chunk is promoted with one
    scale of `w`)."""
    if swap_ab:
        warpgroup = (warpgroup[1], warpgroup[0])
    widest = SCALE_BLOCK if block_scaled else hw.WGMMA_N_MAX
    n = min(warpgroup[1], widest)
    while n > hw.WGMMA_N_MIN and warpgroup[1] % n:
        n -= hw.WGMMA_N_STEP
    return (hw.WGMMA_M, max(n, hw.WGMMA_N_MIN), hw.wgmma_k(element_bytes))


SWAP_AB_ROWS = hw.WGMMA_M
"""Rows (M) of the tile a swapped schedule is filled with when its tile is not written."""


def swapped_warpgroup(tile: tuple[int, int, int], warp_specialization: str) -> tuple[int, int]:
    """The warpgroup tile (m, n) of a swapped CTA tile: ping-pong gives each consumer the
    whole tile; otherwise two consumers split N (wgmma's rows) in halves that are whole
    m64 blocks, where N allows it."""
    tile_m, tile_n, _ = tile
    if warp_specialization == "pingpong":
        return (tile_m, tile_n)
    if tile_n >= 2 * hw.WGMMA_M and tile_n % (2 * hw.WGMMA_M) == 0:
        return (tile_m, tile_n // 2)
    return (tile_m, tile_n)


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
    """"one-tile-per-cta", "persistent", "stream-k" or "hybrid-stream-k"."""
    split_k: int = 1
    """Number of K slices computed by different CTAs and reduced through an f32 workspace."""
    warp_specialization: str = "cooperative"
    """"none", "cooperative" (consumers share a tile) or "pingpong" (they alternate)."""
    registers: tuple[int, int] = (40, 232)
    """setmaxnreg counts (producer, consumer)."""
    epilogue: str = "smem"
    """"registers" or "smem" (staged in shared memory, stored with TMA)."""
    epilogue_subtile: int = 0
    """Columns of a consumer's accumulator fragment (the tile's n; its m under swap_ab) that
    the epilogue computes at once, its operands loaded per subtile (a multiple of
    EPILOGUE_SUBTILE_STEP dividing the fragment's columns); 0: the whole tile at once."""
    swap_ab: bool = False
    """Compute the transposed product C^T = W A^T: the tile's N is wgmma's 64-row m and
    its M wgmma's n (8 to 256), for small M. Tile, warpgroup and the problem's axes stay in
    problem terms; `instr` is the wgmma shape as the hardware runs it."""
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
        "epilogue_subtile",
        "swap_ab",
    )
    OPTIONAL_KEYS: ClassVar[frozenset[str]] = frozenset({"swap_ab", "epilogue_subtile"})
    """Keys that complete params may leave out of their text (they then hold their
    default, and are printed only where they differ from it)."""

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
    def stream_k(self) -> bool:
        """Whether the CTAs split the K blocks of all tiles (a stream-K strategy)."""
        return self.strategy in STREAM_K_STRATEGIES

    @property
    def accumulator_registers(self) -> int:
        """f32 accumulator registers per consumer thread."""
        return self.warpgroup[0] * self.warpgroup[1] // hw.WARPGROUP_SIZE

    def consumer_registers(self, problem: Problem) -> dict[str, int]:
        """Registers a consumer thread needs, by what holds them (an upper estimate).

        Per thread of a warpgroup fragment of r rows and c columns (wm x wn, or wn x wm
        under swap_ab), whose epilogue spans s columns at once (`epilogue_subtile`, or
        the whole c): each accumulator r * c / 128 values, each [M, N] epilogue operand
        r * s / 128, each operand along the fragment's columns ([N], [1, N] rows; [M, 1]
        columns under swap_ab) s / 4, each along its rows r / 32, each division by a row
        value as many more (its reciprocals), with split-K and several contractions under
        the shared-memory epilogue or without specialization each accumulator once more
        (their partials are reduced together), and REGISTER_BASE besides. ptxas (13.0,
        sm_90a) on silu*mul, the horizontal fusion, bias rows and [M, 1] columns at 64 to
        256 wide tiles spilled where this sum passes the setmaxnreg count, and assembled
        without spills wherever it does not (docs/schedule.md).
        """
        tile = self.accumulator_registers
        rows, columns = self.wgmma_warpgroup
        span = self.epilogue_subtile or columns
        split = 0
        staged = self.epilogue == "smem" or self.warp_specialization == "none"
        if (self.split_k > 1 or self.stream_k) and problem.contractions > 1 and staged:
            split = tile * problem.contractions
        by_row = problem.row_operands + problem.row_divisions
        # A thread holds 2 of every 8 fragment columns and 2 of every 16 rows: a row
        # operand runs along the columns, or with swap_ab (whose fragment is transposed)
        # along the rows, and a column operand the other way.
        if self.swap_ab:
            row_values, column_values = by_row * rows // 32, problem.column_operands * span // 4
        else:
            row_values, column_values = by_row * span // 4, problem.column_operands * rows // 32
        return {
            "accumulators": tile * problem.contractions,
            "block-wise partials": self.block_partial_registers(problem),
            "[M, N] operands": rows * span // hw.WARPGROUP_SIZE * problem.tile_operands,
            "rows": row_values,
            "columns": column_values,
            "split-K reduction": split,
            "addresses and indices": REGISTER_BASE,
        }

    @property
    def block_chunk(self) -> int:
        """Columns of one block-wise partial: the wgmma n, at most one N block of scales and
        the warpgroup tile's width (`derive_instr` gives block-scaled problems such an n;
        `check` refuses others)."""
        return min(self.instr[1], self.wgmma_warpgroup[1], SCALE_BLOCK)

    def block_partials_in_flight(self, fragments: int) -> int:
        """Block-wise partials a consumer thread holds at once, of `fragments` to promote
        per K block: two where a partial is at most BLOCK_PIPELINE_CHUNK columns and there
        are two or more (one's promotion overlaps the next one's wgmmas), else one (each
        chunk's wgmmas, wait, promotion, then the next chunk's)."""
        if fragments >= 2 and self.block_chunk <= BLOCK_PIPELINE_CHUNK:
            return 2
        return 1

    def block_partial_registers(self, problem: Problem) -> int:
        """Registers of the K-block partials of block-wise scales per consumer thread: the
        partials in flight (`block_partials_in_flight`), each a 64 x `block_chunk`
        fragment; 0 without block-wise scales."""
        if not problem.block_scaled:
            return 0
        wg_m, wg_n = self.wgmma_warpgroup
        per_contraction = (wg_m // hw.WGMMA_M) * max(wg_n // self.block_chunk, 1)
        in_flight = self.block_partials_in_flight(per_contraction * problem.contractions)
        return in_flight * hw.WGMMA_M * self.block_chunk // hw.WARPGROUP_SIZE

    @property
    def wgmma_warpgroup(self) -> tuple[int, int]:
        """The warpgroup tile as wgmma computes it (rows, columns): (m, n), or with swap_ab
        (n, m)."""
        if self.swap_ab:
            return (self.warpgroup[1], self.warpgroup[0])
        return self.warpgroup

    def fits_registers(self, problem: Problem, margin: int = 0) -> bool:
        """The consumer threads' registers hold what `consumer_registers` estimates, with
        `margin` registers to spare."""
        return sum(self.consumer_registers(problem).values()) + margin <= self.registers[1]

    def subtiles(self, problem: Problem) -> list[int]:
        """The epilogue subtiles narrower than the fragment that this schedule may take for
        `problem`, widest first (none where the epilogue quantizes)."""
        if problem.quantize:
            return []
        columns = self.wgmma_warpgroup[1]
        step = EPILOGUE_SUBTILE_STEP
        if self.epilogue == "smem":
            step = max(step, hw.TMA_SWIZZLE_BYTES // min(problem.output_bytes))
        widths = range(columns - step, 0, -step)
        return [width for width in widths if width % step == 0 and not columns % width]

    def fitting_subtile(self, problem: Problem, margin: int = 0) -> int | None:
        """The widest epilogue subtile with which the consumer registers hold the epilogue
        (`fits_registers`, `margin` to spare); None where none does."""
        for width in self.subtiles(problem):
            if self.replace(epilogue_subtile=width).fits_registers(problem, margin):
                return width
        return None

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
        if tiles_m < 1:
            return "m"  # a dynamic m: groups cut along n, whose tile count is static
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
        `mmcomp.schedule.heuristics.choose_tile` may choose in place of the fill (its rows for the
        warp specialization, 256, 128 or 64 wide; ping-pong's 128x128), warpgroup and
        instr derived again."""
        completions: list[ScheduleParams] = [self]
        if self.written is None or "tile" in self.written:
            return completions
        rows = SWAP_AB_ROWS if self.swap_ab else tile_rows(self.warp_specialization)
        tiles = [(rows, n) for n in (256, 128, 64)]
        if self.swap_ab:
            tiles += [(m, n) for m in (32, 16, 8) for n in (256, 128)]
        elif self.warp_specialization == "pingpong":
            tiles.append((2 * hw.WGMMA_M, 128))
        for tile_m, tile_n in tiles:
            tile = (tile_m, tile_n, self.tile[2])
            warpgroup = self.warpgroup
            if "warpgroup" not in self.written:
                warpgroup = derive_warpgroup(tile, self.warp_specialization, self.swap_ab)
            instr = self.instr
            if "instr" not in self.written:
                i_m, i_n, _ = derive_instr(warpgroup, swap_ab=self.swap_ab)
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
                raise ScheduleError(f"{key} {format_dims(value)}: every extent must be positive")

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
        if not isinstance(self.swap_ab, bool):
            raise ScheduleError(f"swap_ab = {self.swap_ab!r}: expected true or false")

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
        if self.epilogue_subtile < 0:
            raise ScheduleError(
                f"epilogue_subtile = {self.epilogue_subtile}: must be 0 (the whole tile) or a "
                "positive number of columns"
            )
        self._validate_stream_k()
        cluster_size = self.cluster[0] * self.cluster[1]
        if cluster_size > hw.MAX_CLUSTER_SIZE:
            raise ScheduleError(
                f"cluster {format_dims(self.cluster)} has {cluster_size} CTAs; the portable "
                f"limit is {hw.MAX_CLUSTER_SIZE}"
            )

    def _validate_stream_k(self) -> None:
        if not self.stream_k:
            return
        if self.split_k != 1:
            raise ScheduleError(
                f"strategy {self.strategy} with split_k = {self.split_k}: stream-K splits the "
                "K blocks itself; split_k must be 1"
            )
        if self.cluster != (1, 1):
            raise ScheduleError(
                f"strategy {self.strategy} with cluster {format_dims(self.cluster)}: the CTAs "
                "of a cluster would need the same K blocks; stream-K runs with cluster 1x1"
            )

    def _validate_shapes(self) -> None:
        if self.swap_ab:
            self._validate_swap_ab()
        tile_m, tile_n, tile_k = self.tile
        wg_m, wg_n = self.wgmma_warpgroup
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
                    f"tile {format_dims(self.tile)}: {axis} = {extent} exceeds the TMA box "
                    f"limit of {hw.TMA_MAX_BOX}"
                )
        if wg_m % i_m or wg_n % i_n or tile_k % i_k:
            swapped = " (swap_ab: its n is wgmma's m, its m wgmma's n)" * self.swap_ab
            raise ScheduleError(
                f"tile {format_dims(self.tile)} with warpgroup tile "
                f"{format_dims(self.warpgroup)}{swapped} is "
                f"not divisible by the instruction shape m{i_m}n{i_n}k{i_k}"
            )
        if tile_m % self.warpgroup[0] or tile_n % self.warpgroup[1]:
            raise ScheduleError(
                f"tile {format_dims(self.tile)} is not divisible by the warpgroup tile "
                f"{format_dims(self.warpgroup)}"
            )
        if self.warp_specialization == "pingpong" and self.warpgroup != (tile_m, tile_n):
            raise ScheduleError(
                f"pingpong gives each consumer warpgroup a whole tile, so the warpgroup "
                f"tile {format_dims(self.warpgroup)} must equal the CTA tile {tile_m}x{tile_n}"
            )
        self._validate_subtile()
        consumers = self.consumer_warpgroups
        if consumers > hw.MAX_CONSUMER_WARPGROUPS:
            raise ScheduleError(
                f"tile {format_dims(self.tile)} with warpgroup tile "
                f"{format_dims(self.warpgroup)} needs "
                f"{consumers} consumer warpgroups; the kernels have at most "
                f"{hw.MAX_CONSUMER_WARPGROUPS}"
            )

    def _validate_subtile(self) -> None:
        """An epilogue subtile is whole 8-column blocks of the fragment, dividing its
        columns."""
        subtile = self.epilogue_subtile
        columns = self.wgmma_warpgroup[1]
        if subtile and (subtile % EPILOGUE_SUBTILE_STEP or columns % subtile):
            what = "m" if self.swap_ab else "n"
            raise ScheduleError(
                f"epilogue_subtile = {subtile} with warpgroup tile {format_dims(self.warpgroup)}: "
                f"a subtile must be a multiple of {EPILOGUE_SUBTILE_STEP} columns dividing the "
                f"warpgroup tile's {what} = {columns}"
            )

    def _check_subtile(self, problem: Problem) -> None:
        """An epilogue subtile is whole boxes of the shared-memory epilogue's outputs, and
        the quantizing epilogue (whole groups of columns at once) is not subtiled."""
        subtile = self.epilogue_subtile
        if not subtile:
            return
        if problem.quantize:
            raise ScheduleError(
                f"epilogue_subtile = {subtile}: an epilogue that computes quantization scales "
                "takes whole groups of columns at once and is not subtiled; use "
                "epilogue_subtile = 0"
            )
        box = hw.TMA_SWIZZLE_BYTES // min(problem.output_bytes)
        if self.epilogue == "smem" and subtile % box:
            raise ScheduleError(
                f"epilogue_subtile = {subtile} with epilogue = smem: a subtile is whole boxes "
                f"of {hw.TMA_SWIZZLE_BYTES} bytes of each output row ({box} columns of the "
                f"{min(problem.output_bytes)}-byte output), so it must be a multiple of {box}"
            )

    def _validate_swap_ab(self) -> None:
        """What the hardware mapping of swap_ab needs: the tile's M is wgmma's n, its N
        whole m64 blocks, and the epilogue stores the transposed fragment from registers."""
        tile_m, tile_n, _ = self.tile
        where = f"swap_ab with tile {format_dims(self.tile)}"
        if tile_m % hw.WGMMA_N_STEP or tile_m > hw.WGMMA_N_MAX:
            raise ScheduleError(
                f"{where}: the tile's m = {tile_m} is wgmma's n, so it must be a multiple of "
                f"{hw.WGMMA_N_STEP} from {hw.WGMMA_N_MIN} to {hw.WGMMA_N_MAX}"
            )
        if tile_n % hw.WGMMA_M or self.warpgroup[1] % hw.WGMMA_M:
            raise ScheduleError(
                f"{where} and warpgroup tile {format_dims(self.warpgroup)}: the n of both is "
                f"wgmma's m, so it must be a multiple of {hw.WGMMA_M}"
            )
        if self.epilogue != "registers":
            raise ScheduleError(
                f"swap_ab with epilogue = {self.epilogue}: the accumulator holds C^T, which "
                "the shared-memory epilogue does not stage; use epilogue = registers"
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
                f"warpgroup tile {format_dims(self.warpgroup)} needs {self.accumulator_registers} "
                f"f32 accumulator registers per thread; {consumer} consumer registers leave "
                f"{available} after {hw.ACCUMULATOR_HEADROOM} for addresses and the "
                f"epilogue{hint}"
            )

    def _operand_tiles(self, problem: Problem) -> tuple[int, int]:
        """Bytes of one A tile and one B tile in a ring stage."""
        tile_m, tile_n, tile_k = self.tile
        row = tile_k * problem.element_bytes
        return _align(tile_m * row, hw.SMEM_ALIGNMENT), _align(tile_n * row, hw.SMEM_ALIGNMENT)

    def shared_memory(self, problem: Problem) -> SharedMemoryLayout:
        """The kernel's dynamic shared memory as the lowering lays it out
        (mmcomp.dialects.sched.shared_memory): a ring stage holds every A and B tile; the
        epilogue "smem" adds the buffers of each consumer warpgroup a kernel may have."""
        a_tile, b_tile = self._operand_tiles(problem)
        stage = problem.a_operands * a_tile + problem.b_operands * b_tile
        buffers = hw.MAX_CONSUMER_WARPGROUPS * hw.EPILOGUE_BUFFERS * (self.epilogue == "smem")
        return SharedMemoryLayout(stage, self.stages, buffers)

    def smem_bytes(self, problem: Problem) -> dict[str, int]:
        """`shared_memory`'s bytes by part: a and b (the ring's tiles), then its `parts`."""
        a = self.stages * problem.a_operands * self._operand_tiles(problem)[0]
        parts = self.shared_memory(problem).parts()
        return {"a": a, "b": parts.pop("ring") - a, **parts}

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
                f"tile {format_dims(self.tile)} with {self.stages} stages{operands} needs {total} "
                f"bytes of shared memory ({detail}); the device allows "
                f"{hw.MAX_DYNAMIC_SMEM_PER_BLOCK}"
            )
        self._validate_registers()
        self._check_subtile(problem)
        self._check_consumer_registers(problem)
        if self.swap_ab and problem.a_m_contiguous and self.tile[0] % 64:
            raise ScheduleError(
                f"swap_ab with tile {format_dims(self.tile)}: an A operand is contiguous along "
                f"M, which TMA loads in boxes of 64 along M, so the tile's m = {self.tile[0]} "
                "(wgmma's n) must be a multiple of 64; or store A with K contiguous"
            )
        if problem.block_scaled:
            self._check_block_scaled()
        if "k" in problem.dynamic_axes and (self.split_k != 1 or self.stream_k):
            split = f"split_k = {self.split_k}" if self.split_k != 1 else ""
            raise ScheduleError(
                f"{split or f'strategy {self.strategy}'} with a dynamic K: the K blocks are "
                "counted at call time and are not split across CTAs; use split_k = 1 and "
                "strategy persistent (or a static K)"
            )
        k_blocks = ceil_div(problem.k, self.tile[2])
        if "k" not in problem.dynamic_axes and self.split_k > k_blocks:
            raise ScheduleError(
                f"split_k = {self.split_k} is larger than the {k_blocks} K blocks of "
                f"k = {problem.k} with tile k = {self.tile[2]}"
            )
        quantize = quantize_problem(problem, self.tile[1])
        if quantize is not None:
            raise ScheduleError(quantize)
        tiles_m = ceil_div(problem.m, self.tile[0])
        tiles_n = ceil_div(problem.n, self.tile[1])
        work = problem.batch * tiles_m * tiles_n * self.split_k
        if not problem.dynamic_axes and work > hw.MAX_WORK_UNITS:
            raise ScheduleError(
                f"tile {format_dims(self.tile)} with split_k = {self.split_k} gives {work} work "
                f"units (batch {problem.batch} x {tiles_m} M tiles x {tiles_n} N tiles x "
                f"{self.split_k} slices); the kernel's {hw.INDEX_BITS}-bit tile loop counts "
                f"at most {hw.MAX_WORK_UNITS}"
            )
        iterations = problem.batch * tiles_m * tiles_n * k_blocks
        products = iterations * hw.SM_COUNT
        if self.stream_k and not problem.dynamic_axes and products > hw.MAX_WORK_UNITS:
            raise ScheduleError(
                f"strategy {self.strategy}: {iterations} K-block iterations (batch "
                f"{problem.batch} x {tiles_m} M tiles x {tiles_n} N tiles x {k_blocks} K "
                f"blocks) times {hw.SM_COUNT} CTAs pass the kernel's {hw.INDEX_BITS}-bit "
                f"iteration arithmetic (at most {hw.MAX_WORK_UNITS}); use strategy persistent"
            )
        for axis, size, tiles in (("m", self.cluster[0], tiles_m), ("n", self.cluster[1], tiles_n)):
            if axis in problem.dynamic_axes:
                continue  # the m tiles are counted at call time; a cluster may pass the edge
            if size > tiles:
                raise ScheduleError(
                    f"cluster {format_dims(self.cluster)}: {size} CTAs along {axis} but the "
                    f"problem has only {tiles} tiles along {axis}"
                )

    def _check_block_scaled(self) -> None:
        """Block-wise scales: one K block of 128 per tile k (each ring stage holds one scale
        block), and each tile's columns in whole N blocks of 128 or inside one."""
        _, tile_n, tile_k = self.tile
        i_m, i_n, i_k = self.instr
        if tile_k != SCALE_BLOCK:
            raise ScheduleError(
                f"tile {format_dims(self.tile)}: block-wise scales need tile k = {SCALE_BLOCK} "
                f"(one scale per K block of {SCALE_BLOCK}), found {tile_k}"
            )
        if tile_n % SCALE_BLOCK and SCALE_BLOCK % tile_n:
            raise ScheduleError(
                f"tile {format_dims(self.tile)}: block-wise scales need a tile n that divides "
                f"{SCALE_BLOCK} or is a multiple of it (each tile in whole N blocks of "
                f"{SCALE_BLOCK}, or inside one), found {tile_n}"
            )
        if SCALE_BLOCK % i_n and not self.swap_ab:
            raise ScheduleError(
                f"instr m{i_m}n{i_n}k{i_k}: block-wise scales promote each wgmma chunk with "
                f"one scale of 'w', so wgmma n must divide its N block of {SCALE_BLOCK} "
                f"(m{i_m}n{SCALE_BLOCK}k{i_k} or narrower), found {i_n}"
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
            and not (problem.block_scaled and tile[1] % SCALE_BLOCK and SCALE_BLOCK % tile[1])
            and quantize_problem(problem, tile[1]) is None
        ]
        nothing = "no tile fits; use fewer epilogue operands"
        if problem.quantize:
            nothing = (
                "no tile fits the quantization scales' tile n (whole 1 x 128 groups, or the "
                "row); quantize in a kernel of its own (e.g. output the values in bf16)"
            )
        advice = f"tiles that fit: tile={' or '.join(fitting[:3])}" if fitting else nothing
        subtile = self.fitting_subtile(problem)
        if subtile is not None and subtile != self.epilogue_subtile:
            advice += f", or epilogue_subtile = {subtile} with this tile"
        if needed["split-K reduction"] and self.replace(split_k=1).fits_registers(problem):
            advice += ", or split_k = 1 with this tile"
            if self.warp_specialization != "none":
                advice += " (or epilogue = registers)"
        raise ScheduleError(
            f"tile {format_dims(self.tile)} under {self.warp_specialization}: a consumer thread "
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
            "tile": format_dims(self.tile),
            "warpgroup": format_dims(self.warpgroup),
            "instr": f"m{i_m}n{i_n}k{i_k}",
            "cluster": format_dims(self.cluster),
            "registers": f"{self.registers[0]}/{self.registers[1]}",
        }
        text["swap_ab"] = "true" if self.swap_ab else "false"
        keys = [
            key
            for key in self.written_keys
            if self.written is not None
            or key not in self.OPTIONAL_KEYS
            or getattr(self, key) != getattr(ScheduleParams, key)
        ]
        return ", ".join(f"{key} = {text.get(key, getattr(self, key))}" for key in keys)

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
        swap = params.swap_ab is True
        if "tile" not in values:
            _, tile_n, tile_k = params.tile
            rows = SWAP_AB_ROWS if swap else tile_rows(params.warp_specialization)
            params = params.replace(tile=(rows, tile_n, tile_k))
        if swap and "epilogue" not in values:
            params = params.replace(epilogue="registers")
        if "warpgroup" not in values:
            params = params.replace(
                warpgroup=derive_warpgroup(params.tile, params.warp_specialization, swap)
            )
        if "instr" not in values:
            params = params.replace(instr=derive_instr(params.warpgroup, element_bytes, swap))
        return params

    @staticmethod
    def partial(values: Mapping[str, object]) -> ScheduleParams:
        """Params that fix only the keys of `values`, as `#sched.params<...>` text does; the
        others hold the fill of `build` (16-bit inputs) until choose-schedule chooses them."""
        params = ScheduleParams.build(values)
        if set(values) | ScheduleParams.OPTIONAL_KEYS >= set(ScheduleParams.KEYS):
            return params
        return params.replace(written=frozenset(values))


# Attributes and types

_INSTR = re.compile(r"m(\d+)n(\d+)k(\d+)")


def _parse_dims(parser: AttrParser, key: str, count: int) -> tuple[int, ...]:
    pos = parser.pos
    dims = parser.parse_dimension_list()
    if len(dims) != count or any(d < 0 for d in dims):
        parser.raise_error(
            f"{key}: expected {count} extents separated by 'x', "
            f"found {format_dims(dims) or 'none'}",
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
    if key in ("stages", "swizzle", "split_k", "epilogue_subtile"):
        return parser.parse_integer(allow_boolean=False)
    if key == "swap_ab":
        pos = parser.pos
        word = parser.parse_identifier()
        if word not in ("true", "false"):
            parser.raise_error(f"swap_ab: expected true or false, found {word}", pos)
        return word == "true"
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
