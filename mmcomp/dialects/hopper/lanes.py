"""Values exchanged between the lanes of a warp.

`hopper.shuffle_xor` reads an f32 value of the lane whose id is this lane's xor a mask,
every lane of the warp taking part: the step of a butterfly reduction. The quantizing
epilogue takes the largest magnitude of a row's group over the four lanes of a quad that
hold the row (masks 1 and 2). convert-hopper-to-ptx makes it one
`shfl.sync.bfly.b32` of the value's register.
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, IntAttr
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.base import HopperValueOp

WARP_LANES = 32
"""The lanes of a warp."""


@irdl_op_definition
class ShuffleXorOp(HopperValueOp):
    """The value of the lane `lane ^ mask` of this warp (every lane of the warp executes it,
    converged): `%other = hopper.shuffle_xor %value, 1 : f32`."""

    name = "hopper.shuffle_xor"

    mask = prop_def(IntAttr)
    """The xor of the lane ids, 1 to 31."""
    value = operand_def(Float32Type)
    """This lane's value (f32), which lane `lane ^ mask` reads."""
    result = result_def(Float32Type)
    """The value of lane `lane ^ mask`."""

    assembly_format = "$value `,` custom<Int>($mask) attr-dict `:` type($value)"

    def __init__(self, value: SSAValue, mask: int):
        super().__init__(
            operands=[value], properties={"mask": IntAttr(mask)}, result_types=[Float32Type()]
        )

    def verify_(self) -> None:
        if not 0 < self.mask.data < WARP_LANES:
            raise VerifyException(
                f"{self.name}: the lane mask must be in [1, {WARP_LANES}), found {self.mask.data}"
            )
