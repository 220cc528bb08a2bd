"""`compile-to-ptx`: the default pipeline, from a fusion-dialect module to a ptx module.

It runs `mmcomp.registry.DEFAULT_PIPELINE` in order (propagate-axis-mapping,
choose-schedule, tile-split, tile-merge, split-k, insert-persistent-loop,
materialize-schedule, partition-warp-roles, lower-schedule-to-hopper,
convert-hopper-to-ptx), so that

    mmcomp-opt fusion.mlir -p compile-to-ptx -t ptx

prints the kernel's PTX. `--print-between-passes` shows only the module before and after;
to see each stage, pass the list itself to `-p`.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mmcomp.registry import DEFAULT_PIPELINE, PASSES


class CompileToPtx(ModulePass):
    """Run the default pipeline: fusion in, ptx module (with its hopper ops lowered) out."""

    name = "compile-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for name in DEFAULT_PIPELINE:
            PASSES[name]()().apply(ctx, op)
