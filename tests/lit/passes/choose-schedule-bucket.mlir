// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{backend=interp}' | filecheck %s
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{backend=interp schedule-m=16}' | filecheck %s --check-prefix=DECODE

// A dynamic M scheduled for an M bucket: `schedule-m` is the M the heuristic chooses for
// (mmcomp.schedule.buckets compiles one kernel per bucket this way). At the nominal M = 4096 the
// 4096 x 4096 linear fills the SMs with 128x256 tiles; for M up to 16 it has 16 tiles, so
// it takes narrower ones and splits K across the SMs. The M stays dynamic in both.
// CHECK:       fusion.space = #fusion.space<m = ?, n = 4096, k = 4096>
// CHECK-SAME:  sched.params = #sched.params<tile = 128x256x64, {{.*}}split_k = 1,
// DECODE:      fusion.space = #fusion.space<m = ?, n = 4096, k = 4096>
// DECODE-SAME: split_k = 4,
func.func @linear(%a: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<?x4096xf32> {
  %0 = fusion.linear %a, %w : (tensor<?x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<?x4096xf32>
  func.return %0 : tensor<?x4096xf32>
}
