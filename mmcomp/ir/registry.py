"""The dialects, passes and targets that mmcomp adds to xDSL.

Everything is registered lazily: a factory imports its module only when the dialect,
pass or target is first used, so `mmcomp-opt --help` stays as fast as xDSL's own driver.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.context import Context


def _lazy(module: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        return getattr(importlib.import_module(module), name)

    return load


DIALECTS: dict[str, Callable[[], Any]] = {
    "fusion": _lazy("mmcomp.dialects.fusion", "Fusion"),
    "sched": _lazy("mmcomp.dialects.sched", "Sched"),
    "hopper": _lazy("mmcomp.dialects.hopper", "Hopper"),
    "ptx": _lazy("mmcomp.dialects.ptx", "PTX"),
}
"""Dialect name -> factory returning the xDSL `Dialect`."""

PASSES: dict[str, Callable[[], Any]] = {
    "propagate-axis-mapping": _lazy("mmcomp.passes.propagate_axis_mapping", "PropagateAxisMapping"),
    "choose-schedule": _lazy("mmcomp.passes.choose_schedule", "ChooseSchedule"),
    "tile-split": _lazy("mmcomp.passes.tile_split", "TileSplit"),
    "tile-merge": _lazy("mmcomp.passes.tile_merge", "TileMerge"),
    "insert-persistent-loop": _lazy("mmcomp.passes.insert_persistent_loop", "InsertPersistentLoop"),
    "split-k": _lazy("mmcomp.passes.split_k", "SplitK"),
    "materialize-schedule": _lazy("mmcomp.passes.materialize_schedule", "MaterializeSchedule"),
    "partition-warp-roles": _lazy("mmcomp.passes.partition_warp_roles", "PartitionWarpRoles"),
    "carry-ring-positions": _lazy("mmcomp.passes.carry_ring_positions", "CarryRingPositions"),
    "lower-schedule-to-hopper": _lazy(
        "mmcomp.passes.lower_schedule_to_hopper", "LowerScheduleToHopper"
    ),
    "convert-arith-to-ptx": _lazy("mmcomp.passes.convert_arith_to_ptx", "ConvertArithToPtx"),
    "convert-hopper-to-ptx": _lazy("mmcomp.passes.convert_hopper_to_ptx", "ConvertHopperToPtx"),
    "convert-scf-to-ptx": _lazy("mmcomp.passes.convert_scf_to_ptx", "ConvertScfToPtx"),
}
"""Pass name -> factory returning the `ModulePass` class. One module per pass."""

DEFAULT_PIPELINE: tuple[str, ...] = (
    "propagate-axis-mapping",
    "choose-schedule",
    "tile-split",
    "tile-merge",
    "split-k",
    "insert-persistent-loop",
    "materialize-schedule",
    "partition-warp-roles",
    "carry-ring-positions",
    "lower-schedule-to-hopper",
    "convert-hopper-to-ptx",
    "convert-scf-to-ptx",
    "convert-arith-to-ptx",
)
"""The default pipeline from a fusion to a ptx module, in order: the pass `compile-to-ptx`."""

PASSES["compile-to-ptx"] = _lazy("mmcomp.passes.compile_to_ptx", "CompileToPtx")

TARGETS: dict[str, Callable[[], Any]] = {
    "ptx": _lazy("mmcomp.dialects.ptx.target", "PtxTarget"),
}
"""Target name (`mmcomp-opt -t NAME`) -> factory returning the xDSL `Target` class."""


def context() -> Context:
    """An xDSL context with xDSL's dialects and mmcomp's, loaded lazily."""
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for name, factory in DIALECTS.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx
