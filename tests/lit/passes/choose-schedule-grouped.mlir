// RUN: mmcomp-opt %s -p propagate-axis-mapping,choose-schedule --verify-diagnostics | filecheck %s

// The grouped schedule is not built: choose-schedule refuses a grouped linear, at the op.
func.func @grouped(%x: tensor<?x64xbf16>, %w: tensor<8x128x64xbf16>, %o: tensor<8xi32>) -> tensor<?x128xf32> {
  %0 = fusion.grouped_linear %x, %w offsets %o : (tensor<?x64xbf16>, tensor<8x128x64xbf16>, tensor<8xi32>) -> tensor<?x128xf32>
  func.return %0 : tensor<?x128xf32>
}
// CHECK: fusion.grouped_linear: the grouped schedule (tiles over the groups, from the group sizes read on the device) is not built yet, so the cuda back end cannot compile it
