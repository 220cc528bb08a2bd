"""Hopper instructions: mbarrier, TMA, wgmma, fences, register reconfiguration, stmatrix."""

# The ptx dialect's modules share the private helpers of syntax.py and types.py.
# pyright: reportPrivateUsage=false

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntAttr, StringAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.irdl import operand_def as _operand_def
from xdsl.irdl import result_def as _result_def
from xdsl.irdl import var_operand_def as _var_operand_def
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.ptx.syntax import (
    FixedInstruction,
    NameOf,
    PtxInstruction,
    RegisterInstruction,
    _braced,
    _require,
    _require_category,
    _same_kind,
    check_below,
    check_choice,
    check_range,
)
from mmcomp.dialects.ptx.types import PRED, RegType, kind_of


def _require_shared_address(op: Operation, what: str, value: SSAValue) -> None:
    kind = _require_category(op, what, value, "b,u,s")
    if kind.width not in (32, 64):
        raise VerifyException(
            f"{op.name}: {what} must be a 32-bit shared address (or 64-bit), found "
            f"!ptx.reg<{kind.name}>"
        )


class MbarrierOp(PtxInstruction, ABC):
    """Base of the ops whose one operand is an mbarrier."""

    bar = _operand_def(RegType)
    """Shared address of the 8-byte barrier."""

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the barrier address", self.bar)


@irdl_op_definition
class MbarrierInitOp(MbarrierOp):
    """`mbarrier.init.shared::cta.b64 [bar], count;`."""

    name = "ptx.mbarrier_init"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("count",)

    count = prop_def(IntAttr)
    """The number of arrivals that complete a phase."""

    def __init__(self, bar: SSAValue, count: int):
        super().__init__(properties={"count": IntAttr(count)}, operands=[bar, []])

    def verify_kinds(self) -> None:
        super().verify_kinds()
        if self.count.data <= 0:
            raise VerifyException(
                f"ptx.mbarrier_init: count must be positive, found {self.count.data}"
            )

    def ptx_text(self, name: NameOf) -> str:
        return f"mbarrier.init.shared::cta.b64 [{name(self.bar)}], {self.count.data}"


@irdl_op_definition
class MbarrierArriveOp(MbarrierOp):
    """Arrive on an mbarrier, optionally announcing transaction bytes (`expect_tx`).

    `mbarrier.arrive[.expect_tx].shared::cta.b64 _, [bar][, tx];`; with `cluster`, arrive
    on a barrier of another CTA of the cluster (address from `ptx.mapa`):
    `mbarrier.arrive.shared::cluster.b64 _, [bar];` (release at CTA scope, the default:
    a `.release.cluster` arrive costs two memory barriers, MEMBAR.ALL.CTA and .GPU, in SASS).
    """

    name = "ptx.mbarrier_arrive"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("scope",)

    scope = opt_prop_def(StringAttr)
    """`cluster` for a remote arrive; absent for the own CTA."""
    tx_bytes = opt_prop_def(IntAttr)
    """Transaction bytes expected (`.expect_tx`), if any."""

    def __init__(self, bar: SSAValue, tx_bytes: int | None = None, cluster: bool = False):
        super().__init__(
            properties={
                "tx_bytes": None if tx_bytes is None else IntAttr(tx_bytes),
                "scope": StringAttr("cluster") if cluster else None,
            },
            operands=[bar, []],
        )

    def verify_kinds(self) -> None:
        super().verify_kinds()
        if self.scope is not None and self.scope.data != "cluster":
            raise VerifyException(
                f"ptx.mbarrier_arrive: scope must be 'cluster' or absent, found '{self.scope.data}'"
            )
        if self.scope is not None and self.tx_bytes is not None:
            raise VerifyException(
                "ptx.mbarrier_arrive: a cluster arrive cannot carry expect_tx bytes"
            )
        if self.tx_bytes is not None:
            check_below(self, "tx_bytes", self.tx_bytes.data, 0, 1 << 20, "2^20")

    def ptx_text(self, name: NameOf) -> str:
        if self.scope is not None:
            return f"mbarrier.arrive.shared::cluster.b64 _, [{name(self.bar)}]"
        if self.tx_bytes is None:
            return f"mbarrier.arrive.shared::cta.b64 _, [{name(self.bar)}]"
        return (
            f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{name(self.bar)}], {self.tx_bytes.data}"
        )


@irdl_op_definition
class MbarrierExpectTxOp(MbarrierOp):
    """`mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes;` (no arrival)."""

    name = "ptx.mbarrier_expect_tx"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("tx_bytes",)

    tx_bytes = prop_def(IntAttr)
    """Transaction bytes expected."""

    def __init__(self, bar: SSAValue, tx_bytes: int):
        super().__init__(properties={"tx_bytes": IntAttr(tx_bytes)}, operands=[bar, []])

    def ptx_text(self, name: NameOf) -> str:
        return (
            f"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{name(self.bar)}], "
            f"{self.tx_bytes.data}"
        )


@irdl_op_definition
class MbarrierTryWaitOp(PtxInstruction):
    """Test for phase completion: `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], ph;`.

    Loop on it (label, try_wait, `@!p bra`) to wait.
    """

    name = "ptx.mbarrier_try_wait"

    bar = _operand_def(RegType)
    """Shared address of the barrier."""
    parity = _operand_def(RegType)
    """The phase parity waited for (0 or 1, a 32-bit register)."""
    result = _result_def(RegType)
    """True once the phase with that parity has completed."""

    def __init__(self, bar: SSAValue, parity: SSAValue):
        super().__init__(operands=[bar, parity, []], result_types=[PRED])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the barrier address", self.bar)
        _require(self, "parity", self.parity, "u32")
        _require_category(self, "result", self.result, "pred")

    def ptx_text(self, name: NameOf) -> str:
        return (
            f"mbarrier.try_wait.parity.shared::cta.b64 {name(self.result)}, "
            f"[{name(self.bar)}], {name(self.parity)}"
        )


@irdl_op_definition
class MapaOp(RegisterInstruction):
    """Map a shared address to the same address in another CTA of the cluster.

    `mapa.shared::cluster.u32 d, a, rank;`.
    """

    name = "ptx.mapa"

    addr = _operand_def(RegType)
    rank = _operand_def(RegType)
    """The target CTA's rank in the cluster."""
    result = _result_def(RegType)

    def __init__(self, addr: SSAValue, rank: SSAValue):
        super().__init__(operands=[addr, rank, []], result_types=[addr.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("addr", self.addr), ("result", self.result)])
        _require_shared_address(self, "addr", self.addr)
        _require(self, "rank", self.rank, "u32")

    def mnemonic(self) -> str:
        return f"mapa.shared::cluster.u{kind_of(self.addr).width}"


FENCES: dict[str, str] = {
    "proxy_async": "fence.proxy.async.shared::cta",
    "proxy_async_all": "fence.proxy.async",
    "mbarrier_init": "fence.mbarrier_init.release.cluster",
    "acq_rel_cta": "fence.acq_rel.cta",
    "acq_rel_cluster": "fence.acq_rel.cluster",
    "acq_rel_gpu": "fence.acq_rel.gpu",
    "sc_cta": "fence.sc.cta",
    "sc_gpu": "fence.sc.gpu",
}
"""Fence kinds of `ptx.fence` and their PTX."""


@irdl_op_definition
class FenceOp(PtxInstruction):
    """A memory or proxy fence: `ptx.fence proxy_async` is `fence.proxy.async.shared::cta;`."""

    name = "ptx.fence"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("kind",)

    kind = prop_def(StringAttr)
    """A key of `FENCES`."""

    def __init__(self, kind: str):
        super().__init__(properties={"kind": StringAttr(kind)}, operands=[[]])

    def verify_kinds(self) -> None:
        if self.kind.data not in FENCES:
            raise VerifyException(
                f"ptx.fence: unknown fence '{self.kind.data}', expected one of {', '.join(FENCES)}"
            )

    def ptx_text(self, name: NameOf) -> str:
        return FENCES[self.kind.data]


@irdl_op_definition
class ClusterBarrierOp(PtxInstruction):
    """`barrier.cluster.arrive.release.aligned;` or `barrier.cluster.wait.acquire.aligned;`."""

    name = "ptx.cluster_barrier"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("mode",)

    mode = prop_def(StringAttr)
    """`arrive` or `wait`."""

    def __init__(self, mode: str):
        super().__init__(properties={"mode": StringAttr(mode)}, operands=[[]])

    def verify_kinds(self) -> None:
        check_choice(self, "mode", self.mode.data, ("arrive", "wait"))

    def ptx_text(self, name: NameOf) -> str:
        if self.mode.data == "arrive":
            return "barrier.cluster.arrive.release.aligned"
        return "barrier.cluster.wait.acquire.aligned"


def _tensor_operand(name: NameOf, tmap: SSAValue, coords: Sequence[SSAValue]) -> str:
    """`[%tmap, {%c0, %c1, ...}]`: a tensor map and the coordinates of a box in it."""
    return f"[{name(tmap)}, {_braced(name, coords)}]"


def _verify_coords(op: Operation, coords: Sequence[SSAValue]) -> None:
    if not 1 <= len(coords) <= 5:
        raise VerifyException(
            f"{op.name}: a tensor copy takes 1 to 5 coordinates, found {len(coords)}"
        )
    for i, coord in enumerate(coords):
        _require(op, f"coordinate {i}", coord, "s32")


def _require_address64(op: Operation, what: str, value: SSAValue) -> None:
    kind = _require_category(op, what, value, "b,u,s")
    if kind.width != 64:
        raise VerifyException(
            f"{op.name}: {what} must be a 64-bit register, found !ptx.reg<{kind.name}>"
        )


def _verify_tma_load(
    op: Operation,
    dst: SSAValue,
    tmap: SSAValue,
    bar: SSAValue,
    coords: Sequence[SSAValue],
    mask: SSAValue | None = None,
) -> None:
    """Check the operands of a TMA load (and its multicast `mask`, if any)."""
    _require_shared_address(op, "the destination", dst)
    _require_address64(op, "the tensor map address", tmap)
    _require_shared_address(op, "the barrier address", bar)
    if mask is not None:
        _require(op, "mask", mask, "b16")
    _verify_coords(op, coords)


def _tma_load_text(
    name: NameOf,
    dst: SSAValue,
    tmap: SSAValue,
    bar: SSAValue,
    coords: Sequence[SSAValue],
    mask: SSAValue | None = None,
) -> str:
    """The PTX of a TMA load; with `mask`, multicast to the CTAs of the cluster it names."""
    multicast = "" if mask is None else ".multicast::cluster"
    text = (
        f"cp.async.bulk.tensor.{len(coords)}d.shared::cluster.global."
        f"mbarrier::complete_tx::bytes{multicast} [{name(dst)}], "
        f"{_tensor_operand(name, tmap, coords)}, [{name(bar)}]"
    )
    return text if mask is None else f"{text}, {name(mask)}"


@irdl_op_definition
class TmaLoadOp(PtxInstruction):
    """A TMA tiled load into shared memory completing on an mbarrier.

    `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
    [dst], [tmap, {c0, c1}], [bar];` (coordinates innermost first).
    """

    name = "ptx.tma_load"

    dst = _operand_def(RegType)
    """Shared address of the destination tile."""
    tmap = _operand_def(RegType)
    """Generic address of the tensor map (cvta.param of the parameter's address)."""
    bar = _operand_def(RegType)
    """Shared address of the mbarrier that counts the bytes."""
    coords = _var_operand_def(RegType)
    """Tile coordinates in elements, innermost dimension first (s32)."""

    def __init__(self, dst: SSAValue, tmap: SSAValue, bar: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[dst, tmap, bar, list(coords), []])

    def verify_kinds(self) -> None:
        _verify_tma_load(self, self.dst, self.tmap, self.bar, self.coords)

    def ptx_text(self, name: NameOf) -> str:
        return _tma_load_text(name, self.dst, self.tmap, self.bar, self.coords)


@irdl_op_definition
class TmaLoadMulticastOp(PtxInstruction):
    """A TMA load multicast to the CTAs of a cluster named by a 16-bit mask.

    `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
    .multicast::cluster [dst], [tmap, {c0, c1}], [bar], mask;`.
    """

    name = "ptx.tma_load_multicast"

    dst = _operand_def(RegType)
    """Shared address of the destination tile (the same in every receiving CTA)."""
    tmap = _operand_def(RegType)
    """Generic address of the tensor map."""
    bar = _operand_def(RegType)
    """Shared address of the mbarrier (the same in every receiving CTA)."""
    mask = _operand_def(RegType)
    """The receiving CTAs, one bit per rank (b16)."""
    coords = _var_operand_def(RegType)
    """Tile coordinates, innermost first."""

    def __init__(
        self,
        dst: SSAValue,
        tmap: SSAValue,
        bar: SSAValue,
        mask: SSAValue,
        coords: Sequence[SSAValue],
    ):
        super().__init__(operands=[dst, tmap, bar, mask, list(coords), []])

    def verify_kinds(self) -> None:
        _verify_tma_load(self, self.dst, self.tmap, self.bar, self.coords, self.mask)

    def ptx_text(self, name: NameOf) -> str:
        return _tma_load_text(name, self.dst, self.tmap, self.bar, self.coords, self.mask)


@irdl_op_definition
class TmaStoreOp(PtxInstruction):
    """A TMA tiled store from shared memory in a bulk group (clipped at the bounds).

    `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {c0, c1}], [src];`.
    """

    name = "ptx.tma_store"

    src = _operand_def(RegType)
    """Shared address of the source tile."""
    tmap = _operand_def(RegType)
    """Generic address of the tensor map."""
    coords = _var_operand_def(RegType)
    """Tile coordinates, innermost first."""

    def __init__(self, src: SSAValue, tmap: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[src, tmap, list(coords), []])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the source", self.src)
        _require_address64(self, "the tensor map address", self.tmap)
        _verify_coords(self, self.coords)

    def ptx_text(self, name: NameOf) -> str:
        return (
            f"cp.async.bulk.tensor.{len(self.coords)}d.global.shared::cta.bulk_group "
            f"{_tensor_operand(name, self.tmap, self.coords)}, [{name(self.src)}]"
        )


@irdl_op_definition
class BulkCommitOp(FixedInstruction):
    """`cp.async.bulk.commit_group;`: close the current bulk group of TMA stores."""

    name = "ptx.bulk_commit"
    TEXT: ClassVar[str] = "cp.async.bulk.commit_group"


class BulkWaitBase(PtxInstruction, ABC):
    """Fields, constructor and checks of a wait on bulk groups (`ptx` and `hopper` ops)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ("pending",)

    pending = prop_def(IntAttr)
    """Bulk groups that may stay in flight (0 to 63)."""
    read = opt_prop_def(UnitAttr)
    """Wait only until the sources have been read (the shared memory may be reused)."""

    def __init__(self, pending: int = 0, read: bool = True):
        super().__init__(
            properties={"pending": IntAttr(pending), "read": UnitAttr() if read else None},
            operands=[[]],
        )

    def verify_kinds(self) -> None:
        check_range(self, "pending", self.pending.data, 0, 63)


@irdl_op_definition
class BulkWaitOp(BulkWaitBase):
    """`cp.async.bulk.wait_group[.read] N;`: wait until at most N bulk groups are pending."""

    name = "ptx.bulk_wait"

    def ptx_text(self, name: NameOf) -> str:
        read = ".read" if self.read is not None else ""
        return f"cp.async.bulk.wait_group{read} {self.pending.data}"


@irdl_op_definition
class WgmmaFenceOp(FixedInstruction):
    """`wgmma.fence.sync.aligned;`: order register accesses before wgmma."""

    name = "ptx.wgmma_fence"
    TEXT: ClassVar[str] = "wgmma.fence.sync.aligned"


@irdl_op_definition
class GridDepWaitOp(FixedInstruction):
    """`griddepcontrol.wait;`: wait until the grids this one depends on have completed and
    their memory is visible (at once for a launch without a programmatic dependency)."""

    name = "ptx.griddepcontrol_wait"
    TEXT: ClassVar[str] = "griddepcontrol.wait"


@irdl_op_definition
class GridDepLaunchOp(FixedInstruction):
    """`griddepcontrol.launch_dependents;`: the grids that depend on this one may launch
    (they still wait for its completion in their own `griddepcontrol.wait`)."""

    name = "ptx.griddepcontrol_launch_dependents"
    TEXT: ClassVar[str] = "griddepcontrol.launch_dependents"


@irdl_op_definition
class WgmmaCommitOp(FixedInstruction):
    """`wgmma.commit_group.sync.aligned;`."""

    name = "ptx.wgmma_commit"
    TEXT: ClassVar[str] = "wgmma.commit_group.sync.aligned"


class WgmmaWaitBase(PtxInstruction, ABC):
    """Fields, constructor and checks of a wait on wgmma groups (`ptx` and `hopper` ops)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ("pending",)

    pending = prop_def(IntAttr)
    """wgmma groups that may stay in flight (0 to 7)."""

    def __init__(self, pending: int = 0):
        super().__init__(properties={"pending": IntAttr(pending)}, operands=[[]])

    def verify_kinds(self) -> None:
        check_range(self, "pending", self.pending.data, 0, 7)


@irdl_op_definition
class WgmmaWaitOp(WgmmaWaitBase):
    """`wgmma.wait_group.sync.aligned N;`: at most N wgmma groups stay in flight."""

    name = "ptx.wgmma_wait"

    def ptx_text(self, name: NameOf) -> str:
        return f"wgmma.wait_group.sync.aligned {self.pending.data}"


FP8_TYPES = ("e4m3", "e5m2")
"""PTX's names of the fp8 types wgmma takes."""


@irdl_op_definition
class WgmmaOp(PtxInstruction):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 {d...}, adesc, bdesc, p, 1, 1,
    ta, tb;`: D (+)= A * B with both operands in shared memory.

    For fp8 (`ab_type` e4m3 or e5m2, `b_type` where B's differs) the instruction is
    `...m64nNk32.f32.e4m3.e5m2 {d...}, adesc, bdesc, p, 1, 1;`: K-major operands, no
    transpose bits. The accumulators are read and written in place (N/2 f32 registers per
    thread).
    """

    name = "ptx.wgmma"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("n", "ab_type", "trans_a", "trans_b")

    n = prop_def(IntAttr)
    """N of the m64nNk16 shape: a multiple of 8 in [8, 256]."""
    ab_type = prop_def(StringAttr)
    """Element type of A (and of B unless `b_type`): `bf16`, `f16`, `e4m3` or `e5m2`."""
    b_type = opt_prop_def(StringAttr)
    """Element type of B where it differs from A's (fp8: `e4m3` x `e5m2`)."""
    trans_a = prop_def(IntAttr)
    """0: A is K-major; 1: A is M-major."""
    trans_b = prop_def(IntAttr)
    """0: B is K-major; 1: B is N-major."""
    adesc = _operand_def(RegType)
    """Shared-memory matrix descriptor of A (b64)."""
    bdesc = _operand_def(RegType)
    """Shared-memory matrix descriptor of B (b64)."""
    scale_d = _operand_def(RegType)
    """Predicate: false computes D = A*B, true D += A*B."""
    acc = _var_operand_def(RegType)
    """The f32 accumulators, updated in place."""

    def __init__(
        self,
        acc: Sequence[SSAValue],
        adesc: SSAValue,
        bdesc: SSAValue,
        scale_d: SSAValue,
        *,
        n: int,
        ab_type: str = "bf16",
        trans_a: int = 0,
        trans_b: int = 0,
        b_type: str | None = None,
    ):
        super().__init__(
            properties={
                "n": IntAttr(n),
                "ab_type": StringAttr(ab_type),
                "b_type": StringAttr(b_type) if b_type not in (None, ab_type) else None,
                "trans_a": IntAttr(trans_a),
                "trans_b": IntAttr(trans_b),
            },
            operands=[adesc, bdesc, scale_d, list(acc), []],
        )

    def verify_kinds(self) -> None:
        n = self.n.data
        check_range(self, "N", n, 8, 256, step=8)
        check_choice(self, "ab_type", self.ab_type.data, ("bf16", "f16", *FP8_TYPES))
        b_type = self.b_type.data if self.b_type is not None else self.ab_type.data
        fp8 = self.ab_type.data in FP8_TYPES
        if b_type != self.ab_type.data and not (fp8 and b_type in FP8_TYPES):
            raise VerifyException(
                f"ptx.wgmma: b_type {b_type} differs from ab_type {self.ab_type.data}; only "
                "the fp8 types (e4m3, e5m2) mix"
            )
        for what, bit in (("trans_a", self.trans_a), ("trans_b", self.trans_b)):
            if bit.data not in (0, 1):
                raise VerifyException(f"ptx.wgmma: {what} must be 0 or 1, found {bit.data}")
            if fp8 and bit.data:
                raise VerifyException(
                    f"ptx.wgmma: {what} must be 0 for fp8 operands (K-major only)"
                )
        _require_address64(self, "adesc", self.adesc)
        _require_address64(self, "bdesc", self.bdesc)
        _require_category(self, "scale_d", self.scale_d, "pred")
        if len(self.acc) != n // 2:
            raise VerifyException(
                f"ptx.wgmma: m64n{n}k{self.instr_k} needs {n // 2} f32 accumulators, found "
                f"{len(self.acc)}"
            )
        for i, value in enumerate(self.acc):
            _require(self, f"accumulator {i}", value, "f32")

    @property
    def instr_k(self) -> int:
        """K of the instruction: 32 for fp8, 16 for bf16 and f16."""
        return 32 if self.ab_type.data in FP8_TYPES else 16

    def ptx_text(self, name: NameOf) -> str:
        ab = self.ab_type.data
        if ab in FP8_TYPES:
            b_type = self.b_type.data if self.b_type is not None else ab
            return (
                f"wgmma.mma_async.sync.aligned.m64n{self.n.data}k32.f32.{ab}.{b_type} "
                f"{_braced(name, self.acc)}, "
                f"{name(self.adesc)}, {name(self.bdesc)}, {name(self.scale_d)}, 1, 1"
            )
        return (
            f"wgmma.mma_async.sync.aligned.m64n{self.n.data}k16.f32.{ab}.{ab} "
            f"{_braced(name, self.acc)}, "
            f"{name(self.adesc)}, {name(self.bdesc)}, {name(self.scale_d)}, 1, 1, "
            f"{self.trans_a.data}, {self.trans_b.data}"
        )


class SetmaxnregBase(PtxInstruction, ABC):
    """Fields, constructor and checks of `setmaxnreg` (`ptx` and `hopper` ops)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ("action", "count")

    action = prop_def(StringAttr)
    """`inc` or `dec`."""
    count = prop_def(IntAttr)
    """The new register count per thread: a multiple of 8 in [24, 256]."""

    def __init__(self, action: str, count: int):
        super().__init__(
            properties={"action": StringAttr(action), "count": IntAttr(count)}, operands=[[]]
        )

    def verify_kinds(self) -> None:
        check_choice(self, "action", self.action.data, ("inc", "dec"))
        check_range(self, "count", self.count.data, 24, 256, step=8)


@irdl_op_definition
class SetmaxnregOp(SetmaxnregBase):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 N;` (by every thread of a warpgroup)."""

    name = "ptx.setmaxnreg"

    def ptx_text(self, name: NameOf) -> str:
        return f"setmaxnreg.{self.action.data}.sync.aligned.u32 {self.count.data}"


@irdl_op_definition
class ElectSyncOp(PtxInstruction):
    """`elect.sync _|%p, 0xffffffff;`: true in exactly one active lane of the warp."""

    name = "ptx.elect_sync"

    result = _result_def(RegType)

    def __init__(self):
        super().__init__(operands=[[]], result_types=[PRED])

    def verify_kinds(self) -> None:
        _require_category(self, "result", self.result, "pred")

    def ptx_text(self, name: NameOf) -> str:
        return f"elect.sync _|{name(self.result)}, 0xffffffff"


@irdl_op_definition
class ShflSyncOp(PtxInstruction):
    """A register of another lane of the warp, every lane taking part:
    `shfl.sync.bfly.b32 %f2, %f1, 1, 31, 0xffffffff;` (`bfly`: the lane whose id is this
    lane's xor `lane_mask`). A 32-bit register of any kind (an f32 one too)."""

    name = "ptx.shfl_sync"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("mode", "lane_mask")

    mode = prop_def(StringAttr)
    """How the source lane is found: `bfly` (xor), `up`, `down` or `idx`."""
    lane_mask = prop_def(IntAttr)
    """The lane operand, 0 to 31: the xor mask of `bfly`."""
    value = _operand_def(RegType)
    """This lane's register, which the other lanes read."""
    result = _result_def(RegType)

    def __init__(self, value: SSAValue, lane_mask: int, mode: str = "bfly"):
        super().__init__(
            properties={"mode": StringAttr(mode), "lane_mask": IntAttr(lane_mask)},
            operands=[value, []],
            result_types=[value.type],
        )

    def verify_kinds(self) -> None:
        _same_kind(self, [("value", self.value), ("result", self.result)])
        kind = _require_category(self, "value", self.value, "b,u,s,f")
        if kind.width != 32:
            raise VerifyException(
                f"ptx.shfl_sync: the value must be a 32-bit register, found !ptx.reg<{kind.name}>"
            )
        check_choice(self, "mode", self.mode.data, ("bfly", "up", "down", "idx"))
        check_below(self, "lane mask", self.lane_mask.data, 0, 32, "32")

    def ptx_text(self, name: NameOf) -> str:
        clamp = 0 if self.mode.data == "up" else 31
        return (
            f"shfl.sync.{self.mode.data}.b32 {name(self.result)}, {name(self.value)}, "
            f"{self.lane_mask.data}, {clamp}, 0xffffffff"
        )


@irdl_op_definition
class StmatrixOp(PtxInstruction):
    """`stmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 [addr], {r0, r1, r2, r3};`."""

    name = "ptx.stmatrix"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("layout",)

    layout = opt_prop_def(StringAttr)
    """`trans` to store each 8x8 matrix transposed; absent for row-major."""
    addr = _operand_def(RegType)
    """This thread's row address in shared memory."""
    values = _var_operand_def(RegType)
    """1, 2 or 4 registers of packed 16-bit pairs (one per 8x8 matrix)."""

    def __init__(self, addr: SSAValue, values: Sequence[SSAValue], trans: bool = False):
        super().__init__(
            properties={"layout": StringAttr("trans") if trans else None},
            operands=[addr, list(values), []],
        )

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the address", self.addr)
        if len(self.values) not in (1, 2, 4):
            raise VerifyException(
                f"ptx.stmatrix: expected 1, 2 or 4 registers, found {len(self.values)}"
            )
        for i, value in enumerate(self.values):
            _require(self, f"value {i}", value, "b32")
        if self.layout is not None and self.layout.data != "trans":
            raise VerifyException(
                f"ptx.stmatrix: layout must be 'trans' or absent, found '{self.layout.data}'"
            )

    def ptx_text(self, name: NameOf) -> str:
        trans = ".trans" if self.layout is not None else ""
        return (
            f"stmatrix.sync.aligned.m8n8.x{len(self.values)}{trans}.shared.b16 "
            f"[{name(self.addr)}], {_braced(name, self.values)}"
        )
