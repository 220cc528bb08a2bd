"""`convert-hopper-to-ptx`: lower every hopper op to ptx instructions.

Each `hopper.kernel` becomes a `ptx.module` of a `ptx.shared ... dynamic` (its dynamic
shared memory, if any) and a `ptx.entry` of the same name, parameters, launch data,
`maxnreg` and `reqntid`, its lowered body moved in last. A parameter read
(`hopper.array_param` / `hopper.extent_param`) becomes the `ptx.ld_param` of its u64 /
u32 register in its place (kept where unread: the PTX loads every parameter).

Most hopper ops become the one ptx op they stand for (`hopper.tma_load` ->
`ptx.tma_load`, ...). `hopper.mbarrier_wait` becomes a `mbarrier.try_wait.parity` loop
with a fresh label, `hopper.matrix_descriptor` `((base + offset) >> 4) & 0x3FFF` ORed
with its tile layout's constant fields (`mmcomp.arch.smem_layout`), `hopper.id` a special
register shifted / masked.

The typed values (`mmcomp.dialects.hopper.types`) become the registers that hold them, one
pattern per op that makes one:

- tensor maps, barriers, accumulators: `hopper.tensormap_param` the parameter's address
  converted to generic (b64); `hopper.barrier_ring` the address of its first barrier,
  `hopper.ring_barrier` 8 bytes per stage on, `hopper.mapa` another CTA's address;
  `hopper.accumulator` its f32 registers, `hopper.zero_accumulator` n / 2 fresh ones set
  to 0.0, `hopper.accumulator_element` one of them (read as an f32 through a cast),
  `hopper.truncf_pair` one `cvt.rn.bf16x2.f32` (f16x2), `hopper.shuffle_xor` one
  `shfl.sync.bfly.b32` of its f32 register, `hopper.wgmma_mma_async` the
  registers of the accumulator it takes, which `ptx.wgmma` updates in place;
- shared memory, one u32 register each: `hopper.shared_base` the array's address rounded
  up to the alignment, `hopper.smem_offset` an add, `hopper.smem_index` a `mad` of its
  index and stride onto the base, `hopper.slot_ring` its base's, `hopper.slot_stage` a
  `mad` of the position's stage and the stage's bytes, `hopper.ring_slot` an add;
- ring positions: `hopper.ring_start` two fresh u32 registers set to 0 (stage, phase);
  `hopper.ring_advance` / `hopper.ring_advance_by` write the next position into the
  registers of the one they take (the predicated wrap, the division by the depth);
  `hopper.ring_stage` / `hopper.ring_phase` the register they read (an `index` / `i32`
  through a cast), or a copy of it (`mov`) where the read is used after an advance of its
  position (the K loop's yield of the previous stage).

The epilogue's element accesses (`mmcomp.lowering.hopper_to_ptx.access`) become one
vector `ld` / `st` each: `hopper.global_load` at its i64 address's u64 register, its
results the loaded registers read through casts; `hopper.global_store` and
`hopper.smem_store` of their values' registers.

Each leaves its registers behind a `builtin.unrealized_conversion_cast` to the value's
type, through which the patterns of the ops that use the value read them (a cast to a
register type, or to `index` for the arithmetic, becomes the register or a cast of it);
the casts, unused once every hopper op is lowered, are erased last.

A guarded hopper op stays guarded: each instruction it becomes is predicated, except the
wait loop, which is branched around when the guard is false.

The pass runs before `convert-arith-to-ptx`: the copies' coordinates are `index` values of
the schedule's arithmetic, which the ptx copies read through a cast to `!ptx.reg<u32>`;
convert-arith-to-ptx then lowers the arithmetic and folds the casts.

A `func.func` that the pipeline has not yet lowered to a hopper.kernel (a partitioned or
materialized kernel, a fusion) is an error naming the passes to run first; plain functions
are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mmcomp.analysis.warp_roles import check_lowered_to_ptx
from mmcomp.arch.smem_layout import Major, descriptor_base
from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.ptx.module import carried_label_names
from mmcomp.lowering.hopper_to_ptx.access import ACCESS_PATTERNS
from mmcomp.lowering.hopper_to_ptx.lanes import LANE_PATTERNS
from mmcomp.lowering.hopper_to_ptx.registers import (
    Emitter,
    address_of,
    coordinate_registers,
    f32_register,
    guarded,
    integer_register,
    reg_type,
    register_of,
    registers_of,
    replace_by_registers,
)


@dataclass
class _Labels:
    """Fresh label names, unique in the module."""

    used: set[str] = field(default_factory=set[str])
    count: int = 0

    def fresh(self, stem: str) -> str:
        """A label not used before."""
        while True:
            self.count += 1
            name = f"{stem}_{self.count}"
            if name not in self.used:
                self.used.add(name)
                return name


def _lower_tensor_map_prefetch(op: hopper.TensorMapPrefetchOp, out: Emitter) -> None:
    out.emit(ptx.InstOp("prefetch.tensormap [{0}]", [register_of(op.tensor_map)]))


def _lower_tma_load(op: hopper.TmaLoadOp, out: Emitter) -> None:
    tensor_map = register_of(op.tensor_map)
    barrier = register_of(op.barrier)
    coordinates = coordinate_registers(op.coordinates, out)
    dst = address_of(op.dst)
    if op.cta_mask is None:
        out.emit(ptx.TmaLoadOp(dst, tensor_map, barrier, coordinates))
        return
    out.emit(ptx.TmaLoadMulticastOp(dst, tensor_map, barrier, op.cta_mask, coordinates))


def _lower_tma_store(op: hopper.TmaStoreOp, out: Emitter) -> None:
    coordinates = coordinate_registers(op.coordinates, out)
    out.emit(ptx.TmaStoreOp(address_of(op.src), register_of(op.tensor_map), coordinates))


def _lower_mbarrier_init(op: hopper.MbarrierInitOp, out: Emitter) -> None:
    out.emit(ptx.MbarrierInitOp(register_of(op.barrier), op.count))


def _lower_mbarrier_arrive(op: hopper.MbarrierArriveOp, out: Emitter) -> None:
    cluster = op.scope is not None and op.scope.data == "cluster"
    out.emit(ptx.MbarrierArriveOp(register_of(op.barrier), cluster=cluster))


def _lower_mbarrier_arrive_expect_tx(op: hopper.MbarrierArriveExpectTxOp, out: Emitter) -> None:
    out.emit(ptx.MbarrierArriveOp(register_of(op.barrier), tx_bytes=op.bytes.data))


PTX_WGMMA_TYPES = {"bf16": "bf16", "f16": "f16", "f8e4m3": "e4m3", "f8e5m2": "e5m2"}
"""PTX's spelling of each wgmma operand type."""


def _lower_wgmma(op: hopper.WgmmaMmaAsyncOp, out: Emitter) -> None:
    scale_d = out.value(ptx.ConstOp(op.scale_d.data, ptx.PRED))
    a_dtype, b_dtype = op.operand_dtypes
    out.emit(
        ptx.WgmmaOp(
            registers_of(op.accumulator),
            register_of(op.a_desc),
            register_of(op.b_desc),
            scale_d,
            n=op.n,
            ab_type=PTX_WGMMA_TYPES[a_dtype],
            trans_a=Major(op.a_major.data).transpose_bit,
            trans_b=Major(op.b_major.data).transpose_bit,
            b_type=PTX_WGMMA_TYPES[b_dtype],
        )
    )


def _lower_stmatrix(op: hopper.StmatrixOp, out: Emitter) -> None:
    # A pair of 16-bit floats (a hopper.truncf_pair) is the register that holds it.
    values = [register_of(v) if isinstance(v.type, VectorType) else v for v in op.values]
    out.emit(ptx.StmatrixOp(address_of(op.address), values, trans=op.trans is not None))


def _lower_id(op: hopper.IdOp, out: Emitter) -> None:
    sreg, shift, mask = hopper.IDS[op.which.data]
    result_type = reg_type(op.result)
    value = out.value(ptx.SregOp(sreg, result_type))
    if shift:
        value = out.value(ptx.ShrOp(value, out.value(ptx.ConstOp(shift, ptx.U32))))
    if mask:
        out.value(ptx.AndOp(value, out.value(ptx.ConstOp(mask, result_type))))


_LOWERINGS: dict[type[hopper.HopperInstruction], Callable[[Any, Emitter], None]] = {
    hopper.TensorMapPrefetchOp: _lower_tensor_map_prefetch,
    hopper.TmaLoadOp: _lower_tma_load,
    hopper.TmaStoreOp: _lower_tma_store,
    hopper.MbarrierInitOp: _lower_mbarrier_init,
    hopper.MbarrierArriveOp: _lower_mbarrier_arrive,
    hopper.MbarrierArriveExpectTxOp: _lower_mbarrier_arrive_expect_tx,
    hopper.StmatrixOp: _lower_stmatrix,
    hopper.IdOp: _lower_id,
}
"""The lowering of each hopper op that makes no typed value (but the wait loop), by op
class: the instructions it stands for."""


class LowerTensorMapParam(RewritePattern):
    """A tensor map: the generic address of its parameter (`mov`, `cvta.param`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.TensorMapParamOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        address = out.value(ptx.AddrOfOp(op.param.data, ptx.B64))
        generic = out.value(ptx.CvtaOp("param", address, ptx.B64))
        replace_by_registers(rewriter, op, out, [generic])


class LowerParamRead(RewritePattern):
    """An array or a runtime extent: the `ptx.ld_param` of its parameter's register (u64,
    u32), in its place; each cast of the value to that register type becomes the register,
    each cast of an array to i64 (its address) a cast of the register, and the value's
    other reads take the register through a cast to the value's type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: hopper.ArrayParamOp | hopper.ExtentParamOp, rewriter: PatternRewriter
    ) -> None:
        register_type = ptx.U64 if isinstance(op, hopper.ArrayParamOp) else ptx.U32
        load = ptx.LdParamOp(op.param.data, register_type)
        for use in list(op.result.uses):
            reader = use.operation
            if not isinstance(reader, UnrealizedConversionCastOp) or len(reader.results) != 1:
                continue
            if reader.results[0].type == register_type:
                rewriter.replace(reader, [], [load.result])
            elif reader.results[0].type == i64:
                # An array's address as an i64 of the address arithmetic.
                address = UnrealizedConversionCastOp.get([load.result], [i64])
                rewriter.replace(reader, address, address.results)
        if not op.result.uses:
            rewriter.replace(op, load, [None])
            return
        cast = UnrealizedConversionCastOp.get([load.result], [op.result.type])
        cast.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, [load, cast], cast.results)


class LowerKernel(RewritePattern):
    """The hopper level's kernel: a `ptx.module` of its dynamic shared memory
    (`ptx.shared`) and a `ptx.entry` of the same signature and launch data, its body
    moved in."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.KernelOp, rewriter: PatternRewriter) -> None:
        entry = ptx.EntryOp(op.sym_name.data, op.params.data)
        for name in ("maxnreg", "reqntid", "launch"):
            value = op.properties.get(name)
            if value is not None:
                entry.properties[name] = value
        body = op.body.detach_block(op.body.block)
        entry.body.detach_block(entry.body.block).erase()
        entry.body.add_block(body)
        module = ptx.PtxModuleOp()
        if op.shared is not None:
            module.body.block.add_op(ptx.SharedOp(op.shared.data, op.shared_align.data))
        module.body.block.add_op(entry)
        rewriter.replace(op, module, [])


class LowerBarrierRing(RewritePattern):
    """A barrier ring: the shared address of its first barrier."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.BarrierRingOp, rewriter: PatternRewriter) -> None:
        replace_by_registers(rewriter, op, Emitter(None, False), [address_of(op.base)])


class LowerRingBarrier(RewritePattern):
    """A stage's barrier: the ring's address plus 8 bytes per stage (`add` of a constant
    stage's offset, `mad` of an index stage's register)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.RingBarrierOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        ring = register_of(op.ring)
        if op.stage is None:
            assert op.index is not None
            offset = out.value(ptx.ConstOp(hopper.BARRIER_BYTES * op.index.data, ptx.U32))
            address = out.value(ptx.AddOp(ring, offset))
        else:
            stage = integer_register(op.stage, out)
            size = out.value(ptx.ConstOp(hopper.BARRIER_BYTES, ptx.U32))
            address = out.value(ptx.MadOp(stage, size, ring))
        replace_by_registers(rewriter, op, out, [address])


class LowerMatrixDescriptor(RewritePattern):
    """A matrix descriptor: `((base + offset) >> 4) & 0x3FFF` of its tile's base and the
    operand's offset in the tile, widened to b64 (`cvt`) and ORed with the constant fields
    of the tile's layout; the b64 register holds the descriptor."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.MatrixDescriptorOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        layout = op.tile.layout
        start = address_of(op.base)
        offset = layout.start_offset(op.mn.data, op.k.data)
        if offset:
            start = out.value(ptx.AddOp(start, out.value(ptx.ConstOp(offset, ptx.U32))))
        chunks = out.value(ptx.ShrOp(start, out.value(ptx.ConstOp(4, ptx.U32))))
        chunks = out.value(ptx.AndOp(chunks, out.value(ptx.ConstOp(0x3FFF, ptx.U32))))
        wide = out.value(ptx.CvtOp(chunks, ptx.B64))
        fields = descriptor_base(
            layout.leading_byte_offset, layout.stride_byte_offset, layout.swizzle
        )
        descriptor = out.value(ptx.OrOp(wide, out.value(ptx.ConstOp(fields, ptx.B64))))
        replace_by_registers(rewriter, op, out, [descriptor])


class LowerSharedBase(RewritePattern):
    """A shared array's base: its address rounded up to the alignment (`add` of
    align - 1, `and` of its complement)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SharedBaseOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        address = out.value(ptx.AddrOfOp(op.symbol.data, ptx.U32))
        smem = op.result.type
        assert isinstance(smem, hopper.SmemType)
        align = smem.align.data
        if align > 1:
            padded = out.value(ptx.AddOp(address, out.value(ptx.ConstOp(align - 1, ptx.U32))))
            mask = out.value(ptx.ConstOp((1 << 32) - align, ptx.U32))
            address = out.value(ptx.AndOp(padded, mask))
        replace_by_registers(rewriter, op, out, [address])


class LowerSmemOffset(RewritePattern):
    """An address past another: `add` of the constant offset."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SmemOffsetOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        offset = out.value(ptx.ConstOp(op.offset.data, ptx.U32))
        address = out.value(ptx.AddOp(register_of(op.base), offset))
        replace_by_registers(rewriter, op, out, [address])


class LowerSmemIndex(RewritePattern):
    """An address an index's strides past another: the stride's constant, then the offset's
    `add` (none at offset 0), then `mad` of the index's register."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SmemIndexOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        (index,) = coordinate_registers([op.index], out)
        stride = out.value(ptx.ConstOp(op.stride.data, ptx.U32))
        start = register_of(op.base)
        if op.offset.data:
            offset = out.value(ptx.ConstOp(op.offset.data, ptx.U32))
            start = out.value(ptx.AddOp(start, offset))
        address = out.value(ptx.MadOp(index, stride, start))
        replace_by_registers(rewriter, op, out, [address])


class LowerSmemAdd(RewritePattern):
    """An address a dynamic offset past another: `add` of the offset's register."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SmemAddOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        (offset,) = coordinate_registers([op.offset], out)
        address = out.value(ptx.AddOp(register_of(op.base), offset))
        replace_by_registers(rewriter, op, out, [address])


class LowerSlotRing(RewritePattern):
    """A slot ring: the base's register at offset 0 (no instruction), else an `add`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SlotRingOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        address = register_of(op.base)
        if op.offset.data:
            offset = out.value(ptx.ConstOp(op.offset.data, ptx.U32))
            address = out.value(ptx.AddOp(address, offset))
        replace_by_registers(rewriter, op, out, [address])


class LowerSlotStage(RewritePattern):
    """A position's stage of a slot ring: the ring's address plus the stage's bytes times
    the position's stage register (`mad`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SlotStageOp, rewriter: PatternRewriter) -> None:
        ring = op.ring.type
        assert isinstance(ring, hopper.SlotRingType)
        stage, _ = _position_registers(op.position)
        out = Emitter(None, False)
        size = out.value(ptx.ConstOp(ring.bytes.data, ptx.U32))
        address = out.value(ptx.MadOp(stage, size, register_of(op.ring)))
        replace_by_registers(rewriter, op, out, [address])


class LowerRingSlot(RewritePattern):
    """A slot of a stage: the stage's address plus the slot's offset (`add`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.RingSlotOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        offset = out.value(ptx.ConstOp(op.offset, ptx.U32))
        address = out.value(ptx.AddOp(register_of(op.stage), offset))
        replace_by_registers(rewriter, op, out, [address])


class ResolveSmemCast(RewritePattern):
    """A cast of a shared address (`!hopper.smem`) or of a matrix descriptor, each held in
    one register, to a register type becomes that register, to `index` a cast of the
    register: the ptx ops and the index arithmetic that read the address."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter) -> None:
        if len(op.inputs) != 1 or len(op.results) != 1:
            return
        (source,) = op.inputs
        (result,) = op.results
        if not isinstance(source.type, hopper.SmemType | hopper.MatrixDescriptorType):
            return
        register = register_of(source)
        if result.type == register.type:
            rewriter.replace(op, [], [register])
            return
        rewriter.replace(op, UnrealizedConversionCastOp.get([register], [result.type]))


class LowerMapa(RewritePattern):
    """Another CTA's barrier: `mapa.shared::cluster` of this CTA's barrier address."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.MapaOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        remote = out.value(ptx.MapaOp(register_of(op.barrier), op.rank))
        replace_by_registers(rewriter, op, out, [remote])


class LowerAccumulator(RewritePattern):
    """An accumulator: the f32 registers that hold it (no instruction)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.AccumulatorOp, rewriter: PatternRewriter) -> None:
        replace_by_registers(rewriter, op, Emitter(None, False), op.registers)


class LowerWgmma(RewritePattern):
    """A wgmma: `wgmma.mma_async` on its accumulator's registers, which then hold its
    result (the instruction updates them in place)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.WgmmaMmaAsyncOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        _lower_wgmma(op, out)
        replace_by_registers(rewriter, op, out, registers_of(op.accumulator))


class LowerZeroAccumulator(RewritePattern):
    """A zero accumulator: n / 2 fresh f32 registers, each set to 0.0 (`mov.f32`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.ZeroAccumulatorOp, rewriter: PatternRewriter) -> None:
        accumulator = op.result.type
        assert isinstance(accumulator, hopper.AccumulatorType)
        zeros = [ptx.ConstOp(0.0, ptx.F32) for _ in range(accumulator.registers)]
        cast = UnrealizedConversionCastOp.get([zero.result for zero in zeros], [accumulator])
        cast.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, [*zeros, cast], cast.results)


class LowerAccumulatorElement(RewritePattern):
    """An element of an accumulator: the register that holds it (no instruction), read as
    the f32 value that the epilogue's arith takes through a cast."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.AccumulatorElementOp, rewriter: PatternRewriter) -> None:
        register = registers_of(op.accumulator)[op.index.data]
        cast = UnrealizedConversionCastOp.get([register], [op.result.type])
        rewriter.replace(op, cast, cast.results)


class LowerPromoteAccumulator(RewritePattern):
    """A promotion: per element, `fma.rn.f32` of the partial's register, its row's scale and
    the main accumulator's register, assigned back to that register, which then holds the
    result (as a wgmma updates it in place)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.PromoteAccumulatorOp, rewriter: PatternRewriter) -> None:
        ops: list[Operation] = []
        scales: list[SSAValue] = []
        for scale in (op.row_scale, op.lower_row_scale):
            scale_ops, register = f32_register(scale)
            ops += scale_ops
            scales.append(register)
        main = registers_of(op.accumulator)
        for index, (held, partial) in enumerate(zip(main, registers_of(op.partial), strict=True)):
            fma = ptx.FmaOp(partial, scales[index % 4 // 2], held)
            ops += [fma, ptx.AssignOp(held, fma.result)]
        cast = UnrealizedConversionCastOp.get(main, [op.result.type])
        rewriter.replace(op, [*ops, cast], cast.results)


PAIR_KINDS: dict[type[Attribute], str] = {
    BFloat16Type: "bf16x2",
    Float16Type: "f16x2",
    Float8E4M3FNType: "e4m3x2",
    Float8E5M2Type: "e5m2x2",
}
"""The register kind of each pair of `hopper.truncf_pair`."""


class LowerTruncfPair(RewritePattern):
    """A pair of f32 values rounded into 16-bit floats: one `cvt.rn.bf16x2.f32` (or
    f16x2) of the high element and the low one, its register read as the pair through a
    cast; into fp8, one `cvt.rn.satfinite.e4m3x2.f32` (e5m2x2), a 16-bit register."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.TruncfPairOp, rewriter: PatternRewriter) -> None:
        pair = op.result.type
        assert isinstance(pair, VectorType)
        element = pair.get_element_type()
        kind = ptx.reg(PAIR_KINDS[type(element)])
        lo_ops, lo = f32_register(op.lo)
        hi_ops, hi = f32_register(op.hi)
        pack = ptx.CvtPackOp(hi, lo, kind)
        cast = UnrealizedConversionCastOp.get([pack.result], [pair])
        rewriter.replace(op, [*lo_ops, *hi_ops, pack, cast], cast.results)


class LowerRingStart(RewritePattern):
    """A ring position's start: two fresh u32 registers, the stage and the phase, each set
    to 0 (`mov.u32`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.RingStartOp, rewriter: PatternRewriter) -> None:
        out = Emitter(None, False)
        stage = out.value(ptx.ConstOp(0, ptx.U32))
        phase = out.value(ptx.ConstOp(0, ptx.U32))
        replace_by_registers(rewriter, op, out, [stage, phase])


def _position_registers(value: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The (stage, phase) registers of a ring position."""
    stage, phase = registers_of(value)
    return stage, phase


class LowerRingAdvance(RewritePattern):
    """The next position, in place on the position's registers: `stage += 1`, and where
    it reaches the ring's depth, `@wrap stage = 0` and `@wrap phase ^= 1`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.RingAdvanceOp, rewriter: PatternRewriter) -> None:
        position = op.position.type
        assert isinstance(position, hopper.RingPositionType)
        stage, phase = _position_registers(op.position)
        out = Emitter(None, False)
        one = out.value(ptx.ConstOp(1, ptx.U32))
        out.emit(ptx.AssignOp(stage, out.value(ptx.AddOp(stage, one))))
        depth = out.value(ptx.ConstOp(position.stages.data, ptx.U32))
        wrap = out.value(ptx.SetpOp("eq", stage, depth))
        zero = out.value(ptx.ConstOp(0, ptx.U32))
        out.emit(guarded(ptx.AssignOp(stage, zero), wrap, False))
        one = out.value(ptx.ConstOp(1, ptx.U32))
        flipped = out.value(ptx.XorOp(phase, one))
        out.emit(guarded(ptx.AssignOp(phase, flipped), wrap, False))
        replace_by_registers(rewriter, op, out, [stage, phase])


class LowerRingAdvanceBy(RewritePattern):
    """The position `count` stages on, in place on the position's registers: `stage =
    (stage + count) % stages`, the phase flipped by the parity of the wraps."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.RingAdvanceByOp, rewriter: PatternRewriter) -> None:
        position = op.position.type
        assert isinstance(position, hopper.RingPositionType)
        stage, phase = _position_registers(op.position)
        out = Emitter(None, False)
        count = integer_register(op.count, out)
        depth = out.value(ptx.ConstOp(position.stages.data, ptx.U32))
        total = out.value(ptx.AddOp(stage, count))
        laps = out.value(ptx.DivOp(total, depth))
        out.emit(ptx.AssignOp(stage, out.value(ptx.RemOp(total, depth))))
        flip = out.value(ptx.AndOp(laps, out.value(ptx.ConstOp(1, ptx.U32))))
        out.emit(ptx.AssignOp(phase, out.value(ptx.XorOp(phase, flip))))
        replace_by_registers(rewriter, op, out, [stage, phase])


def outlives_advance(op: hopper.RingStageOp | hopper.RingPhaseOp) -> bool:
    """Whether an op of the read's block that uses the read (or holds a use) comes after
    an advance of its position there, which writes the position's registers in place (a
    loop's yield of the stage, say)."""
    block = op.parent_block()
    if block is None:
        return False
    users = [use.operation for use in op.result.uses]
    moved = {op.position}
    advanced = False
    later = op.next_op
    while later is not None:
        if advanced and any(later is user or later.is_ancestor(user) for user in users):
            return True
        if (
            isinstance(later, hopper.RingAdvanceOp | hopper.RingAdvanceByOp)
            and later.position in moved
        ):
            moved.add(later.result)
            advanced = True
        later = later.next_op
    return False


class LowerRingPart(RewritePattern):
    """The stage or the phase of a ring position: the register that holds it (no
    instruction), read as the `index` / `i32` value through a cast; a copy of it (`mov`)
    where the value is used after an advance of the position overwrites that register."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: hopper.RingStageOp | hopper.RingPhaseOp, rewriter: PatternRewriter
    ) -> None:
        stage, phase = _position_registers(op.position)
        register = stage if isinstance(op, hopper.RingStageOp) else phase
        ops: list[Operation] = []
        if outlives_advance(op):
            copy = ptx.MovOp(register)
            ops.append(copy)
            register = copy.result
        cast = UnrealizedConversionCastOp.get([register], [op.result.type])
        cast.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, [*ops, cast], cast.results)


@dataclass
class LowerMbarrierWait(RewritePattern):
    """label: p = try_wait.parity; @!p bra label (branched around if guarded off)."""

    labels: _Labels

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.MbarrierWaitOp, rewriter: PatternRewriter) -> None:
        loop = self.labels.fresh("hopper_wait")
        ops: list[Operation] = []
        skip = None
        if op.guard is not None:
            skip = self.labels.fresh("hopper_wait_skip")
            ops.append(guarded(ptx.BraOp(skip), op.guard, op.negated is None))
        parity = Emitter(None, False)
        phase = integer_register(op.phase, parity)
        ops += parity.ops
        ops.append(ptx.LabelOp(loop))
        ready = ptx.MbarrierTryWaitOp(register_of(op.barrier), phase)
        ops.append(ready)
        ops.append(guarded(ptx.BraOp(loop), ready.result, True))
        if skip is not None:
            ops.append(ptx.LabelOp(skip))
        rewriter.replace(op, ops, [])


class LowerHopperOp(RewritePattern):
    """Replace one hopper op by the ptx instructions it stands for (`_LOWERINGS`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, hopper.HopperInstruction):
            return
        lower = _LOWERINGS.get(type(op))
        if lower is None:
            raise NotImplementedError(f"convert-hopper-to-ptx: no lowering for {op.name}")
        out = Emitter(op.guard, op.negated is not None)
        lower(op, out)
        results = [op.results for op in out.ops if op.results]
        rewriter.replace(op, out.ops, list(results[-1]) if op.results else [])


class EraseRegisterCast(RewritePattern):
    """Erase a cast of registers to a hopper type once no op reads it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter) -> None:
        if any(result.uses for result in op.results):
            return
        if not all(isinstance(value.type, ptx.RegType) for value in op.inputs):
            return
        rewriter.erase(op)


class ConvertHopperToPtx(ModulePass):
    """Lower every hopper kernel of the module to a ptx module, and every hopper op to ptx
    instructions."""

    name = "convert-hopper-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Lower every hopper op; a kernel or fusion still in a func.func is an error."""
        check_lowered_to_ptx(self.name, op, hopper_kernels=True)
        labels = _Labels(
            {label.label.data for label in op.walk() if isinstance(label, ptx.LabelOp)}
            | {name for inner in op.walk() for name in carried_label_names(inner)}
        )
        patterns: list[RewritePattern] = [
            LowerParamRead(),
            LowerTensorMapParam(),
            LowerSharedBase(),
            LowerSmemOffset(),
            LowerSmemIndex(),
            LowerSmemAdd(),
            LowerSlotRing(),
            LowerSlotStage(),
            LowerRingSlot(),
            LowerBarrierRing(),
            LowerRingBarrier(),
            LowerMatrixDescriptor(),
            LowerMapa(),
            LowerAccumulator(),
            LowerZeroAccumulator(),
            LowerAccumulatorElement(),
            LowerPromoteAccumulator(),
            LowerTruncfPair(),
            LowerWgmma(),
            LowerRingStart(),
            LowerRingAdvance(),
            LowerRingAdvanceBy(),
            LowerRingPart(),
            LowerMbarrierWait(labels),
            *ACCESS_PATTERNS,
            *LANE_PATTERNS,
            LowerHopperOp(),
        ]
        # No dead-code elimination: the index arithmetic is still arith, which the
        # rewriter would otherwise prune where it is unused; what runs is what was lowered.
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)
        PatternRewriteWalker(ResolveSmemCast(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([EraseRegisterCast()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        PatternRewriteWalker(LowerKernel(), apply_recursively=False).rewrite_module(op)
