// REQUIRES: ptxas
// RUN: mmcomp-opt %s -t ptx | python -m mmcomp.arch.ptxas - --max-registers 32 --no-sass '\b(LDL|STL)\b' | filecheck %s
// RUN: mmcomp-opt %s -t ptx | not python -m mmcomp.arch.ptxas - --max-registers 8 2>&1 | filecheck %s --check-prefix=BUDGET

// The emitted PTX assembles for sm_90a; the resource report shows no spills.

ptx.module version 8.0 target sm_90a address_size 64 {
  ptx.entry @saxpy(x : ptr, y : ptr, a : f32, n : u32) reqntid [256] {
    %x = ptx.ld_param x : !ptx.reg<u64>
    %y = ptx.ld_param y : !ptx.reg<u64>
    %a = ptx.ld_param a : !ptx.reg<f32>
    %n = ptx.ld_param n : !ptx.reg<u32>
    %tid = ptx.sreg tid.x : !ptx.reg<u32>
    %cta = ptx.sreg ctaid.x : !ptx.reg<u32>
    %ntid = ptx.sreg ntid.x : !ptx.reg<u32>
    %i = ptx.mad %cta, %ntid, %tid : !ptx.reg<u32>
    %in = ptx.setp lt %i, %n : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    ptx.bra done if not %in
    %four = ptx.const 4 : !ptx.reg<u32>
    %off = ptx.mul_wide %i, %four : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u64>
    %gx = ptx.cvta global to %x : !ptx.reg<u64>
    %gy = ptx.cvta global to %y : !ptx.reg<u64>
    %px = ptx.add %gx, %off : !ptx.reg<u64>
    %py = ptx.add %gy, %off : !ptx.reg<u64>
    %vx = ptx.ld global %px {qualifier = "nc"} : (!ptx.reg<u64>) -> !ptx.reg<f32>
    %vy = ptx.ld global %py : (!ptx.reg<u64>) -> !ptx.reg<f32>
    %r = ptx.fma %a, %vx, %vy : !ptx.reg<f32>
    ptx.st global %py, %r : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    ptx.label done
    ptx.ret
  }
}

// CHECK: saxpy: {{[0-9]+}} registers, 0 bytes spill stores, 0 bytes spill loads, 0 bytes stack, 0 bytes smem, 0 barriers
// BUDGET: error: entry 'saxpy' uses {{[0-9]+}} registers, more than the budget of 8
