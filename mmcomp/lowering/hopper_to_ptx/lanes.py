"""The values exchanged between lanes as ptx: `hopper.shuffle_xor` -> `shfl.sync.bfly.b32`."""

from __future__ import annotations

from xdsl.dialects.builtin import UnrealizedConversionCastOp
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mmcomp.dialects import hopper, ptx
from mmcomp.lowering.hopper_to_ptx.registers import f32_register


class LowerShuffleXor(RewritePattern):
    """Another lane's f32 value: one `shfl.sync.bfly.b32` of the value's register (the
    f32 register itself: a 32-bit instruction takes any 32-bit register), read as an f32
    through a cast."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.ShuffleXorOp, rewriter: PatternRewriter) -> None:
        """Rewrite a butterfly shuffle."""
        value_ops, register = f32_register(op.value)
        shuffle = ptx.ShflSyncOp(register, op.mask.data)
        cast = UnrealizedConversionCastOp.get([shuffle.result], [op.result.type])
        rewriter.replace(op, [*value_ops, shuffle, cast], cast.results)


LANE_PATTERNS: tuple[RewritePattern, ...] = (LowerShuffleXor(),)
"""The patterns of the lane exchanges."""
