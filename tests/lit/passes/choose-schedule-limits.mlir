// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p propagate-axis-mapping,choose-schedule | filecheck %s
// The whole pipeline reports the same (choose-schedule is its second pass):
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p compile-to-ptx | filecheck %s --check-prefix=PIPE

// M = 2^40: past the 32-bit tile indices, loop bounds and TMA coordinates.
// CHECK: choose-schedule: @huge_m: M (iteration axis m) = 1099511627776: past what the kernel can index; each extent must be at most 2147483392 (2^31 - 256: tile indices, loop bounds and TMA coordinates are 32-bit integers)
// PIPE: choose-schedule: @huge_m: M (iteration axis m) = 1099511627776: past what the kernel can index
func.func @huge_m(%a: tensor<1099511627776x512xbf16>, %w: tensor<512x512xbf16>) -> tensor<1099511627776x512xbf16> {
  %0 = fusion.linear %a, %w : (tensor<1099511627776x512xbf16>, tensor<512x512xbf16>) -> tensor<1099511627776x512xf32>
  %1 = fusion.cast %0 : tensor<1099511627776x512xf32> to tensor<1099511627776x512xbf16>
  func.return %1 : tensor<1099511627776x512xbf16>
}

// -----

// K = 2^31.
// CHECK: choose-schedule: @huge_k: K (iteration axis k) = 2147483648: past what the kernel can index
// PIPE: choose-schedule: @huge_k: K (iteration axis k) = 2147483648
func.func @huge_k(%a: tensor<64x2147483648xbf16>, %w: tensor<64x2147483648xbf16>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x2147483648xbf16>, tensor<64x2147483648xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}

// -----

// A batch extent past the limit names the batch axis.
// CHECK: choose-schedule: @huge_batch: batch axis b0 = 4294967296: past what the kernel can index
// PIPE: choose-schedule: @huge_batch: batch axis b0 = 4294967296
func.func @huge_batch(%a: tensor<4294967296x64x64xbf16>, %b: tensor<4294967296x64x64xbf16>) -> tensor<4294967296x64x64xf32> {
  %0 = fusion.matmul %a, %b : (tensor<4294967296x64x64xbf16>, tensor<4294967296x64x64xbf16>) -> tensor<4294967296x64x64xf32>
  func.return %0 : tensor<4294967296x64x64xf32>
}

// -----

// Every extent fits, but the tiles do not: 2^30 x 2^30 outputs in 128x256 tiles are 2^33
// work units.
// CHECK: choose-schedule: @many_tiles: tile 128x256x64 with split_k = 1 gives 34359738368 work units (batch 1 x 8388608 M tiles x 4096 N tiles x 1 slices); the kernel's 32-bit tile loop counts at most 2147483647
func.func @many_tiles(%a: tensor<1073741824x64xbf16>, %w: tensor<1048576x64xbf16>) -> tensor<1073741824x1048576xf32> {
  %0 = fusion.linear %a, %w : (tensor<1073741824x64xbf16>, tensor<1048576x64xbf16>) -> tensor<1073741824x1048576xf32>
  func.return %0 : tensor<1073741824x1048576xf32>
}

// -----

// A batched operand of 2^40 elements per batch: its outer byte stride passes TMA's 2^40.
// CHECK: choose-schedule: @wide_stride: mma operand 0 (2x1048576x1048576): axis 0 has a stride of 2199023255552 bytes; TMA strides are below 2^40 = 1099511627776 bytes
func.func @wide_stride(%a: tensor<2x1048576x1048576xbf16>, %b: tensor<2x1048576x64xbf16>) -> tensor<2x1048576x64xf32> {
  %0 = fusion.matmul %a, %b : (tensor<2x1048576x1048576xbf16>, tensor<2x1048576x64xbf16>) -> tensor<2x1048576x64xf32>
  func.return %0 : tensor<2x1048576x64xf32>
}

// -----

// A written split_k past the K blocks (k = 128: two blocks of 64) is clamped to them.
// CHECK-LABEL: func.func @split_past_k
// CHECK-SAME: split_k = 2,
// PIPE: ptx.entry @split_past_k
func.func @split_past_k(%a: tensor<128x128xbf16>, %w: tensor<128x128xbf16>) -> tensor<128x128xf32> attributes {sched.params = #sched.params<tile = 128x128x64, split_k = 3>} {
  %0 = fusion.linear %a, %w : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xf32>
  func.return %0 : tensor<128x128xf32>
}
