"""The element accesses of the `hopper` dialect: the epilogue's loads and stores of typed
values.

The epilogue reads its operands and writes its outputs element by element on the
accumulator layout. These ops take the values themselves (f32, bf16, f16 scalars, or a
`hopper.truncf_pair` of two 16-bit floats) and an address of the level's own arithmetic: a
64-bit global address as an `i64` (the sum of an array's address and a byte offset,
`arith` on i64), a shared one as an `!hopper.smem` (`hopper.smem_add`,
`hopper.smem_index`). Each is one vector `ld` / `st` after convert-hopper-to-ptx, guarded
like the op (an i1 bounds test of the level's arithmetic). `hopper.global_load_index` reads
a u32 word as an index value (a grouped kernel's group offsets and counts);
`hopper.smem_load` reads words of a staged output box back as f32 values (their bits,
whatever the box holds), which `hopper.global_store` writes out.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.base import HopperInstruction
from mmcomp.dialects.hopper.smem import SmemType
from mmcomp.ir.narrowing import is_vector

ELEMENT_BYTES: dict[type[Attribute], int] = {
    Float32Type: 4,
    BFloat16Type: 2,
    Float16Type: 2,
    Float8E4M3FNType: 1,
    Float8E5M2Type: 1,
}
"""The bytes of each element type a global access moves (fp8 only in pairs)."""

PAIRED = BFloat16Type | Float16Type | Float8E4M3FNType | Float8E5M2Type
"""The element types of a stored pair (`hopper.truncf_pair`)."""


def _element_bytes(what: str, value: SSAValue) -> int:
    """The bytes of one stored or loaded value: an f32, bf16 or f16 scalar, or a pair of
    16-bit floats (`vector<2xbf16>`, `vector<2xf16>`) or of fp8 (`vector<2xf8E4M3FN>`,
    `vector<2xf8E5M2>`)."""
    element: Attribute = value.type
    count = 1
    if is_vector(pair := value.type):
        shape, element = pair.get_shape(), pair.get_element_type()
        count = 2
        if shape != (2,) or not isinstance(element, PAIRED):
            raise VerifyException(
                f"{what} must be a pair of 16-bit floats (vector<2xbf16>, vector<2xf16>) or "
                f"of fp8 (vector<2xf8E4M3FN>, vector<2xf8E5M2>), found {value.type}"
            )
    size = ELEMENT_BYTES.get(type(element))
    if size is None:
        raise VerifyException(f"{what} must be an f32, bf16 or f16 value, found {value.type}")
    return count * size


def _check_vector(name: str, values: Sequence[SSAValue], offset: IntAttr | None) -> None:
    """1, 2 or 4 values of one type, at an offset that is a multiple of their bytes."""
    if len(values) not in (1, 2, 4):
        raise VerifyException(f"{name}: expected 1, 2 or 4 values, found {len(values)}")
    if len({value.type for value in values}) != 1:
        types = ", ".join(str(value.type) for value in values)
        raise VerifyException(f"{name}: the values must have one type, found {types}")
    vector_bytes = len(values) * _element_bytes(f"{name}: a value", values[0])
    at = offset.data if offset is not None else 0
    if at % vector_bytes:
        raise VerifyException(
            f"{name}: offset {at} is not a multiple of the vector's {vector_bytes} bytes"
        )


@irdl_op_definition
class GlobalLoadOp(HopperInstruction):
    """Load 1, 2 or 4 consecutive elements of global memory as typed values (one vector
    `ld.global`): `%lo, %hi = hopper.global_load %address if %in_bounds {offset = 4} :
    (i64, i1) -> (bf16, bf16)`. Guarded and `zero_fill`, the values are 0 where the guard
    fails; else they are left undefined there."""

    name = "hopper.global_load"

    offset = opt_prop_def(IntAttr)
    """Bytes past the address, a multiple of the vector's."""
    zero_fill = opt_prop_def(UnitAttr)
    """Present when the values are 0 where the guard fails (their registers then hold
    nothing from before the load: an undefined value of a guarded load would live in its
    register across every loop around it)."""
    address = operand_def(i64)
    """The first element's 64-bit global address."""
    values = var_result_def(Float32Type | BFloat16Type | Float16Type)
    """The loaded elements, in address order."""

    def __init__(
        self,
        address: SSAValue,
        element: Attribute,
        count: int = 1,
        offset: int = 0,
        zero_fill: bool = False,
    ):
        super().__init__(
            properties={
                "offset": IntAttr(offset) if offset else None,
                "zero_fill": UnitAttr() if zero_fill else None,
            },
            operands=[address, []],
            result_types=[[element] * count],
        )

    def verify_kinds(self) -> None:
        _check_vector(self.name, list(self.values), self.offset)


@irdl_op_definition
class GlobalLoadIndexOp(HopperInstruction):
    """Load one 32-bit unsigned word of global memory as an index value of the level's
    arithmetic (one `ld.global.u32`): a grouped kernel's group offset or row count, read
    on the device: `%end = hopper.global_load_index %address : (i64) -> index`."""

    name = "hopper.global_load_index"

    address = operand_def(i64)
    """The word's 64-bit global address."""
    value = result_def(IndexType)
    """The word, zero-extended: an index value."""

    def __init__(self, address: SSAValue):
        super().__init__(operands=[address, []], result_types=[IndexType()])


@irdl_op_definition
class SmemLoadOp(HopperInstruction):
    """Load 1, 2 or 4 consecutive 32-bit words of shared memory as f32 values (one vector
    `ld.shared`), their bits unchanged: `%a, %b, %c, %d = hopper.smem_load %chunk {offset =
    2048} : (!hopper.smem<align 16>) -> (f32, f32, f32, f32)`."""

    name = "hopper.smem_load"

    offset = opt_prop_def(IntAttr)
    """Bytes past the address, a multiple of the vector's."""
    address = operand_def(SmemType)
    """The first word's address, an `!hopper.smem` aligned to the vector's bytes."""
    values = var_result_def(Float32Type)
    """The loaded words, in address order."""

    def __init__(self, address: SSAValue, count: int = 4, offset: int = 0):
        super().__init__(
            properties={"offset": IntAttr(offset) if offset else None},
            operands=[address, []],
            result_types=[[Float32Type()] * count],
        )

    def verify_kinds(self) -> None:
        _check_vector(self.name, list(self.values), self.offset)
        _check_smem_alignment(self.name, self.address, 4 * len(self.values), "loaded")


def _check_smem_alignment(name: str, address: SSAValue, vector_bytes: int, what: str) -> None:
    """`address` is an `!hopper.smem` aligned to the accessed vector's bytes."""
    smem = address.type
    if not isinstance(smem, SmemType) or smem.align.data < vector_bytes:
        raise VerifyException(
            f"{name}: the address must be a !hopper.smem aligned to {vector_bytes} bytes (the "
            f"{what} vector), found {smem}"
        )


class VectorStore(HopperInstruction, ABC):
    """Base of the stores of 1, 2 or 4 values at an address and a byte offset."""

    def __init__(self, address: SSAValue, values: Sequence[SSAValue], offset: int = 0):
        super().__init__(
            properties={"offset": IntAttr(offset) if offset else None},
            operands=[address, list(values), []],
        )


@irdl_op_definition
class GlobalStoreOp(VectorStore):
    """Store 1, 2 or 4 typed values to consecutive elements of global memory (one vector
    `st.global`): `hopper.global_store %address, %pair if %in_bounds : (i64,
    vector<2xbf16>, i1) -> ()`."""

    name = "hopper.global_store"

    offset = opt_prop_def(IntAttr)
    """Bytes past the address, a multiple of the vector's."""
    address = operand_def(i64)
    """The first element's 64-bit global address."""
    values = var_operand_def(Float32Type | BFloat16Type | Float16Type | VectorType)
    """The stored values, in address order: f32, bf16 or f16 scalars, or pairs of 16-bit
    floats (`hopper.truncf_pair`)."""

    def verify_kinds(self) -> None:
        _check_vector(self.name, list(self.values), self.offset)


@irdl_op_definition
class SmemStoreOp(VectorStore):
    """Store 1, 2 or 4 f32 values to consecutive words of shared memory (one vector
    `st.shared`): `hopper.smem_store %row, %a, %b {offset = 1024} : (!hopper.smem<align
    8>, f32, f32) -> ()`."""

    name = "hopper.smem_store"

    offset = opt_prop_def(IntAttr)
    """Bytes past the address, a multiple of the vector's."""
    address = operand_def(SmemType)
    """The first word's address, an `!hopper.smem` aligned to the vector's bytes."""
    values = var_operand_def(Float32Type)
    """The stored f32 values, in address order."""

    def verify_kinds(self) -> None:
        _check_vector(self.name, list(self.values), self.offset)
        _check_smem_alignment(self.name, self.address, 4 * len(self.values), "stored")
