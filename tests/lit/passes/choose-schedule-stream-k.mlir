// The strategy option takes the stream-K strategies as mmcomp.compile's keyword does; the
// heuristic then leaves K unsplit (stream-K splits it) where it would otherwise split it.
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{strategy=stream-k}' | filecheck %s
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{strategy=hybrid-stream-k}' | filecheck %s --check-prefix=HYBRID
// RUN: mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule' | filecheck %s --check-prefix=SPLIT
// RUN: not mmcomp-opt %s -p 'propagate-axis-mapping,choose-schedule{strategy=stream-k split-k=2}' 2>&1 | filecheck %s --check-prefix=BOTH

// CHECK: strategy = stream-k, split_k = 1,
// HYBRID: strategy = hybrid-stream-k, split_k = 1,
// SPLIT: strategy = persistent, split_k = {{[2-9]}},
// BOTH: strategy stream-k with split_k = 2: stream-K splits the K blocks itself; split_k must be 1
func.func @linear(%a: tensor<64x4096xbf16>, %w: tensor<512x4096xbf16>) -> tensor<64x512xbf16> {
  %0 = fusion.linear %a, %w : (tensor<64x4096xbf16>, tensor<512x4096xbf16>) -> tensor<64x512xf32>
  %1 = fusion.cast %0 : tensor<64x512xf32> to tensor<64x512xbf16>
  func.return %1 : tensor<64x512xbf16>
}
