// RUN: not mmcomp-opt %s -p compile-to-ptx -t ptx 2>&1 | filecheck %s
// A use before the definition is refused before any pass runs, with the verifier's located
// message (not an error deep in materialize-schedule).

func.func @f(%a: tensor<64x32xbf16>, %w: tensor<48x32xbf16>, %t: tensor<64x48xbf16>) -> tensor<64x48xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xf32>
  // CHECK: use-before-def.mlir:[[# @LINE + 1]]:8: error: fusion.mul: operand 1 is used before it is defined (by the fusion.cast at {{.*}}use-before-def.mlir:[[# @LINE + 2]]:8, later in the block)
  %2 = fusion.mul %0, %1 : tensor<64x48xf32>
  %1 = fusion.cast %t : tensor<64x48xbf16> to tensor<64x48xf32>
  func.return %2 : tensor<64x48xf32>
}
// CHECK-NOT: Traceback
