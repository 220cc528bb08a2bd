"""`compile-to-ptx`: the default pipeline, from a fusion-dialect module to a ptx module.

It runs `mmcomp.ir.registry.DEFAULT_PIPELINE` in order (propagate-axis-mapping,
choose-schedule, tile-split, tile-merge, split-k, insert-persistent-loop,
materialize-schedule, partition-warp-roles, lower-schedule-to-hopper,
convert-hopper-to-ptx, convert-arith-to-ptx), so that

    mmcomp-opt fusion.mlir -p compile-to-ptx -t ptx

prints the kernel's PTX. `--print-between-passes` shows only the module before and after;
to see each stage, pass the list itself to `-p`. The module holds one fusion function (or
one kernel a later stage printed), as the `-t ptx` target prints one kernel: none, or two,
is an error naming what it holds.

Where ptxas is found, the pass assembles the result, and a fusion function whose entry
spills is compiled again with the refits of `mmcomp.schedule.spill_refit`, the keys written in its
`#sched.params` kept as pins: the search `mmcomp.compile` runs with its keywords, so both
tools give the same kernel. A function whose pinned schedule spills whatever is refitted
is an error naming the spill and what would fit. `compile-to-ptx{refit-spills=false}`
skips the check (as the pass list written out does). `compile-to-ptx{schedule-m=16}`
schedules a dynamic M as if it were 16, as `mmcomp.compile(f, schedule_m=16)` does.

The pass takes choose-schedule's schedule options and hands them to it, as
`mmcomp.compile`'s keywords are (they win over the keys written in `#sched.params`, and
the spill refit keeps them as pins):

    mmcomp-opt f.mlir -p 'compile-to-ptx{tile=128x128x64 stages=4}' -t ptx
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.ir.registry import DEFAULT_PIPELINE, PASSES
from mmcomp.passes.choose_schedule import ChooseSchedule, Dims


def run_default_pipeline(
    ctx: Context, module: ModuleOp, choose: ChooseSchedule | None = None
) -> dict[str, ScheduleParams]:
    """Run DEFAULT_PIPELINE on `module` (`choose` as its choose-schedule, with the options
    given): the params choose-schedule gave each fusion function, by name."""
    chosen: dict[str, ScheduleParams] = {}
    for name in DEFAULT_PIPELINE:
        if name == "choose-schedule" and choose is not None:
            choose.apply(ctx, module)
        else:
            PASSES[name]()().apply(ctx, module)
        if name == "choose-schedule":
            chosen = {
                function.sym_name.data: attr.data
                for function in _fusion_functions(module)
                if isinstance(attr := function.attributes.get(PARAMS_ATTR), ScheduleParamsAttr)
            }
    return chosen


def spilling_entries(module: ModuleOp) -> dict[str, str]:
    """The entries of a ptx-level module that ptxas spills, with its report of each; a
    DiagnosticException where ptxas cannot assemble it."""
    from mmcomp.arch import ptxas
    from mmcomp.dialects.ptx.target import emit_ptx

    try:
        assembled = ptxas.assemble(emit_ptx(module))
    except ptxas.PtxasError as error:
        raise DiagnosticException(f"compile-to-ptx: ptxas: {error}") from error
    reports = {entry: ptxas.spill_message(report) for entry, report in assembled.resources.items()}
    return {entry: message for entry, message in reports.items() if message is not None}


def _fusion_functions(module: ModuleOp) -> list[FuncOp]:
    from mmcomp.analysis.schedule_view import is_fusion_function

    return [op for op in module.walk() if isinstance(op, FuncOp) and is_fusion_function(op)]


def _kernel_names(module: ModuleOp) -> list[str]:
    """The names of the kernels that the pipeline builds from `module`: one per fusion
    function, and per kernel of a later level (materialized, hopper.kernel, ptx.entry)."""
    from mmcomp.analysis.schedule_view import is_fusion_function, is_materialized
    from mmcomp.dialects.hopper import KernelOp
    from mmcomp.dialects.ptx import EntryOp

    names: list[str] = []
    for op in module.walk():
        if isinstance(op, FuncOp):
            if is_fusion_function(op) or is_materialized(op):
                names.append(f"@{op.sym_name.data}")
            continue
        if isinstance(op, KernelOp | EntryOp):
            names.append(f"@{op.sym_name.data}")
    return names


def check_one_fusion(module: ModuleOp, pass_name: str) -> None:
    """A diagnostic naming `pass_name` unless `module` holds exactly one fusion to compile."""
    names = _kernel_names(module)
    if len(names) == 1:
        return
    if names:
        raise DiagnosticException(
            f"{pass_name}: expected one fusion func.func, found {len(names)} "
            f"({', '.join(names)}); compile each in a file of its own (or in a chunk of "
            "its own, with --split-input-file)"
        )
    plain = [f"@{op.sym_name.data}" for op in module.walk() if isinstance(op, FuncOp)]
    held = f"only functions without fusion ops: {', '.join(plain)}" if plain else "nothing"
    raise DiagnosticException(
        f"{pass_name}: expected one fusion func.func (fusion ops on tensors), found none "
        f"(the module holds {held})"
    )


def _function(module: ModuleOp, name: str) -> FuncOp:
    return next(op for op in _fusion_functions(module) if op.sym_name.data == name)


def _pin(module: ModuleOp, name: str, pins: Mapping[str, object]) -> None:
    """Write `pins` as the `#sched.params` of function `name` (only those keys)."""
    function = _function(module, name)
    function.attributes[PARAMS_ATTR] = ScheduleParamsAttr(ScheduleParams.partial(pins))


def _replace_body(module: ModuleOp, source: ModuleOp) -> None:
    """Make `module` hold `source`'s ops (and nothing else)."""
    for op in list(module.ops):
        op.detach()
        op.erase()
    for op in list(source.ops):
        op.detach()
        module.body.block.add_op(op)


@dataclass(frozen=True)
class CompileToPtx(ModulePass):
    """Run the default pipeline: fusion in, ptx module (with its hopper ops lowered) out."""

    name = "compile-to-ptx"

    refit_spills: bool = True
    """Assemble with ptxas (where found) and refit the schedule of an entry that spills."""
    schedule_m: int | None = None
    """For a dynamic M: schedule as if M were this (choose-schedule's `schedule-m`, an M
    bucket's bound; `mmcomp.compile(f, schedule_m=M)`)."""
    tile: Dims = None
    """choose-schedule's `tile`: the CTA tile, m x n x k."""
    stages: int | None = None
    """choose-schedule's `stages`."""
    cluster: Dims = None
    """choose-schedule's `cluster`."""
    raster: str | None = None
    """choose-schedule's `raster`."""
    swizzle: int | None = None
    """choose-schedule's `swizzle`."""
    strategy: str | None = None
    """choose-schedule's `strategy`."""
    split_k: int | None = None
    """choose-schedule's `split-k`."""
    warp_specialization: str | None = None
    """choose-schedule's `warp-specialization`."""
    registers: Dims = None
    """choose-schedule's `registers`."""
    epilogue: str | None = None
    """choose-schedule's `epilogue`."""
    epilogue_subtile: int | None = None
    """choose-schedule's `epilogue-subtile`."""
    swap_ab: bool | None = None
    """choose-schedule's `swap-ab`."""

    def choose_schedule(self) -> ChooseSchedule:
        """The choose-schedule pass with this pass's schedule options (for the cuda back end)."""
        names = {field.name for field in fields(ChooseSchedule)} - {"backend"}
        return ChooseSchedule(**{name: getattr(self, name) for name in names})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from mmcomp.arch import ptxas

        check_one_fusion(op, self.name)
        choose = self.choose_schedule()
        try:
            choose.overrides()
        except ScheduleError as error:
            raise DiagnosticException(f"{self.name}: option {error}") from error
        if not self.refit_spills or ptxas.find_tool("ptxas") is None:
            run_default_pipeline(ctx, op, choose)
            return
        source = op.clone()
        run_default_pipeline(ctx, op, choose)
        spilled = spilling_entries(op)
        if not spilled:
            return
        for function in _fusion_functions(source):
            name = function.sym_name.data
            if name not in spilled:
                continue
            self._refit(ctx, source, name, choose)
        run_default_pipeline(ctx, source, choose)
        _replace_body(op, source)

    def _refit(self, ctx: Context, source: ModuleOp, name: str, choose: ChooseSchedule) -> None:
        """Pin in `source` the first refit of function `name` that does not spill (the keys
        written on it and the schedule options kept)."""
        from mmcomp.passes.choose_schedule import written_params
        from mmcomp.schedule.spill_refit import SpilledError, fit

        plain = ChooseSchedule(schedule_m=self.schedule_m)  # the options are among the pins

        def build(pins: Mapping[str, object]) -> tuple[Mapping[str, object], ScheduleParams]:
            candidate = source.clone()
            try:
                _pin(candidate, name, pins)
                chosen = run_default_pipeline(ctx, candidate, plain)[name]
            except (DiagnosticException, VerifyException) as error:
                raise ScheduleError(str(error)) from None  # these settings do not apply
            report = spilling_entries(candidate).get(name)
            if report is not None:
                raise SpilledError(chosen, report)
            return pins, chosen

        try:
            given = {**written_params(_function(source, name)), **choose.overrides()}
            pins = fit(build, given)
        except ScheduleError as error:
            raise DiagnosticException(f"{self.name}: @{name}: {error}") from error
        _pin(source, name, pins)
