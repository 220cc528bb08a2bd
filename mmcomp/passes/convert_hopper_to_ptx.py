"""`convert-hopper-to-ptx`: lower every hopper op to ptx instructions.

Most hopper ops become one instruction (a `ptx.inst` template, or `ptx.bar` / `ptx.sreg`
where the ptx dialect has the op). A few expand:

- `hopper.mbarrier_wait` becomes a `mbarrier.try_wait.parity` loop with a fresh label;
- `hopper.matrix_descriptor` computes `((base + offset) >> 4) & 0x3FFF` and ORs in the
  constant fields of its tile layout (`mmcomp.hopper_layout`);
- `hopper.tensor_map_address` takes the parameter's address and converts it to generic;
- `hopper.id` reads a special register and shifts / masks it.

A guarded hopper op stays guarded: each instruction it becomes is predicated, except the
wait loop, which is branched around when the guard is false.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from mmcomp.dialects import hopper
from mmcomp.dialects.ptx import (
    PRED,
    U32,
    AddOp,
    AddrOfOp,
    AndOp,
    BarOp,
    BraOp,
    ConstOp,
    CvtaOp,
    CvtOp,
    InstOp,
    LabelOp,
    OrOp,
    PtxInstruction,
    RegType,
    ShrOp,
    SregOp,
)
from mmcomp.hopper_layout import descriptor_base

TMA_LOAD = "cp.async.bulk.tensor.{dims}d.shared::cluster.global.mbarrier::complete_tx::bytes"
"""The TMA tiled-load instruction, without operands."""


def _vector(first: int, count: int) -> str:
    """An InstOp placeholder printing values first..first+count-1 as a PTX vector."""
    return f"{{{first}:{first + count}}}"


class _Emitter:
    """Collects the ptx ops one hopper op becomes, predicating each by the op's guard."""

    def __init__(self, guard: SSAValue | None, negated: bool):
        self.guard = guard
        self.negated = negated
        self.ops: list[Operation] = []

    def emit(self, op: PtxInstruction) -> PtxInstruction:
        """Append `op`, guarded like the hopper op, and return it."""
        if self.guard is not None:
            op = op.set_guard(self.guard, self.negated)
        self.ops.append(op)
        return op

    def value(self, op: PtxInstruction) -> SSAValue:
        """Append `op` and return its single result."""
        return self.emit(op).results[0]

    def inst(
        self, template: str, args: Sequence[SSAValue] = (), results: Sequence[RegType] = ()
    ) -> PtxInstruction:
        """Append a `ptx.inst` of `template`."""
        return self.emit(InstOp(template, args, results))


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


def _lower_tensor_map_address(op: hopper.TensorMapAddressOp, out: _Emitter) -> None:
    address = out.value(AddrOfOp(op.param.data, op.result.type))  # pyright: ignore[reportArgumentType]
    out.value(CvtaOp("param", address, op.result.type))  # pyright: ignore[reportArgumentType]


def _lower_tma_load(op: hopper.TmaLoadOp, out: _Emitter) -> None:
    dims = len(op.coordinates)
    out.inst(
        f"{TMA_LOAD.format(dims=dims)} [{{0}}], [{{1}}, {_vector(3, dims)}], [{{2}}]",
        [op.dst, op.tensor_map, op.barrier, *op.coordinates],
    )


def _lower_tma_load_multicast(op: hopper.TmaLoadMulticastOp, out: _Emitter) -> None:
    dims = len(op.coordinates)
    out.inst(
        f"{TMA_LOAD.format(dims=dims)}.multicast::cluster [{{0}}], "
        f"[{{1}}, {_vector(4, dims)}], [{{2}}], {{3}}",
        [op.dst, op.tensor_map, op.barrier, op.cta_mask, *op.coordinates],
    )


def _lower_tma_store(op: hopper.TmaStoreOp, out: _Emitter) -> None:
    dims = len(op.coordinates)
    out.inst(
        f"cp.async.bulk.tensor.{dims}d.global.shared::cta.bulk_group "
        f"[{{0}}, {_vector(2, dims)}], [{{1}}]",
        [op.tensor_map, op.src, *op.coordinates],
    )


def _lower_bulk_wait_group(op: hopper.BulkWaitGroupOp, out: _Emitter) -> None:
    read = ".read" if op.read is not None else ""
    out.inst(f"cp.async.bulk.wait_group{read} {op.pending.data}")


def _lower_mbarrier_arrive(op: hopper.MbarrierArriveOp, out: _Emitter) -> None:
    if op.scope is not None and op.scope.data == "cluster":
        out.inst("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{0}]", [op.barrier])
        return
    out.inst("mbarrier.arrive.shared::cta.b64 _, [{0}]", [op.barrier])


def _lower_matrix_descriptor(op: hopper.MatrixDescriptorOp, out: _Emitter) -> None:
    layout = op.tile.layout
    base_type = op.base.type
    assert isinstance(base_type, RegType)
    start = op.base
    offset = layout.start_offset(op.mn.data, op.k.data)
    if offset:
        start = out.value(AddOp(start, out.value(ConstOp(offset, base_type))))
    chunks = out.value(ShrOp(start, out.value(ConstOp(4, U32))))
    chunks = out.value(AndOp(chunks, out.value(ConstOp(0x3FFF, base_type))))
    result_type = op.result.type
    assert isinstance(result_type, RegType)
    wide = out.value(CvtOp(chunks, result_type))
    fields = descriptor_base(layout.leading_byte_offset, layout.stride_byte_offset, layout.swizzle)
    out.value(OrOp(wide, out.value(ConstOp(fields, result_type))))


def _lower_wgmma(op: hopper.WgmmaMmaAsyncOp, out: _Emitter) -> None:
    count = len(op.accumulators)
    trans_a = 1 if op.a_major.data == "mn" else 0
    trans_b = 1 if op.b_major.data == "mn" else 0
    dtype = op.dtype.data
    out.inst(
        f"wgmma.mma_async.sync.aligned.{op.shape.data}.f32.{dtype}.{dtype} "
        f"{_vector(2, count)}, {{0}}, {{1}}, {op.scale_d.data}, 1, 1, {trans_a}, {trans_b}",
        [op.a_desc, op.b_desc, *op.accumulators],
    )


def _lower_stmatrix(op: hopper.StmatrixOp, out: _Emitter) -> None:
    count = len(op.values)
    trans = ".trans" if op.trans is not None else ""
    out.inst(
        f"stmatrix.sync.aligned.m8n8.x{count}{trans}.shared.b16 [{{0}}], {_vector(1, count)}",
        [op.address, *op.values],
    )


def _lower_id(op: hopper.IdOp, out: _Emitter) -> None:
    sreg, shift, mask = hopper.IDS[op.which.data]
    result_type = op.result.type
    assert isinstance(result_type, RegType)
    value = out.value(SregOp(sreg, result_type))
    if shift:
        value = out.value(ShrOp(value, out.value(ConstOp(shift, U32))))
    if mask:
        out.value(AndOp(value, out.value(ConstOp(mask, result_type))))


def _lower_tensor_map_prefetch(op: hopper.TensorMapPrefetchOp, out: _Emitter) -> None:
    out.inst("prefetch.tensormap [{0}]", [op.tensor_map])


def _lower_mbarrier_init(op: hopper.MbarrierInitOp, out: _Emitter) -> None:
    out.inst(f"mbarrier.init.shared::cta.b64 [{{0}}], {op.count.data}", [op.barrier])


def _lower_mbarrier_arrive_expect_tx(op: hopper.MbarrierArriveExpectTxOp, out: _Emitter) -> None:
    out.inst(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{0}}], {op.bytes.data}", [op.barrier])


def _lower_wgmma_wait_group(op: hopper.WgmmaWaitGroupOp, out: _Emitter) -> None:
    out.inst(f"wgmma.wait_group.sync.aligned {op.pending.data}")


def _lower_setmaxnreg(op: hopper.SetmaxnregOp, out: _Emitter) -> None:
    out.inst(f"setmaxnreg.{op.action.data}.sync.aligned.u32 {op.count.data}")


def _lower_named_barrier(op: hopper.NamedBarrierOp, out: _Emitter) -> None:
    out.emit(BarOp(op.mode.data, op.barrier_id.data, op.count.data))


def _lower_mapa(op: hopper.MapaOp, out: _Emitter) -> None:
    out.inst("mapa.shared::cluster.u32 {0}, {1}, {2}", [op.address, op.rank], [op.result.type])  # pyright: ignore[reportArgumentType]


def _fixed(text: str) -> Callable[[Operation, _Emitter], None]:
    """The lowering of an op that is one operand-less instruction."""

    def lower(op: Operation, out: _Emitter) -> None:
        out.inst(text)

    return lower


def _lower_elect_sync(op: hopper.ElectSyncOp, out: _Emitter) -> None:
    out.inst("elect.sync _|{0}, 0xffffffff", (), [PRED])


_LOWERINGS: dict[type[hopper.HopperInstruction], Callable[[Any, _Emitter], None]] = {
    hopper.TensorMapAddressOp: _lower_tensor_map_address,
    hopper.TensorMapPrefetchOp: _lower_tensor_map_prefetch,
    hopper.TmaLoadOp: _lower_tma_load,
    hopper.TmaLoadMulticastOp: _lower_tma_load_multicast,
    hopper.TmaStoreOp: _lower_tma_store,
    hopper.BulkCommitGroupOp: _fixed("cp.async.bulk.commit_group"),
    hopper.BulkWaitGroupOp: _lower_bulk_wait_group,
    hopper.MbarrierInitOp: _lower_mbarrier_init,
    hopper.MbarrierArriveOp: _lower_mbarrier_arrive,
    hopper.MbarrierArriveExpectTxOp: _lower_mbarrier_arrive_expect_tx,
    hopper.FenceProxyAsyncOp: _fixed("fence.proxy.async.shared::cta"),
    hopper.FenceMbarrierInitOp: _fixed("fence.mbarrier_init.release.cluster"),
    hopper.WgmmaFenceOp: _fixed("wgmma.fence.sync.aligned"),
    hopper.WgmmaCommitGroupOp: _fixed("wgmma.commit_group.sync.aligned"),
    hopper.WgmmaWaitGroupOp: _lower_wgmma_wait_group,
    hopper.MatrixDescriptorOp: _lower_matrix_descriptor,
    hopper.WgmmaMmaAsyncOp: _lower_wgmma,
    hopper.SetmaxnregOp: _lower_setmaxnreg,
    hopper.ElectSyncOp: _lower_elect_sync,
    hopper.NamedBarrierOp: _lower_named_barrier,
    hopper.StmatrixOp: _lower_stmatrix,
    hopper.IdOp: _lower_id,
    hopper.MapaOp: _lower_mapa,
}
"""Lowering of each hopper op that expands to straight-line instructions."""


@dataclass
class LowerHopperOp(RewritePattern):
    """Replace one hopper op by the ptx instructions it stands for."""

    labels: _Labels

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, hopper.HopperInstruction):
            return
        negated = op.negated is not None
        if isinstance(op, hopper.MbarrierWaitOp):
            rewriter.replace_op(op, self._wait_loop(op, negated), [])
            return
        lower = _LOWERINGS.get(type(op))
        if lower is None:
            raise NotImplementedError(f"convert-hopper-to-ptx: no lowering for {op.name}")
        out = _Emitter(op.guard, negated)
        lower(op, out)
        results = [op.results for op in out.ops if op.results]
        rewriter.replace_op(op, out.ops, list(results[-1]) if op.results else [])

    def _wait_loop(self, op: hopper.MbarrierWaitOp, negated: bool) -> list[Operation]:
        """label: p = try_wait.parity; @!p bra label (branched around if guarded off)."""
        loop = self.labels.fresh("hopper_wait")
        ops: list[Operation] = []
        skip = None
        if op.guard is not None:
            skip = self.labels.fresh("hopper_wait_skip")
            ops.append(BraOp(skip).set_guard(op.guard, not negated))
        ops.append(LabelOp(loop))
        ready = InstOp(
            "mbarrier.try_wait.parity.shared::cta.b64 {0}, [{1}], {2}",
            [op.barrier, op.phase],
            [PRED],
        )
        ops.append(ready)
        ops.append(BraOp(loop).set_guard(ready.outs[0], True))
        if skip is not None:
            ops.append(LabelOp(skip))
        return ops


class ConvertHopperToPtx(ModulePass):
    """Lower every hopper op in the module's ptx entries to ptx instructions."""

    name = "convert-hopper-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        labels = _Labels({label.label.data for label in op.walk() if isinstance(label, LabelOp)})
        PatternRewriteWalker(LowerHopperOp(labels), apply_recursively=False).rewrite_module(op)
