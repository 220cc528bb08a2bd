// RUN: mmcomp-opt %s | filecheck %s
// RUN: mmcomp-opt %s | mmcomp-opt | filecheck %s

// Axis handles of a dynamic extent print and parse as !sched.axis<?>: a split by a factor
// keeps the outer part dynamic, a split into parts the inner one; a merge or swizzle with
// a dynamic operand is dynamic.
func.func @f(%a: tensor<?x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<?x500xf32> attributes {fusion.space = #fusion.space<m = ?, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = ?, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
    %p, %q = sched.split %m into 4 : !sched.axis<?>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %t = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<?>
    %u = sched.merge %t, %n_cta : !sched.axis<?>, !sched.axis<128>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<?x200xbf16>, tensor<500x200xbf16>) -> tensor<?x500xf32>
  func.return %y : tensor<?x500xf32>
}
// CHECK:      %m, %n, %k = sched.space m = ?, n = 500, k = 200
// CHECK-NEXT: %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<?>
// CHECK-NEXT: %p, %q = sched.split %m into 4 : !sched.axis<?>
// CHECK:      %t = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<?>
// CHECK-NEXT: %u = sched.merge %t, %n_cta : !sched.axis<?>, !sched.axis<128>
