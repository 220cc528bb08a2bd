"""The hopper level's kernel: `hopper.kernel` and the typed reads of its parameters.

`hopper.kernel` is what `lower-schedule-to-hopper` makes of a partitioned kernel: its name,
its parameters with their launch data (`#ptx.param`, mmcomp.dialects.ptx.launch), the
register cap and block size, the launch (grid, cluster, shared memory) and the dynamic
shared-memory array the body's `hopper.shared_base` reads:

    hopper.kernel @linear(arg0 : ptr<role = input, name = "a", shape = [4096, 5120],
                          dtype = bf16>, ..., tmap0 : tmap<arg = 0, ...>)
        maxnreg 168 reqntid [384] launch<grid = 132, smem = 182272, persistent = true>
        shared @mmcomp_shared align 1024 {
      %a = hopper.array_param arg0 : memref<4096x5120xbf16>
      %m = hopper.extent_param arg3 : index
      %t = hopper.tensormap_param tmap0 : !hopper.tensormap<...>
      ...
    }

The body reads each parameter as a typed value: a pointer parameter as the kernel's array
(`hopper.array_param`, a memref, `?` for the extents known at launch), a runtime extent as
an `index` (`hopper.extent_param`), a tensor map as a `!hopper.tensormap`
(`hopper.tensormap_param`). `convert-hopper-to-ptx` makes the kernel a `ptx.module` of a
`ptx.shared` and a `ptx.entry` with the same signature, and each parameter read the
`ptx.ld_param` of its register.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Self

from xdsl.dialects.builtin import (
    IndexType,
    IntAttr,
    IntegerType,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.base import HopperValueOp
from mmcomp.dialects.hopper.layout import check_ring_layout
from mmcomp.dialects.hopper.smem import SharedBaseOp
from mmcomp.dialects.ptx import (
    DYNAMIC,
    EntryOp,
    KernelArray,
    KernelArrayAttr,
    KernelSignatureOp,
    Launch,
    ParamAttr,
    Signature,
    is_identifier,
    print_signature,
    verify_signature,
)
from mmcomp.ir import dtypes


@irdl_op_definition
class KernelOp(KernelSignatureOp):
    """A kernel at the hopper level: signature, launch, dynamic shared memory and a body of
    hopper ops on typed values."""

    name = "hopper.kernel"

    shared = opt_prop_def(StringAttr)
    """The name of the dynamic shared-memory array (`.extern .shared`), if any."""
    shared_align = prop_def(IntAttr, default_value=IntAttr(16))
    """The alignment of the dynamic shared-memory array, bytes."""

    traits = traits_def(NoTerminator(), IsolatedFromAbove())

    def __init__(
        self,
        sym_name: str,
        params: Sequence[ParamAttr | tuple[str, str]] = (),
        *,
        maxnreg: int | None = None,
        reqntid: Sequence[int] | None = None,
        launch: Launch | None = None,
        shared: str | None = None,
        shared_align: int = 16,
        ops: Iterable[Operation] = (),
    ):
        super().__init__(
            sym_name,
            params,
            maxnreg=maxnreg,
            reqntid=reqntid,
            launch=launch,
            ops=ops,
            properties={
                "shared": None if shared is None else StringAttr(shared),
                "shared_align": IntAttr(shared_align),
            },
        )

    def verify_(self) -> None:
        where = f"{self.name} @{self.sym_name.data}"
        verify_signature(where, self.sym_name, self.params, self.maxnreg, self.reqntid)
        align = self.shared_align.data
        if align <= 0 or align & (align - 1):
            raise VerifyException(
                f"{where}: the shared memory's alignment must be a power of two, found {align}"
            )
        if self.shared is not None and not is_identifier(self.shared.data):
            raise VerifyException(
                f"{where}: the shared memory's name '{self.shared.data}' is not a valid PTX "
                "identifier"
            )
        declared = None if self.shared is None else self.shared.data
        for op in self.body.walk():
            if not isinstance(op, SharedBaseOp) or op.symbol.data == declared:
                continue
            found = "declares none" if declared is None else f"is '{declared}'"
            raise VerifyException(
                f"{where}: {op.name} reads the shared array '{op.symbol.data}', but the "
                f"kernel's dynamic shared memory {found}"
            )
        smem = None if self.launch is None else self.launch.data.smem
        check_ring_layout(where, self.body.block, smem)

    def print(self, printer: Printer) -> None:
        print_signature(
            printer, self.sym_name, self.params, self.maxnreg, self.reqntid, self.launch
        )
        if self.shared is not None:
            printer.print_string(" shared ")
            printer.print_symbol_name(self.shared.data)
            printer.print_string(f" align {self.shared_align.data}")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        signature = Signature.parse(parser, "hopper.kernel")
        shared = None
        align = 16
        if parser.parse_optional_keyword("shared"):
            shared = parser.parse_symbol_name().data
            parser.parse_keyword("align", " (the shared memory's alignment)")
            align = parser.parse_integer(allow_boolean=False)
        op = cls(
            signature.name,
            signature.params,
            maxnreg=signature.maxnreg,
            reqntid=signature.reqntid,
            launch=signature.launch,
            shared=shared,
            shared_align=align,
        )
        body = parser.parse_region()
        if body.blocks:
            op.body.detach_block(op.body.block).erase()
            op.body.add_block(body.detach_block(body.block))
        return op


def kernel_param(op: Operation, name: str, kind: str) -> ParamAttr | None:
    """The parameter `name` of the kernel (`hopper.kernel` or `ptx.entry`) around `op`,
    which must be of `kind`; None where `op` is in neither."""
    kernel = op.parent_op()
    if not isinstance(kernel, KernelOp | EntryOp):
        return None
    param = kernel.param(name)
    if param is None or param.kind.data != kind:
        found = "no such parameter" if param is None else f"a {param.kind.data} parameter"
        raise VerifyException(
            f"{op.name}: '{name}' must be a {kind} parameter of {kernel.name} "
            f"@{kernel.sym_name.data}, found {found}"
        )
    return param


class ParamReadOp(HopperValueOp):
    """Base of the reads of a kernel parameter as a typed value: `%v = hopper.op NAME :
    type`."""

    # Not a format, which would refuse another result type while parsing: the verifier does.

    param = prop_def(StringAttr)
    """The kernel parameter read."""

    def __init__(self, param: str, result_type: Attribute):
        super().__init__(properties={"param": StringAttr(param)}, result_types=[result_type])

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.param.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        param = parser.parse_identifier(context_msg=" (a kernel parameter)")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(param, parser.parse_type())
        op.attributes.update(attributes)
        return op


@irdl_op_definition
class ArrayParamOp(ParamReadOp):
    """The array of a `ptr` kernel parameter, typed as the kernel's memref (`?` for the
    extents known at launch)."""

    name = "hopper.array_param"

    result = result_def(MemRefType)
    """The array."""

    traits = traits_def(HasParent(KernelOp))

    def verify_(self) -> None:
        param = kernel_param(self, self.param.data, "ptr")
        if param is None or not isinstance(param.info, KernelArrayAttr):
            return
        array = param.info.data
        memref = self.result.type
        assert isinstance(memref, MemRefType)
        if not fits(memref, array):
            dims = ", ".join("?" if e == DYNAMIC else str(e) for e in array.shape)
            raise VerifyException(
                f"{self.name}: the type of '{self.param.data}' must be a view that fits in the "
                f"array its launch data describes ([{dims}] of {array.dtype}: no more "
                f"elements, the same `?` extents and element type), found {memref}"
            )


def fits(memref: MemRefType, array: KernelArray) -> bool:
    """The memref is a view that fits in the launch data's array: no more elements (a
    split-K workspace holds whole fragment tiles, which the view of an M = 1 fusion indexes
    with unit axes: memref<2x4x1x128xf32> in [2, 4, 128, 128]), its `?` extents, and its
    element type (integers are passed as i32)."""
    shape = tuple(memref.get_shape())
    if shape.count(DYNAMIC) != array.shape.count(DYNAMIC):
        return False
    if math.prod(e for e in shape if e != DYNAMIC) > math.prod(
        e for e in array.shape if e != DYNAMIC
    ):
        return False
    element = memref.get_element_type()
    if isinstance(element, IntegerType | IndexType):
        return array.dtype == "i32"
    known = dtypes.of_element_type(element)
    return (known.name if known is not None else str(element)) == array.dtype


@irdl_op_definition
class ExtentParamOp(ParamReadOp):
    """A runtime extent of the kernel (a `u32` parameter), as an `index` value."""

    name = "hopper.extent_param"

    result = result_def(IndexType)
    """The extent."""

    traits = traits_def(HasParent(KernelOp))

    def verify_(self) -> None:
        kernel_param(self, self.param.data, "u32")
