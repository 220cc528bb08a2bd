// RUN: mmcomp-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// Only m, k and batch axes of the iteration space may be dynamic.
// CHECK: #fusion.space: axis 'n': expected a static extent (only m, k and batch axes are dynamic)
func.func @dynamic_n(%a: tensor<?x8xbf16>) -> tensor<?x8xbf16> attributes {fusion.space = #fusion.space<m = ?, n = ?, k = 8>} {
  %0 = fusion.relu %a : tensor<?x8xbf16>
  func.return %0 : tensor<?x8xbf16>
}
