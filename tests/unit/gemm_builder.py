"""A bf16 GEMM built directly in the hopper dialect: the proof that the bottom of the stack
(hopper -> ptx -> ptxas -> runtime) computes the right thing on an H200.

C[M, N] = A[M, K] @ B, with B either K-major (`linear`: W[N, K], C = A W^T) or N-major
(`matmul`: B[K, N]). One CTA per 128x128 tile of C, 384 threads in three warpgroups:

- warpgroup 0, the producer: lowers its registers to 40; one elected thread of its first
  warp runs the K loop, waiting on the stage's `empty` mbarrier, announcing 32 KiB on its
  `full` mbarrier and issuing the TMA loads of the A tile (128 x 64) and the B tile
  (128 x 64 K-major, or two 64 x 64 boxes N-major), 128-byte swizzled, into a 3-stage ring;
- warpgroups 1 and 2, the consumers: raise their registers to 232; each owns 64 rows of the
  tile and runs the same K loop, waiting on `full`, issuing four wgmma m64n128k16 (one per
  k16 step of the 64-wide K block) and, once they are complete, arriving on `empty`;
- the epilogue converts the 64 f32 accumulators of each consumer thread to bf16 and stores
  them with st.global, each store predicated on its row < M and column < N (`store`), or
  writes them to shared memory with stmatrix and stores each warpgroup's 64 x 128 half with
  one TMA store, which clips at M and N (`tma`).

Out-of-bounds parts of the TMA boxes read as zeros, so K, M and N need not be multiples of
the tile; the expected transaction bytes are always those of whole boxes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    ModuleOp,
    UnrealizedConversionCastOp,
    bf16,
    i32,
)
from xdsl.ir import SSAValue

from mmcomp.arch.smem_layout import Major, OperandTile, SwizzleMode
from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.ptx import (
    BF16,
    F32,
    S32,
    U64,
    AndOp,
    KernelBuilder,
    PtxModuleOp,
    SharedOp,
    XorOp,
)
from mmcomp.dialects.ptx.target import emit_ptx
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx

TILE_M = 128
"""Rows of C per CTA."""
TILE_N = 128
"""Columns of C per CTA."""
BLOCK_K = 64
"""K extent of one pipeline stage (one 128-byte swizzled row of bf16)."""
STAGES = 3
"""Depth of the shared-memory ring."""
THREADS = 384
"""Producer warpgroup plus two consumer warpgroups."""
ROWS_PER_CONSUMER = 64
"""Rows of the tile each consumer warpgroup computes (wgmma's M)."""

A_TILE = OperandTile(Major.K, SwizzleMode.B128, TILE_M, BLOCK_K)
"""The A tile of one stage: 128 rows x 64 K, K-major (one 16 KiB box)."""
A_WARPGROUP_TILE = OperandTile(Major.K, SwizzleMode.B128, ROWS_PER_CONSUMER, BLOCK_K)
"""The 64-row half of the A tile one consumer warpgroup reads."""
B_TILES = {
    "linear": OperandTile(Major.K, SwizzleMode.B128, TILE_N, BLOCK_K),
    "matmul": OperandTile(Major.MN, SwizzleMode.B128, TILE_N, BLOCK_K),
}
"""The B tile of one stage for each layout: W[N, K] rows (K-major) or B[K, N] (N-major)."""
STAGE_BYTES = A_TILE.bytes + B_TILES["linear"].bytes
"""Bytes of one stage: the A and B tiles, also the transaction bytes of its full barrier."""
SHARED_BYTES = STAGES * STAGE_BYTES + 1024
"""Dynamic shared memory: the ring plus slack to align its base to 1024 bytes."""
C_STAGING_BYTES = ROWS_PER_CONSUMER * TILE_N * 2
"""The bf16 C tile of one consumer warpgroup, staged for the TMA-store epilogue."""
EPILOGUES = ("store", "tma")
"""How C is written: predicated st.global, or stmatrix into shared memory and a TMA store."""


@dataclass(frozen=True)
class GemmKernel:
    """A built GEMM kernel: its PTX and how to launch it."""

    layout: str
    """`linear` (B is W[N, K]) or `matmul` (B is B[K, N])."""
    name: str
    """The entry's name."""
    ptx: str
    """The PTX text."""
    epilogue: str = "store"
    """`store` (predicated st.global) or `tma` (stmatrix, then a TMA store)."""
    threads: int = THREADS
    """Threads per CTA."""
    shared_bytes: int = SHARED_BYTES
    """Dynamic shared memory per CTA."""

    def grid(self, m: int, n: int) -> tuple[int, int]:
        """CTAs along x (N tiles) and y (M tiles)."""
        return (-(-n // TILE_N), -(-m // TILE_M))


class _Ring:
    """Stage index and phase parity of one side of the ring, as mutable registers."""

    def __init__(self, k: KernelBuilder):
        self.stage = k.const(0)
        self.phase = k.const(0)

    def advance(self, k: KernelBuilder, one: SSAValue, stages: SSAValue) -> None:
        """stage += 1; on wrap-around stage = 0 and the phase flips."""
        k.assign(self.stage, k.add(self.stage, one))
        wrapped = k.setp("eq", self.stage, stages)
        with k.predicated(wrapped):
            k.assign(self.stage, k.const(0))
            k.assign(self.phase, k.binary(XorOp, self.phase, one))


def _index(k: KernelBuilder, register: SSAValue) -> SSAValue:
    """A coordinate or stage register as the index value the TMA copies and
    `hopper.ring_barrier` take."""
    return k.append(UnrealizedConversionCastOp.get([register], [IndexType()])).results[0]


def _tile(k: KernelBuilder, register: SSAValue) -> SSAValue:
    """A tile's shared-address register (1024-aligned) as the `!hopper.smem` that
    `hopper.matrix_descriptor` takes."""
    smem = hopper.SmemType(1024)
    return k.append(UnrealizedConversionCastOp.get([register], [smem])).results[0]


def _row(k: KernelBuilder, register: SSAValue) -> SSAValue:
    """An stmatrix row's shared-address register (16-byte aligned) as the `!hopper.smem`
    that `hopper.stmatrix` takes."""
    smem = hopper.SmemType(hopper.STMATRIX_ROW_ALIGN)
    return k.append(UnrealizedConversionCastOp.get([register], [smem])).results[0]


def _parity(k: KernelBuilder, register: SSAValue) -> SSAValue:
    """A phase-parity register as the i32 value `hopper.mbarrier_wait` takes."""
    return k.append(UnrealizedConversionCastOp.get([register], [i32])).results[0]


def _tensor_map(rows: int, columns: int, swizzle: int = 128) -> hopper.TensorMapType:
    """A bf16 matrix of extents known at launch, read or written in boxes rows x columns."""
    return hopper.TensorMapType((DYNAMIC_INDEX, DYNAMIC_INDEX), bf16, (rows, columns), swizzle)


def _emit_gemm(k: KernelBuilder, layout: str, epilogue: str) -> None:
    b_tile = B_TILES[layout]
    zero, one = k.const(0), k.const(1)
    stages = k.const(STAGES)
    tid = k.append(hopper.IdOp("thread.x")).result
    warpgroup = k.append(hopper.IdOp("warpgroup")).result
    n0 = k.mul(k.sreg("ctaid.x"), k.const(TILE_N))
    m0 = k.mul(k.sreg("ctaid.y"), k.const(TILE_M))
    m_extent, n_extent, k_extent = k.ld_param("m"), k.ld_param("n"), k.ld_param("k")
    k_blocks = k.shr(k.add(k_extent, k.const(BLOCK_K - 1)), k.const(6))

    # The ring: 1024-aligned in dynamic shared memory; full and empty barriers per stage.
    raw = k.addr_of("smem")
    ring = k.binary(AndOp, k.add(raw, k.const(1023)), k.const(0xFFFFFC00))
    bars = k.addr_of("bars")

    def stage_address(stage: SSAValue) -> SSAValue:
        return k.add(ring, k.mul(stage, k.const(STAGE_BYTES)))

    consumers = 2 * 128
    rings = {
        "full": k.append(hopper.BarrierRingOp(bars, hopper.BarrierRingType(STAGES, 1))).result,
        "empty": k.append(
            hopper.BarrierRingOp(
                k.add(bars, k.const(hopper.BARRIER_BYTES * STAGES)),
                hopper.BarrierRingType(STAGES, consumers),
            )
        ).result,
    }

    def barrier(stage: SSAValue | int, kind: str) -> SSAValue:
        if isinstance(stage, SSAValue):
            stage = _index(k, stage)
        return k.append(hopper.RingBarrierOp(rings[kind], stage)).result

    initial = [barrier(stage, kind) for stage in range(STAGES) for kind in ("full", "empty")]
    with k.predicated(k.setp("eq", tid, zero)):
        for stage_barrier in initial:
            k.append(hopper.MbarrierInitOp(stage_barrier))
        k.append(ptx.FenceOp("mbarrier_init"))
    k.bar("sync", 0)

    k.bra("consumer", k.setp("ne", warpgroup, zero))

    # Producer warpgroup: one elected thread of warp 0 issues every load.
    k.append(ptx.SetmaxnregOp("dec", 40))
    k.bra("done", k.setp("ne", k.append(hopper.IdOp("warp")).result, zero))
    elected = k.append(ptx.ElectSyncOp()).result
    k.bra("done", elected, negated=True)
    map_a = k.append(hopper.TensorMapParamOp("tmap_a", _tensor_map(TILE_M, BLOCK_K))).result
    b_box = (TILE_N, BLOCK_K) if layout == "linear" else (BLOCK_K, 64)
    map_b = k.append(hopper.TensorMapParamOp("tmap_b", _tensor_map(*b_box))).result
    block = k.const(0)
    ring_in = _Ring(k)
    k.label("produce")
    k.bra("done", k.setp("ge", block, k_blocks))
    # The first pass over the ring waits on the opposite parity: it returns at once.
    k.append(
        hopper.MbarrierWaitOp(
            barrier(ring_in.stage, "empty"), _parity(k, k.binary(XorOp, ring_in.phase, one))
        )
    )
    full = barrier(ring_in.stage, "full")
    k.append(hopper.MbarrierArriveExpectTxOp(full, STAGE_BYTES))
    a_dst = stage_address(ring_in.stage)
    b_dst = k.add(a_dst, k.const(A_TILE.bytes))
    k_coord = _index(k, k.mov(k.shl(block, k.const(6)), S32))
    k.append(hopper.TmaLoadOp(a_dst, map_a, full, [k_coord, _index(k, k.mov(m0, S32))]))
    if layout == "linear":
        k.append(hopper.TmaLoadOp(b_dst, map_b, full, [k_coord, _index(k, k.mov(n0, S32))]))
    else:
        for box in range(b_tile.boxes):
            n_coord = _index(k, k.mov(k.add(n0, k.const(box * b_tile.box_elements)), S32))
            dst = k.add(b_dst, k.const(box * b_tile.box_bytes))
            k.append(hopper.TmaLoadOp(dst, map_b, full, [n_coord, k_coord]))
    k.assign(block, k.add(block, one))
    ring_in.advance(k, one, stages)
    k.bra("produce")

    # Consumer warpgroups: 64 rows each.
    k.label("consumer")
    k.append(ptx.SetmaxnregOp("inc", 232))
    consumer = k.sub(warpgroup, one)
    accumulators = [k.const(0.0, F32) for _ in range(TILE_N // 2)]
    tile = k.append(hopper.AccumulatorOp(accumulators, hopper.AccumulatorType(TILE_N))).result
    block = k.const(0)
    ring_out = _Ring(k)
    row_offset = k.mul(consumer, k.const(A_WARPGROUP_TILE.bytes))
    k.label("consume")
    k.bra("epilogue", k.setp("ge", block, k_blocks))
    k.append(hopper.MbarrierWaitOp(barrier(ring_out.stage, "full"), _parity(k, ring_out.phase)))
    a_tile = _tile(k, k.add(stage_address(ring_out.stage), row_offset))
    b_src = _tile(k, k.add(stage_address(ring_out.stage), k.const(A_TILE.bytes)))
    k.append(ptx.WgmmaFenceOp())
    a_attr = hopper.tile("k", 128, ROWS_PER_CONSUMER, BLOCK_K)
    b_attr = hopper.tile(b_tile.major.value, 128, TILE_N, BLOCK_K)
    for step in range(BLOCK_K // 16):
        a_desc = k.append(hopper.MatrixDescriptorOp(a_tile, a_attr, 0, 16 * step)).result
        b_desc = k.append(hopper.MatrixDescriptorOp(b_src, b_attr, 0, 16 * step)).result
        k.append(hopper.WgmmaMmaAsyncOp("bf16", a_desc, b_desc, tile, "k", b_tile.major.value))
    k.append(ptx.WgmmaCommitOp())
    k.append(ptx.WgmmaWaitOp(0))
    k.append(hopper.MbarrierArriveOp(barrier(ring_out.stage, "empty")))
    k.assign(block, k.add(block, one))
    ring_out.advance(k, one, stages)
    k.bra("consume")

    k.label("epilogue")
    if epilogue == "store":
        _store_epilogue(k, accumulators, consumer, m0, n0, m_extent, n_extent)
    else:
        _tma_epilogue(k, accumulators, consumer, ring, m0, n0)
    k.label("done")
    k.ret()


def _store_epilogue(
    k: KernelBuilder,
    accumulators: list[SSAValue],
    consumer: SSAValue,
    m0: SSAValue,
    n0: SSAValue,
    m_extent: SSAValue,
    n_extent: SSAValue,
) -> None:
    """bf16 st.global of each accumulator, predicated on row < M and column < N.

    Thread (warp w, lane l) holds rows r, r + 8 (r = 16 w + l / 4) and, in column block j,
    columns 8 j + 2 (l % 4) and the one after.
    """
    one = k.const(1)
    warp = k.append(hopper.IdOp("warp_in_warpgroup")).result
    lane = k.append(hopper.IdOp("lane")).result
    row = k.add(
        k.add(m0, k.mul(consumer, k.const(ROWS_PER_CONSUMER))),
        k.add(k.shl(warp, k.const(4)), k.shr(lane, k.const(2))),
    )
    column = k.add(n0, k.shl(k.binary(AndOp, lane, k.const(3)), one))
    c_base = k.cvta("global", k.ld_param("c"), to=True)
    element = k.add(k.mul_wide(row, n_extent), k.cvt(column, U64))
    first = k.add(c_base, k.shl(element, k.const(1)))
    second = k.add(first, k.shl(k.cvt(k.shl(n_extent, k.const(3)), U64), k.const(1)))
    row_ok = [
        k.setp("lt", row, m_extent),
        k.setp("lt", k.add(row, k.const(8)), m_extent),
    ]
    for j in range(TILE_N // 8):
        for half in range(2):
            col = k.add(column, k.const(8 * j + half))
            col_ok = k.setp("lt", col, n_extent)
            for r, address in enumerate((first, second)):
                value = k.cvt(accumulators[4 * j + 2 * r + half], BF16, "rn")
                ok = k.binary(AndOp, row_ok[r], col_ok)
                with k.predicated(ok):
                    k.st("global", address, [value], offset=2 * (8 * j + half))


def _tma_epilogue(
    k: KernelBuilder,
    accumulators: list[SSAValue],
    consumer: SSAValue,
    ring: SSAValue,
    m0: SSAValue,
    n0: SSAValue,
) -> None:
    """stmatrix the bf16 tile into shared memory, then one TMA store per warpgroup.

    The staging tile of a warpgroup is 64 rows of 256 bytes after the ring. In an x4
    stmatrix, matrices 0 and 1 are rows 0-7 and 8-15 of column block j, 2 and 3 those of
    block j + 1; lane l gives the address of row l % 8 of matrix l / 8. The TMA store
    clips the box at M and N.
    """
    warp = k.append(hopper.IdOp("warp_in_warpgroup")).result
    lane = k.append(hopper.IdOp("lane")).result
    matrix = k.shr(lane, k.const(3))
    row = k.add(
        k.add(k.shl(warp, k.const(4)), k.shl(k.binary(AndOp, matrix, k.const(1)), k.const(3))),
        k.binary(AndOp, lane, k.const(7)),
    )
    column = k.shl(k.shr(matrix, k.const(1)), k.const(3))
    staging = k.add(ring, k.const(STAGES * STAGE_BYTES))
    staging = k.add(staging, k.mul(consumer, k.const(C_STAGING_BYTES)))
    address = k.add(staging, k.add(k.mul(row, k.const(2 * TILE_N)), k.shl(column, k.const(1))))
    for j in range(0, TILE_N // 8, 2):
        packed = [
            k.cvt_pack(accumulators[4 * block + 2 * half + 1], accumulators[4 * block + 2 * half])
            for block in (j, j + 1)
            for half in (0, 1)
        ]
        dst = k.add(address, k.const(16 * j))
        k.append(hopper.StmatrixOp(_row(k, dst), packed))
    k.append(ptx.FenceOp("proxy_async"))
    k.append(ptx.BarOp("sync", 1, 2 * 128))
    leader = k.setp("eq", k.append(hopper.IdOp("thread_in_warpgroup")).result, k.const(0))
    with k.predicated(leader):
        c_type = _tensor_map(ROWS_PER_CONSUMER, TILE_N, swizzle=0)
        map_c = k.append(hopper.TensorMapParamOp("tmap_c", c_type)).result
        m_coord = k.mov(k.add(m0, k.mul(consumer, k.const(ROWS_PER_CONSUMER))), S32)
        n_coord = k.mov(n0, S32)
        k.append(hopper.TmaStoreOp(map_c, staging, [_index(k, n_coord), _index(k, m_coord)]))
        k.append(ptx.BulkCommitOp())
        k.append(ptx.BulkWaitOp(0, read=True))


def build_gemm(layout: str, epilogue: str = "store") -> GemmKernel:
    """Build, lower (convert-hopper-to-ptx) and print the GEMM kernel for `layout`."""
    if layout not in B_TILES:
        raise ValueError(f"build_gemm: layout must be 'linear' or 'matmul', found {layout!r}")
    if epilogue not in EPILOGUES:
        raise ValueError(f"build_gemm: epilogue must be 'store' or 'tma', found {epilogue!r}")
    name = f"gemm_{layout}" if epilogue == "store" else f"gemm_{layout}_{epilogue}"
    module = PtxModuleOp()
    module.body.block.add_op(SharedOp("smem", 1024))
    module.body.block.add_op(SharedOp("bars", 8, 16 * STAGES))
    params = [
        ("tmap_a", "tmap"),
        ("tmap_b", "tmap"),
        ("c", "ptr") if epilogue == "store" else ("tmap_c", "tmap"),
        ("m", "u32"),
        ("n", "u32"),
        ("k", "u32"),
    ]
    k = KernelBuilder.create(module, name, params, maxnreg=168, reqntid=(THREADS,))
    _emit_gemm(k, layout, epilogue)
    root = ModuleOp([module])
    root.verify()
    ConvertHopperToPtx().apply(Context(), root)
    shared = SHARED_BYTES + (2 * C_STAGING_BYTES if epilogue == "tma" else 0)
    return GemmKernel(layout, name, emit_ptx(root), epilogue, shared_bytes=shared)


def _c_argument(kernel: GemmKernel, device_c: Any) -> Any:
    """The C argument: the array itself, or its tensor map for the TMA-store epilogue."""
    if kernel.epilogue == "store":
        return device_c
    from mmcomp.runtime import encode_tensor_map

    return encode_tensor_map(device_c, box=(ROWS_PER_CONSUMER, TILE_N), swizzle=0)


def run_gemm(kernel: GemmKernel, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ W^T (linear) or A @ B (matmul) on the GPU, for bf16 host arrays."""
    from mmcomp.runtime import (
        BFLOAT16,
        DeviceBuffer,
        encode_tensor_map,
        launch,
        load_module,
        synchronize,
    )

    m, depth = a.shape
    n = b.shape[0] if kernel.layout == "linear" else b.shape[1]
    device_a, device_b = DeviceBuffer.from_host(a), DeviceBuffer.from_host(b)
    device_c = DeviceBuffer.empty((m, n), BFLOAT16)
    device_c.fill_bytes(0xFF)  # NaN: any element the kernel fails to write shows up
    map_a = encode_tensor_map(device_a, box=(TILE_M, BLOCK_K), swizzle=128)
    b_box = (TILE_N, BLOCK_K) if kernel.layout == "linear" else (BLOCK_K, 64)
    map_b = encode_tensor_map(device_b, box=b_box, swizzle=128)
    function = load_module(kernel.ptx).function(kernel.name)
    args: list[Any] = [map_a, map_b, _c_argument(kernel, device_c)]
    args += [np.uint32(m), np.uint32(n), np.uint32(depth)]
    launch(
        function,
        kernel.grid(m, n),
        kernel.threads,
        args,
        smem_bytes=kernel.shared_bytes,
    )
    synchronize()
    return device_c.to_host()


def benchmark(kernel: GemmKernel, m: int, n: int, k: int, repeat: int = 20) -> dict[str, float]:
    """Median milliseconds of the kernel and (if torch is there) of torch.matmul, same shape."""
    from mmcomp.runtime import (
        BFLOAT16,
        DeviceBuffer,
        encode_tensor_map,
        launch,
        load_module,
        time_launches,
    )

    device_a = DeviceBuffer.empty((m, k), BFLOAT16)
    b_shape = (n, k) if kernel.layout == "linear" else (k, n)
    device_b = DeviceBuffer.empty(b_shape, BFLOAT16)
    device_c = DeviceBuffer.empty((m, n), BFLOAT16)
    for buffer in (device_a, device_b):
        buffer.fill_bytes(0x3C)  # bf16 0x3C3C: about 0.0115, finite products
    map_a = encode_tensor_map(device_a, box=(TILE_M, BLOCK_K), swizzle=128)
    b_box = (TILE_N, BLOCK_K) if kernel.layout == "linear" else (BLOCK_K, 64)
    map_b = encode_tensor_map(device_b, box=b_box, swizzle=128)
    function = load_module(kernel.ptx).function(kernel.name)
    args: list[Any] = [map_a, map_b, _c_argument(kernel, device_c)]
    args += [np.uint32(m), np.uint32(n), np.uint32(k)]

    def run() -> None:
        launch(function, kernel.grid(m, n), kernel.threads, args, smem_bytes=kernel.shared_bytes)

    times = {"mmcomp": float(np.median(time_launches(run, repeat)))}
    try:
        import torch  # pyright: ignore[reportMissingImports]
    except ImportError:
        return times
    ta = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    tb = torch.randn(*b_shape, device="cuda", dtype=torch.bfloat16)
    operand = tb.t() if kernel.layout == "linear" else tb
    for _ in range(3):
        torch.matmul(ta, operand)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(repeat + 1)]
    events[0].record()
    for index in range(repeat):
        torch.matmul(ta, operand)
        events[index + 1].record()
    torch.cuda.synchronize()
    times["torch"] = float(
        np.median([events[i].elapsed_time(events[i + 1]) for i in range(repeat)])
    )
    return times


def check(layout: str, m: int, n: int, k: int, epilogue: str = "store") -> float:
    """Run once on fresh random inputs; the relative error against float64 numpy."""
    import ml_dtypes

    rng = np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b_shape = (n, k) if layout == "linear" else (k, n)
    b = rng.standard_normal(b_shape, dtype=np.float32).astype(ml_dtypes.bfloat16)
    c = run_gemm(build_gemm(layout, epilogue), a, b).astype(np.float64)
    b64 = b.astype(np.float64)
    expected = a.astype(np.float64) @ (b64.T if layout == "linear" else b64)
    return float(np.linalg.norm(c - expected) / np.linalg.norm(expected))


def main(argv: list[str]) -> None:
    """`gemm_builder.py`: time both layouts against torch.matmul (information only);
    `gemm_builder.py check M N K`: run each layout once (e.g. under compute-sanitizer)."""
    if argv[:1] == ["check"]:
        m, n, k = (int(x) for x in argv[1:4])
        for layout, epilogue in itertools.product(B_TILES, EPILOGUES):
            error = check(layout, m, n, k, epilogue)
            print(f"gemm_{layout} ({epilogue}) {m}x{n}x{k}: relative error {error:.2e}")
        return
    for layout, epilogue in itertools.product(B_TILES, EPILOGUES):
        kernel = build_gemm(layout, epilogue)
        for m, n, k in ((1024, 1024, 1024), (4096, 4096, 4096)):
            times = benchmark(kernel, m, n, k)
            flops = 2.0 * m * n * k
            report = ", ".join(
                f"{who} {ms:.3f} ms ({flops / ms / 1e9:.0f} TFLOP/s)" for who, ms in times.items()
            )
            print(f"{kernel.name} {m}x{n}x{k}: {report}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
