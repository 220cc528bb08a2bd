// Every example in examples/ parses, verifies, and round-trips through mmcomp-opt unchanged.
// RUN: mmcomp-opt %S/../../../examples/batched_matmul.mlir -o %t.batched_matmul.1.mlir && mmcomp-opt %t.batched_matmul.1.mlir -o %t.batched_matmul.2.mlir && diff %t.batched_matmul.1.mlir %t.batched_matmul.2.mlir
// RUN: mmcomp-opt %S/../../../examples/epilogue_broadcast.mlir -o %t.epilogue_broadcast.1.mlir && mmcomp-opt %t.epilogue_broadcast.1.mlir -o %t.epilogue_broadcast.2.mlir && diff %t.epilogue_broadcast.1.mlir %t.epilogue_broadcast.2.mlir
// RUN: mmcomp-opt %S/../../../examples/epilogue_silu.mlir -o %t.epilogue_silu.1.mlir && mmcomp-opt %t.epilogue_silu.1.mlir -o %t.epilogue_silu.2.mlir && diff %t.epilogue_silu.1.mlir %t.epilogue_silu.2.mlir
// RUN: mmcomp-opt %S/../../../examples/fused_multiply_sum.mlir -o %t.fused_multiply_sum.1.mlir && mmcomp-opt %t.fused_multiply_sum.1.mlir -o %t.fused_multiply_sum.2.mlir && diff %t.fused_multiply_sum.1.mlir %t.fused_multiply_sum.2.mlir
// RUN: mmcomp-opt %S/../../../examples/horizontal_silu_mul.mlir -o %t.horizontal_silu_mul.1.mlir && mmcomp-opt %t.horizontal_silu_mul.1.mlir -o %t.horizontal_silu_mul.2.mlir && diff %t.horizontal_silu_mul.1.mlir %t.horizontal_silu_mul.2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_bf16.mlir -o %t.linear_bf16.1.mlir && mmcomp-opt %t.linear_bf16.1.mlir -o %t.linear_bf16.2.mlir && diff %t.linear_bf16.1.mlir %t.linear_bf16.2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_bias_f16.mlir -o %t.linear_bias_f16.1.mlir && mmcomp-opt %t.linear_bias_f16.1.mlir -o %t.linear_bias_f16.2.mlir && diff %t.linear_bias_f16.1.mlir %t.linear_bias_f16.2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_bias_gelu.mlir -o %t.linear_bias_gelu.1.mlir && mmcomp-opt %t.linear_bias_gelu.1.mlir -o %t.linear_bias_gelu.2.mlir && diff %t.linear_bias_gelu.1.mlir %t.linear_bias_gelu.2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_relu_scale.mlir -o %t.linear_relu_scale.1.mlir && mmcomp-opt %t.linear_relu_scale.1.mlir -o %t.linear_relu_scale.2.mlir && diff %t.linear_relu_scale.1.mlir %t.linear_relu_scale.2.mlir
// RUN: mmcomp-opt %S/../../../examples/matmul.mlir -o %t.matmul.1.mlir && mmcomp-opt %t.matmul.1.mlir -o %t.matmul.2.mlir && diff %t.matmul.1.mlir %t.matmul.2.mlir
// Each example also runs through propagate-axis-mapping, and that output round-trips too.
// RUN: mmcomp-opt %S/../../../examples/batched_matmul.mlir -p propagate-axis-mapping -o %t.batched_matmul.pam1.mlir && mmcomp-opt %t.batched_matmul.pam1.mlir -o %t.batched_matmul.pam2.mlir && diff %t.batched_matmul.pam1.mlir %t.batched_matmul.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/epilogue_broadcast.mlir -p propagate-axis-mapping -o %t.epilogue_broadcast.pam1.mlir && mmcomp-opt %t.epilogue_broadcast.pam1.mlir -o %t.epilogue_broadcast.pam2.mlir && diff %t.epilogue_broadcast.pam1.mlir %t.epilogue_broadcast.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/epilogue_silu.mlir -p propagate-axis-mapping -o %t.epilogue_silu.pam1.mlir && mmcomp-opt %t.epilogue_silu.pam1.mlir -o %t.epilogue_silu.pam2.mlir && diff %t.epilogue_silu.pam1.mlir %t.epilogue_silu.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/fused_multiply_sum.mlir -p propagate-axis-mapping -o %t.fused_multiply_sum.pam1.mlir && mmcomp-opt %t.fused_multiply_sum.pam1.mlir -o %t.fused_multiply_sum.pam2.mlir && diff %t.fused_multiply_sum.pam1.mlir %t.fused_multiply_sum.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/horizontal_silu_mul.mlir -p propagate-axis-mapping -o %t.horizontal_silu_mul.pam1.mlir && mmcomp-opt %t.horizontal_silu_mul.pam1.mlir -o %t.horizontal_silu_mul.pam2.mlir && diff %t.horizontal_silu_mul.pam1.mlir %t.horizontal_silu_mul.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_bf16.mlir -p propagate-axis-mapping -o %t.linear_bf16.pam1.mlir && mmcomp-opt %t.linear_bf16.pam1.mlir -o %t.linear_bf16.pam2.mlir && diff %t.linear_bf16.pam1.mlir %t.linear_bf16.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_bias_f16.mlir -p propagate-axis-mapping -o %t.linear_bias_f16.pam1.mlir && mmcomp-opt %t.linear_bias_f16.pam1.mlir -o %t.linear_bias_f16.pam2.mlir && diff %t.linear_bias_f16.pam1.mlir %t.linear_bias_f16.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_bias_gelu.mlir -p propagate-axis-mapping -o %t.linear_bias_gelu.pam1.mlir && mmcomp-opt %t.linear_bias_gelu.pam1.mlir -o %t.linear_bias_gelu.pam2.mlir && diff %t.linear_bias_gelu.pam1.mlir %t.linear_bias_gelu.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/linear_relu_scale.mlir -p propagate-axis-mapping -o %t.linear_relu_scale.pam1.mlir && mmcomp-opt %t.linear_relu_scale.pam1.mlir -o %t.linear_relu_scale.pam2.mlir && diff %t.linear_relu_scale.pam1.mlir %t.linear_relu_scale.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/matmul.mlir -p propagate-axis-mapping -o %t.matmul.pam1.mlir && mmcomp-opt %t.matmul.pam1.mlir -o %t.matmul.pam2.mlir && diff %t.matmul.pam1.mlir %t.matmul.pam2.mlir
// RUN: mmcomp-opt %S/../../../examples/epilogue_silu.mlir | filecheck %s

// The design card's epilogue, as examples/epilogue_silu.mlir holds it.
// CHECK:      func.func @epilogue_silu(%a: tensor<4096x5120xbf16>, %w: tensor<14336x5120xbf16>, %t: tensor<4096x14336xbf16>) -> (tensor<4096x14336xf32>, tensor<4096x14336xbf16>) {
// CHECK-NEXT:   %0 = fusion.linear %a, %w : (tensor<4096x5120xbf16>, tensor<14336x5120xbf16>) -> tensor<4096x14336xf32>
// CHECK-NEXT:   %1 = fusion.silu %0 : tensor<4096x14336xf32>
// CHECK-NEXT:   %2 = fusion.cast %t : tensor<4096x14336xbf16> to tensor<4096x14336xf32>
// CHECK-NEXT:   %3 = fusion.mul %1, %2 : tensor<4096x14336xf32>
// CHECK-NEXT:   %4 = fusion.cast %3 : tensor<4096x14336xf32> to tensor<4096x14336xbf16>
// CHECK-NEXT:   func.return %0, %4 : tensor<4096x14336xf32>, tensor<4096x14336xbf16>
