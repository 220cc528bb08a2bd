"""`convert-scf-to-ptx`: lower the structured control flow of each ptx entry to labels and
branches.

`lower-schedule-to-hopper` keeps the kernel's control flow structured: each counted loop
(the persistent loop, the K loops, the split-K and stream-K loops) is an `scf.for`, each
branch (an `scf.if` of the schedule, the warp-role dispatch, the ping-pong turn, the
skipped order wait and load) an `scf.if`, their bodies the ptx and hopper instructions
and the index arithmetic of the kernel. Each op carries the names of the labels it
becomes (`ptx.labels`, made in emission order by the builder), and this pass writes it
as the labels and branches that a hand-written kernel would, one pattern per op:

- `scf.for %iv = %lb to %ub step %step` (labels `[head, end]`) becomes
  `iv = mov lb; head: p = setp.hs iv, ub; @p bra end; <body>; end:`, the body reading
  the induction variable's register `iv` where it read the block argument;
- its `scf.yield` becomes the back edge `iv' = add iv, step; assign iv, iv'; bra head`;
- a value it carries (`iter_args`: an index value, the tile counter or the previous
  stage; a `!ptx.reg`, the stream-K sums) lives in one register: a `!ptx.reg`'s init's
  register, or a fresh one that the init is moved into before the loop (`mov`) where the
  init is an index value (its u32 register), a cast of one, or already carried by the
  loop. An index value is that register read as an index through a cast. The body reads that
  register where it read the block argument (and may write it in place, `ptx.assign`);
  the yield assigns each yielded value to it at the end of the body, before the back
  edge, unless the value is the block argument itself; the loop's results are that
  register. A yield that passes one carried value on as another (a permutation) is
  refused;
- a carried accumulator (`!hopper.accumulator`, the wgmma tiles of a K loop) is held in
  its init's registers, which the loop's wgmmas update in place: no `mov`, no assign; the
  body and the code after the loop read those registers. Its yield must be held in them
  too (the block argument as the body's wgmmas updated it), else the loop is refused, as
  is a loop that carries two accumulators in the same registers. A carried ring
  position (`!hopper.ring_position`) likewise lives in its init's (stage, phase)
  registers, which the body's advances write in place: its yield must be held in them
  (the block argument as the advances moved it), and two carried positions need
  registers of their own. The casts that carried accumulators and positions through the
  loops are erased once unused;
- `scf.if %c` with labels `[else, end]` becomes `@!p bra else; <then>; bra end; else:
  <else>; end:` (its then-block's `scf.yield` is the `bra end`), with one label `[end]`
  (no else-region) `@!p bra end; <then>; end:`. `p` is the predicate register behind the
  condition's cast, the i1 condition itself of an `scf.if` marked `ptx.predicate` (a
  comparison or conjunction of the lowering, which convert-arith-to-ptx lowers to its
  predicate register), or `setp.ne` of an i1 of the index arithmetic against 0; a
  condition `arith.xori %c, true` branches on `@p` instead. An `scf.if` whose one label is
  the end label of the `scf.if` around it, and which ends that one's region, branches
  straight to it (the outer op places the label).

The bounds, the step and the conditions reach the ops through
`builtin.unrealized_conversion_cast` from registers, or are index values of the
arithmetic; the pass reads the register behind a cast, and casts an index value to
`!ptx.reg<u32>`, which `convert-arith-to-ptx` resolves when it lowers the arithmetic.

An `scf.if`'s results can only be ring positions (the ping-pong turn's, the load
ahead's): both regions must yield each held in the same registers, the code after the
branch reads those registers, and an else-region that only yields them is no code and no
label. A register that a branch writes is the one a loop around it carries.

It runs after `convert-hopper-to-ptx` (the hopper ops inside the regions are lowered
first; either order gives the same instructions: run first, it lowers the control flow of
the `hopper.kernel` in place) and before `convert-arith-to-ptx`, which refuses an entry
that still holds an scf op. A `func.func` that the pipeline has not yet lowered to a
hopper.kernel or a ptx.module is an error naming the passes to run first.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mmcomp.analysis.warp_roles import check_lowered_to_ptx
from mmcomp.dialects import hopper, ptx
from mmcomp.lowering.scf_to_ptx.control_flow import NAME, lower_control_flow


class ConvertScfToPtx(ModulePass):
    """Lower the scf.for / scf.if of the module's ptx entries (and hopper kernels) to labels
    and branches."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Lower every entry's structured control flow; a kernel or fusion still in a
        func.func is an error."""
        del ctx
        check_lowered_to_ptx(self.name, op, hopper_kernels=True)
        kernels = [
            kernel for kernel in op.walk() if isinstance(kernel, ptx.EntryOp | hopper.KernelOp)
        ]
        for kernel in kernels:
            lower_control_flow(kernel)
