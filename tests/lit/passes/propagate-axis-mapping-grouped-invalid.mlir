// RUN: mmcomp-opt %s -p propagate-axis-mapping --verify-diagnostics --split-input-file | filecheck %s

// Two grouped linears over different offsets: a kernel has one partition of its rows.
func.func @two_partitions(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>,
                          %p: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  %1 = fusion.grouped_linear %x, %w offsets %p : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  %2 = fusion.add %0, %1 : tensor<?x128xf32>
  func.return %2 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: operand 'offsets': expected the group sizes of the first contraction (fusion.grouped_linear operand 'offsets'), the same value in the same layout: the grouped linears of one fusion share one partition of the rows into groups

// -----

// A dense linear beside a grouped one.
func.func @dense_and_grouped(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %d: tensor<128x64xbf16>,
                             %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  %1 = fusion.linear %x, %d : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xf32>
  %2 = fusion.add %0, %1 : tensor<?x128xf32>
  func.return %2 : tensor<?x128xf32>
}
// CHECK: fusion.linear: a fusion.linear and a fusion.grouped_linear in one fusion: every contraction of a grouped fusion is a fusion.grouped_linear over the same group sizes (one iteration space, with its g axis)

// -----

// An epilogue operand per group ([G, N]) has no axis of the contiguous result [T, N].
func.func @per_group_operand(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>,
                             %s: tensor<8x128xf32>) -> tensor<8x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  %1 = fusion.exp %s : tensor<8x128xf32>
  func.return %1 : tensor<8x128xf32>
}
// CHECK: fusion.exp: function argument #3 (%s): axis 0 (extent 8) fits no axis of the iteration space (g = 8, m = ?, n = 128, k = 64); an epilogue operand must line up with the contraction's result, as [M, N], [1, N], [M, 1] or [N]
