"""The instructions of the `hopper` dialect: mbarriers, wgmma, stores and ids.

An op that acts is a hopper instruction (`mmcomp.dialects.hopper.base`: ptx-style syntax,
an optional guard), one that only names a value (a ring's barrier, a descriptor, an
accumulator or its element, a pair of 16-bit floats) a hopper value op (no guard, a
declarative syntax); `convert-hopper-to-ptx` lowers each to one or a few ptx instructions,
or to the registers that hold its value. The mbarrier ops take typed values
(`mmcomp.dialects.hopper.types`): mbarriers from `hopper.ring_barrier` on a
`hopper.barrier_ring`; wgmma takes its accumulator as one value and returns the updated one
(`hopper.zero_accumulator` makes a fresh one, `hopper.accumulator_element` reads one
element of it, `hopper.accumulator` names the registers of one held in registers). The TMA
ops are in `mmcomp.dialects.hopper.tma`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    VectorType,
    i32,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.attrs import TileAttr
from mmcomp.dialects.hopper.base import (
    FreshValueOp,
    HopperInstruction,
    HopperValueOp,
    Implied,
    int_register,
    typed_value,
)
from mmcomp.dialects.hopper.smem import SmemType, shared_operand
from mmcomp.dialects.hopper.types import (
    BARRIER_BYTES,
    AccumulatorType,
    BarrierRingType,
    MatrixDescriptorType,
    MbarrierType,
)
from mmcomp.dialects.ptx import (
    F32,
    U32,
    RegType,
    check_below,
    check_choice,
    kind_of,
)
from mmcomp.ir.narrowing import is_int_attr, is_vector

# ----------------------------------------------------------------------------------------
# mbarriers
# ----------------------------------------------------------------------------------------


@irdl_op_definition
class BarrierRingOp(HopperValueOp):
    """The ring of mbarriers at a shared address: `stages` barriers of 8 bytes."""

    name = "hopper.barrier_ring"

    base = operand_def(RegType | SmemType)
    """Shared address of the first barrier (a 32-bit register, or an `!hopper.smem`
    aligned to 8 bytes)."""
    result = result_def(BarrierRingType)

    assembly_format = "$base attr-dict `:` functional-type($base, $result)"

    def __init__(self, base: SSAValue, ring: BarrierRingType):
        super().__init__(operands=[base], result_types=[ring])

    def verify_(self) -> None:
        shared_operand(self, "the base", self.base, BARRIER_BYTES)


def _barrier_of(ring: Attribute) -> Attribute:
    """The mbarrier type of a ring type."""
    assert isinstance(ring, BarrierRingType)
    return ring.barrier


@irdl_op_definition
class RingBarrierOp(HopperValueOp):
    """The mbarrier of one stage of a ring: `hopper.ring_barrier %ring[%stage]` (or `[2]`).

    The stage is an `index` value (a ring position's `hopper.ring_stage`), or a constant.
    """

    name = "hopper.ring_barrier"

    index = opt_prop_def(IntAttr)
    """The stage, when it is a constant."""
    RING: ClassVar = VarConstraint("RING", base(BarrierRingType))

    ring = operand_def(RING)
    """The ring."""
    stage = opt_operand_def(Implied(IndexType()))
    """The stage, when it is a value (an `index`)."""
    result = result_def(Implied(source="RING", rule=_barrier_of))
    """The ring's mbarrier (its type the ring type's barrier)."""

    assembly_format = (
        "$ring `[` ($stage^) : (custom<Int>($index))? `]` attr-dict `:` custom<Typed>(type($ring))"
    )

    def __init__(self, ring: SSAValue, stage: SSAValue | int):
        assert isinstance(ring.type, BarrierRingType)
        constant = isinstance(stage, int)
        super().__init__(
            properties={"index": IntAttr(stage) if constant else None},
            operands=[ring, [] if constant else [stage]],
            result_types=[ring.type.barrier],
        )

    @property
    def ring_type(self) -> BarrierRingType:
        """The type of the ring."""
        assert isinstance(self.ring.type, BarrierRingType)
        return self.ring.type

    def verify_(self) -> None:
        ring = self.ring_type
        if (self.index is None) == (self.stage is None):
            raise VerifyException(
                f"{self.name}: expected the stage as an index value or as a constant, not both"
            )
        if self.stage is not None:
            typed_value(self, "the stage", self.stage, IndexType())
        if self.index is not None and not 0 <= self.index.data < ring.stages.data:
            raise VerifyException(
                f"{self.name}: stage {self.index.data} is outside the ring of "
                f"{ring.stages.data} stages"
            )
        if self.result.type != ring.barrier:
            raise VerifyException(
                f"{self.name}: the result must be {ring.barrier}, the ring's barrier, found "
                f"{self.result.type}"
            )


@irdl_op_definition
class MbarrierInitOp(HopperInstruction):
    """Initialize an mbarrier with the arrival count of its type."""

    name = "hopper.mbarrier_init"

    barrier = operand_def(MbarrierType)
    """The mbarrier."""

    def __init__(self, barrier: SSAValue):
        super().__init__(operands=[barrier, []])

    @property
    def count(self) -> int:
        """Arrivals that complete a phase."""
        assert isinstance(self.barrier.type, MbarrierType)
        return self.barrier.type.count.data


@irdl_op_definition
class MbarrierArriveOp(HopperInstruction):
    """Arrive on an mbarrier: in this CTA, or (`cluster`) in another (from hopper.mapa)."""

    name = "hopper.mbarrier_arrive"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("scope",)

    scope = opt_prop_def(StringAttr)
    """`cluster` for a barrier of another CTA (from hopper.mapa); `cta` if absent."""
    barrier = operand_def(MbarrierType)
    """The mbarrier."""

    def __init__(self, barrier: SSAValue, scope: str | None = None):
        super().__init__(
            properties={"scope": StringAttr(scope) if scope else None}, operands=[barrier, []]
        )

    def verify_kinds(self) -> None:
        if self.scope is not None:
            check_choice(self, "scope", self.scope.data, ("cta", "cluster"))


@irdl_op_definition
class MbarrierArriveExpectTxOp(HopperInstruction):
    """Arrive on an mbarrier and add the bytes the phase's copies will complete."""

    name = "hopper.mbarrier_arrive_expect_tx"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("bytes",)

    bytes = prop_def(IntAttr)
    """Transaction bytes expected in this phase."""
    barrier = operand_def(MbarrierType)
    """The mbarrier."""

    def __init__(self, barrier: SSAValue, bytes: int):
        super().__init__(properties={"bytes": IntAttr(bytes)}, operands=[barrier, []])

    def verify_kinds(self) -> None:
        check_below(self, "transaction bytes", self.bytes.data, 0, 1 << 20, "2^20")


@irdl_op_definition
class MbarrierWaitOp(HopperInstruction):
    """Block until the mbarrier phase of the given parity has completed (try_wait loop)."""

    name = "hopper.mbarrier_wait"

    barrier = operand_def(MbarrierType)
    """The mbarrier."""
    phase = operand_def()
    """Parity (0 or 1) of the phase waited for, an `i32` (a `hopper.ring_phase`, or its
    flip)."""

    def __init__(self, barrier: SSAValue, phase: SSAValue):
        super().__init__(operands=[barrier, phase, []])

    def verify_kinds(self) -> None:
        typed_value(self, "the phase", self.phase, i32)


# ----------------------------------------------------------------------------------------
# wgmma
# ----------------------------------------------------------------------------------------

WGMMA_SHAPE = re.compile(r"^m64n(\d+)k(16|32)$")
WGMMA_TYPES = ("bf16", "f16", "f8e4m3", "f8e5m2")
FP8_WGMMA_TYPES = ("f8e4m3", "f8e5m2")
"""The 8-bit types: k32 instructions, both operands K-major; A and B may differ."""


def wgmma_instr_k(dtype: str) -> int:
    """The K of one wgmma on `dtype` operands: 32 for fp8, 16 for bf16 and f16."""
    return 32 if dtype in FP8_WGMMA_TYPES else 16


@irdl_custom_directive
class TileOrigin(CustomDirective):
    """The operand's origin in its tile, `{mn = 64, k = 16}`, always printed (either may be
    left out, 0); other entries of the dictionary are the op's attributes."""

    mn: AttributeVariable
    k: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        for key, value in parser.parse_optional_attr_dict().items():
            variable = {"mn": self.mn, "k": self.k}.get(key)
            if variable is None:
                state.attributes[key] = value
            elif isinstance(value, IntegerAttr):
                variable.set(state, IntAttr(value.value.data))
            else:
                parser.raise_error(f"{state.op_type.name}: {key} must be an integer, found {value}")

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        mn, k = self.mn.get(op), self.k.get(op)
        assert is_int_attr(mn) and is_int_attr(k)
        state.print_whitespace(printer)
        printer.print_string(f"{{mn = {mn.data}, k = {k.data}}}")


@irdl_op_definition
class MatrixDescriptorOp(HopperValueOp):
    """The shared-memory matrix descriptor of a wgmma operand inside a tile:
    `%d = hopper.matrix_descriptor %tile {mn = 64, k = 16} : (!hopper.smem<align 1024>)
    -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>`.

    `base` is the tile's shared address (aligned as its swizzle needs); the result's type
    gives the tile's layout; `mn` and `k` pick the operand's first row and K column in the
    tile (k a multiple of 16).
    """

    name = "hopper.matrix_descriptor"

    mn = prop_def(IntAttr, default_value=IntAttr(0))
    """First row (M or N) of the operand within the tile."""
    k = prop_def(IntAttr, default_value=IntAttr(0))
    """First K column of the operand within the tile."""
    base = operand_def()
    """The tile's shared address: an `!hopper.smem` aligned to the swizzle pattern (8 rows
    of the swizzle span), a ring slot's or an offset past one (`hopper.smem_index`)."""
    result = result_def()
    """The descriptor: a `!hopper.matrix_descriptor` of the tile's layout."""

    assembly_format = (
        "$base custom<TileOrigin>($mn, $k) attr-dict `:` functional-type($base, $result)"
    )
    custom_directives = (TileOrigin,)

    def __init__(self, base: SSAValue, tile: TileAttr, mn: int = 0, k: int = 0):
        super().__init__(
            properties={"mn": IntAttr(mn), "k": IntAttr(k)},
            operands=[base],
            result_types=[MatrixDescriptorType(tile)],
        )

    @property
    def tile(self) -> TileAttr:
        """The tile's layout (the result type's)."""
        descriptor = self.result.type
        assert isinstance(descriptor, MatrixDescriptorType)
        return descriptor.tile

    def verify_(self) -> None:
        if not isinstance(self.base.type, SmemType):
            raise VerifyException(
                f"{self.name}: the tile base must be an !hopper.smem shared address, found "
                f"{self.base.type}"
            )
        if not isinstance(self.result.type, MatrixDescriptorType):
            raise VerifyException(
                f"{self.name}: the result must be a !hopper.matrix_descriptor, found "
                f"{self.result.type}"
            )
        shared_operand(self, "the tile base", self.base, max(16, 8 * self.tile.swizzle.data))
        layout = self.tile.layout
        if not (0 <= self.mn.data < layout.mn and 0 <= self.k.data < layout.k):
            raise VerifyException(
                f"{self.name}: operand origin (mn {self.mn.data}, k {self.k.data}) lies "
                f"outside the {layout.mn}x{layout.k} tile"
            )
        try:
            layout.start_offset(self.mn.data, self.k.data)
        except ValueError as error:
            raise VerifyException(f"{self.name}: {error}") from error


@irdl_op_definition
class AccumulatorOp(HopperValueOp):
    """The wgmma accumulator held in these f32 registers, in fragment order:
    `%acc = hopper.accumulator %d0, ..., %d3 : !hopper.accumulator<64x8xf32>`."""

    name = "hopper.accumulator"

    registers = var_operand_def(Implied(F32))
    """This thread's f32 registers of the tile (n / 2)."""
    result = result_def(AccumulatorType)

    assembly_format = "$registers attr-dict `:` custom<Typed>(type($result))"

    def __init__(self, registers: Sequence[SSAValue], accumulator: AccumulatorType):
        super().__init__(operands=[list(registers)], result_types=[accumulator])

    def verify_(self) -> None:
        accumulator = self.result.type
        assert isinstance(accumulator, AccumulatorType)
        if len(self.registers) != accumulator.registers:
            raise VerifyException(
                f"{self.name}: {accumulator} is held in {accumulator.registers} f32 registers "
                f"per thread, found {len(self.registers)}"
            )
        for index, value in enumerate(self.registers):
            if not isinstance(value.type, RegType) or kind_of(value).name != "f32":
                raise VerifyException(
                    f"{self.name}: register {index} must be !ptx.reg<f32>, found {value.type}"
                )


@irdl_op_definition
class ZeroAccumulatorOp(FreshValueOp):
    """A fresh accumulator of zeros:
    `%acc = hopper.zero_accumulator : !hopper.accumulator<64x256xf32>`."""

    name = "hopper.zero_accumulator"

    result = result_def(AccumulatorType)
    """The accumulator, every element 0.0."""


@irdl_op_definition
class AccumulatorElementOp(HopperValueOp):
    """This thread's element `index` of an accumulator, in fragment order, as an f32 value
    (the epilogue's arith reads it; convert-hopper-to-ptx gives its register):
    `%e = hopper.accumulator_element %acc[5] : !hopper.accumulator<64x256xf32>`."""

    name = "hopper.accumulator_element"

    index = prop_def(IntAttr)
    """The element's position among this thread's n / 2 (fragment order)."""
    accumulator = operand_def(AccumulatorType)
    """The accumulator read."""
    result = result_def(Float32Type)
    """The element's value (f32)."""

    assembly_format = (
        "$accumulator `[` custom<Int>($index) `]` attr-dict `:` custom<Typed>(type($accumulator))"
    )

    def __init__(self, accumulator: SSAValue, index: int):
        super().__init__(
            properties={"index": IntAttr(index)},
            operands=[accumulator],
            result_types=[Float32Type()],
        )

    def verify_(self) -> None:
        accumulator = self.accumulator.type
        assert isinstance(accumulator, AccumulatorType)
        if not 0 <= self.index.data < accumulator.registers:
            raise VerifyException(
                f"{self.name}: index must be in [0, {accumulator.registers}) for {accumulator} "
                f"(its elements per thread), found {self.index.data}"
            )


@irdl_op_definition
class PromoteAccumulatorOp(HopperValueOp):
    """A K block's accumulator promoted into the main one with its block-wise scales:
    element i of the result is `acc[i] + partial[i] * scale`, `scale` the one of the
    element's row (fragment order: elements 4j and 4j + 1 are on the thread's first row,
    4j + 2 and 4j + 3 eight rows below), each one `fma.rn.f32` into the main accumulator's
    registers: `%acc2 = hopper.promote_accumulator %acc, %partial, %s_lo, %s_hi :
    !hopper.accumulator<64x128xf32>`."""

    name = "hopper.promote_accumulator"

    ACC: ClassVar = VarConstraint("ACC", base(AccumulatorType))

    accumulator = operand_def(ACC)
    """The main accumulator, which holds the result (updated in place)."""
    partial = operand_def(ACC)
    """The K block's accumulator, of the same shape."""
    row_scale = operand_def(Float32Type)
    """The scale of the thread's first row: the product of its a and b scales."""
    lower_row_scale = operand_def(Float32Type)
    """The scale of the row eight below."""
    result = result_def(ACC)
    """The promoted accumulator."""

    assembly_format = (
        "$accumulator `,` $partial `,` $row_scale `,` $lower_row_scale attr-dict `:` "
        "custom<Typed>(type($accumulator))"
    )

    def __init__(
        self, accumulator: SSAValue, partial: SSAValue, row_scale: SSAValue, lower: SSAValue
    ):
        super().__init__(
            operands=[accumulator, partial, row_scale, lower],
            result_types=[accumulator.type],
        )


@irdl_op_definition
class WgmmaMmaAsyncOp(HopperInstruction):
    """One warpgroup MMA, D (f32) += A * B, both operands from shared-memory descriptors.

    It takes the accumulator D and returns D + A * B (convert-hopper-to-ptx holds both in
    the same registers: the PTX instruction updates them in place).
    """

    name = "hopper.wgmma_mma_async"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("shape", "dtype")

    shape = prop_def(StringAttr)
    """`m64nNk16` (`m64nNk32` for fp8), N a multiple of 8 from 8 to 256."""
    dtype = prop_def(StringAttr)
    """Element type of A (and B unless `b_dtype`): bf16, f16, f8e4m3 or f8e5m2."""
    b_dtype = opt_prop_def(StringAttr)
    """Element type of B where it differs from A's (fp8 only: e4m3 x e5m2)."""
    a_major = prop_def(StringAttr, default_value=StringAttr("k"))
    """`k` or `mn`: the layout of A (its transpose bit)."""
    b_major = prop_def(StringAttr, default_value=StringAttr("k"))
    """`k` or `mn`: the layout of B (its transpose bit)."""
    scale_d = prop_def(IntAttr, default_value=IntAttr(1))
    """1: D += A * B; 0: D = A * B (the accumulator's values are ignored)."""
    a_desc = operand_def()
    """Descriptor of A (64 x 16): a `!hopper.matrix_descriptor`."""
    b_desc = operand_def()
    """Descriptor of B (N x 16): a `!hopper.matrix_descriptor`."""
    accumulator = operand_def(AccumulatorType)
    """The 64 x N f32 accumulator D."""
    result = result_def(AccumulatorType)
    """The accumulator after the MMA: D + A * B (A * B with scale_d 0)."""

    def __init__(
        self,
        dtype: str,
        a_desc: SSAValue,
        b_desc: SSAValue,
        accumulator: SSAValue,
        a_major: str = "k",
        b_major: str = "k",
        scale_d: int = 1,
        b_dtype: str | None = None,
    ):
        assert isinstance(accumulator.type, AccumulatorType)
        instr_k = wgmma_instr_k(dtype)
        super().__init__(
            properties={
                "shape": StringAttr(f"m64n{accumulator.type.n.data}k{instr_k}"),
                "dtype": StringAttr(dtype),
                "b_dtype": StringAttr(b_dtype) if b_dtype not in (None, dtype) else None,
                "a_major": StringAttr(a_major),
                "b_major": StringAttr(b_major),
                "scale_d": IntAttr(scale_d),
            },
            operands=[a_desc, b_desc, accumulator, []],
            result_types=[accumulator.type],
        )

    @property
    def n(self) -> int:
        """The N extent of the shape."""
        match = WGMMA_SHAPE.match(self.shape.data)
        return int(match.group(1)) if match else 0

    @property
    def operand_dtypes(self) -> tuple[str, str]:
        """The element types of A and B."""
        b_dtype = self.b_dtype.data if self.b_dtype is not None else self.dtype.data
        return (self.dtype.data, b_dtype)

    def verify_kinds(self) -> None:
        n = self.n
        instr_k = wgmma_instr_k(self.dtype.data)
        if n == 0 or n % 8 or not 8 <= n <= 256 or not self.shape.data.endswith(f"k{instr_k}"):
            raise VerifyException(
                f"{self.name}: shape must be m64nNk{instr_k} with N a multiple of 8 in "
                f"[8, 256], found '{self.shape.data}'"
            )
        check_choice(self, "dtype", self.dtype.data, WGMMA_TYPES)
        a_dtype, b_dtype = self.operand_dtypes
        fp8 = (a_dtype in FP8_WGMMA_TYPES, b_dtype in FP8_WGMMA_TYPES)
        if a_dtype != b_dtype and fp8 != (True, True):
            raise VerifyException(
                f"{self.name}: A and B differ in type ({a_dtype}, {b_dtype}); only the fp8 "
                "types mix"
            )
        if any(fp8) and "mn" in (self.a_major.data, self.b_major.data):
            raise VerifyException(
                f"{self.name}: fp8 operands must both be K-major (wgmma transposes 16-bit "
                f"operands only), found a_major '{self.a_major.data}', b_major "
                f"'{self.b_major.data}'"
            )
        check_choice(self, "a_major", self.a_major.data, ("k", "mn"))
        check_choice(self, "b_major", self.b_major.data, ("k", "mn"))
        if self.scale_d.data not in (0, 1):
            raise VerifyException(f"{self.name}: scale_d must be 0 or 1, found {self.scale_d.data}")
        for what, descriptor, major in (
            ("A", self.a_desc, self.a_major.data),
            ("B", self.b_desc, self.b_major.data),
        ):
            found = descriptor.type
            if not isinstance(found, MatrixDescriptorType):
                raise VerifyException(
                    f"{self.name}: the {what} descriptor must be a !hopper.matrix_descriptor, "
                    f"found {found}"
                )
            if found.tile.major.data != major:
                raise VerifyException(
                    f"{self.name}: {what.lower()}_major is '{major}' but the {what} "
                    f"descriptor's tile is {found.tile.major.data}_major"
                )
        accumulator = self.accumulator.type
        assert isinstance(accumulator, AccumulatorType)
        if accumulator.n.data != n:
            raise VerifyException(
                f"{self.name}: {self.shape.data} accumulates into a 64x{n} tile, found "
                f"{accumulator}"
            )
        if self.result.type != accumulator:
            raise VerifyException(
                f"{self.name}: the result must have the accumulator's type {accumulator}, "
                f"found {self.result.type}"
            )


# ----------------------------------------------------------------------------------------
# Epilogue stores and ids
# ----------------------------------------------------------------------------------------


STMATRIX_ROW_ALIGN = 16
"""Alignment of a row address of stmatrix, bytes (a row of an 8x8 b16 matrix)."""


@irdl_op_definition
class StmatrixOp(HopperInstruction):
    """Store 1, 2 or 4 8x8 b16 matrices from the warp's fragments to shared memory."""

    name = "hopper.stmatrix"

    trans = opt_prop_def(UnitAttr)
    """Store each 8x8 matrix transposed."""
    address = operand_def(SmemType)
    """This lane's row address, an `!hopper.smem` aligned to the 16 bytes of a matrix
    row."""
    values = var_operand_def(RegType | VectorType)
    """One 32-bit register (two b16) per matrix, or a pair of 16-bit floats
    (`vector<2xbf16>`, `vector<2xf16>`: a `hopper.truncf_pair`)."""

    def __init__(self, address: SSAValue, values: Sequence[SSAValue], trans: bool = False):
        super().__init__(
            properties={"trans": UnitAttr() if trans else None},
            operands=[address, list(values), []],
        )

    def verify_kinds(self) -> None:
        address = self.address.type
        if not isinstance(address, SmemType) or address.align.data < STMATRIX_ROW_ALIGN:
            raise VerifyException(
                f"{self.name}: the address must be a !hopper.smem aligned to "
                f"{STMATRIX_ROW_ALIGN} bytes (a matrix row), found {address}"
            )
        if len(self.values) not in (1, 2, 4):
            raise VerifyException(
                f"{self.name}: expected 1, 2 or 4 registers, found {len(self.values)}"
            )
        for index, value in enumerate(self.values):
            if is_vector(pair := value.type):
                element = pair.get_element_type()
                if pair.get_shape() != (2,) or not isinstance(element, BFloat16Type | Float16Type):
                    raise VerifyException(
                        f"{self.name}: value {index} must be a pair of 16-bit floats "
                        f"(vector<2xbf16>, vector<2xf16>), found {pair}"
                    )
                continue
            kind = kind_of(value)
            if kind.width != 32 or kind.category in ("f", "pred"):
                raise VerifyException(
                    f"{self.name}: value {index} must be a 32-bit register of two 16-bit "
                    f"elements (b32, bf16x2, f16x2), found !ptx.reg<{kind.name}>"
                )


@irdl_op_definition
class TruncfPairOp(HopperValueOp):
    """Two f32 values rounded to nearest even into one pair of 16-bit floats, the 32-bit
    register that stmatrix and a paired store take (element 0 in the low half):
    `%p = hopper.truncf_pair %lo, %hi : vector<2xbf16>`."""

    name = "hopper.truncf_pair"

    lo = operand_def(Float32Type)
    """Element 0 (the low 16 bits)."""
    hi = operand_def(Float32Type)
    """Element 1 (the high 16 bits)."""
    result = result_def(VectorType)
    """vector<2xbf16> or vector<2xf16>."""

    assembly_format = "$lo `,` $hi attr-dict `:` type($result)"

    def __init__(self, lo: SSAValue, hi: SSAValue, element: Attribute):
        super().__init__(operands=[lo, hi], result_types=[VectorType(element, [2])])

    def verify_(self) -> None:
        result = self.result.type
        assert isinstance(result, VectorType)
        element = result.get_element_type()
        if result.get_shape() != (2,) or not isinstance(element, BFloat16Type | Float16Type):
            raise VerifyException(
                f"{self.name}: the result must be vector<2xbf16> or vector<2xf16>, found {result}"
            )


IDS: dict[str, tuple[str, int, int]] = {
    **{f"thread.{d}": (f"tid.{d}", 0, 0) for d in "xyz"},
    **{f"cta.{d}": (f"ctaid.{d}", 0, 0) for d in "xyz"},
    **{f"cluster.{d}": (f"clusterid.{d}", 0, 0) for d in "xyz"},
    **{f"cta_in_cluster.{d}": (f"cluster_ctaid.{d}", 0, 0) for d in "xyz"},
    **{f"cluster_shape.{d}": (f"cluster_nctaid.{d}", 0, 0) for d in "xyz"},
    "cluster_cta_rank": ("cluster_ctarank", 0, 0),
    "cluster_size": ("cluster_nctarank", 0, 0),
    "lane": ("laneid", 0, 0),
    "warp": ("tid.x", 5, 0),
    "warpgroup": ("tid.x", 7, 0),
    "warp_in_warpgroup": ("tid.x", 5, 3),
    "thread_in_warpgroup": ("tid.x", 0, 127),
}
"""Ids readable with hopper.id: special register, right shift, then mask (0: none).

The warp and warpgroup ids are computed from %tid.x (a one-dimensional CTA)."""


@irdl_op_definition
class IdOp(HopperInstruction):
    """A thread, warp, warpgroup, CTA or cluster id: `%w = hopper.id warpgroup`."""

    name = "hopper.id"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("which",)

    which = prop_def(StringAttr)
    """A key of `IDS`."""
    result = result_def(RegType)

    def __init__(self, which: str):
        super().__init__(properties={"which": StringAttr(which)}, operands=[[]], result_types=[U32])

    def verify_kinds(self) -> None:
        if self.which.data not in IDS:
            raise VerifyException(
                f"{self.name}: unknown id '{self.which.data}', expected one of {', '.join(IDS)}"
            )
        int_register(self, "the result", self.result, (32,))


@irdl_op_definition
class MapaOp(HopperInstruction):
    """The mbarrier at the same shared offset in the CTA of the given cluster rank."""

    name = "hopper.mapa"

    barrier = operand_def(MbarrierType)
    """An mbarrier of this CTA."""
    rank = operand_def(RegType)
    """The target CTA's rank in the cluster."""
    result = result_def(MbarrierType)
    """The target CTA's mbarrier (a shared::cluster address: arrive with scope cluster)."""

    def __init__(self, barrier: SSAValue, rank: SSAValue):
        super().__init__(operands=[barrier, rank, []], result_types=[barrier.type])

    def verify_kinds(self) -> None:
        int_register(self, "the rank", self.rank, (32,))
        if self.result.type != self.barrier.type:
            raise VerifyException(
                f"{self.name}: the result must have the barrier's type {self.barrier.type}, "
                f"found {self.result.type}"
            )
