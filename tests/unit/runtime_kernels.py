"""Hand-written PTX kernels for the runtime tests.

test_runtime_gpu.py launches them on an sm_90 GPU; test_runtime.py assembles each with
ptxas on any machine, so a PTX mistake shows up without a GPU.
"""

from __future__ import annotations

SCALE_PTX = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry scale_bf16(
    .param .u64 out,
    .param .u64 in,
    .param .f32 factor,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b16 %h<3>;
    .reg .f32 %f<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    ld.param.f32 %f1, [factor];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.u32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd2;
    cvta.to.global.u64 %rd4, %rd1;
    mul.wide.u32 %rd5, %r5, 2;
    add.u64 %rd6, %rd3, %rd5;
    ld.global.b16 %h1, [%rd6];
    cvt.f32.bf16 %f2, %h1;
    mul.f32 %f3, %f2, %f1;
    cvt.rn.bf16.f32 %h2, %f3;
    add.u64 %rd7, %rd4, %rd5;
    st.global.b16 [%rd7], %h2;
DONE:
    ret;
}
"""
"""out[i] = bf16(in[i] * factor) for i < n; one thread per element."""


CLUSTER_PTX = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry cluster_ids(
    .param .u64 out
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<5>;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %cluster_nctarank;
    mov.u32 %r4, %cluster_ctarank;
    mul.wide.u32 %rd2, %r2, 8;
    add.u64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
DONE:
    ret;
}
"""
"""out[ctaid.x] = (CTAs in the cluster, rank of this CTA in the cluster)."""


def tma_copy_ptx(rank: int, box_bytes: int) -> str:
    """A kernel whose thread 0 TMA-loads box (ctaid * box) of src and TMA-stores it to dst."""
    coords = ", ".join(f"%c{axis}" for axis in range(rank))
    return f"""
.version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 16 .b8 smem[];

.visible .entry tma_copy(
    .param .align 64 .b8 src_map[128],
    .param .align 64 .b8 dst_map[128],
    .param .u32 box_x,
    .param .u32 box_y,
    .param .u32 box_z
)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b32 %c<3>;
    .reg .b64 %rd<3>;

    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u32 %r2, [box_x];
    ld.param.u32 %r3, [box_y];
    ld.param.u32 %r4, [box_z];
    mov.u32 %r5, %ctaid.x;
    mov.u32 %r6, %ctaid.y;
    mov.u32 %r7, %ctaid.z;
    mul.lo.u32 %c0, %r5, %r2;
    mul.lo.u32 %c1, %r6, %r3;
    mul.lo.u32 %c2, %r7, %r4;
    mov.u32 %r8, smem;
    add.u32 %r8, %r8, 1023;
    and.b32 %r8, %r8, -1024;
    add.u32 %r9, %r8, {box_bytes};
    mov.b64 %rd1, src_map;
    cvta.param.u64 %rd1, %rd1;
    mov.b64 %rd2, dst_map;
    cvta.param.u64 %rd2, %rd2;
    mbarrier.init.shared::cta.b64 [%r9], 1;
    fence.mbarrier_init.release.cluster;
    fence.proxy.async.shared::cta;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], {box_bytes};
    cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes
        [%r8], [%rd1, {{{coords}}}], [%r9];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r9], 0;
    @!%p2 bra WAIT;
    cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%rd2, {{{coords}}}], [%r8];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
DONE:
    ret;
}}
"""
