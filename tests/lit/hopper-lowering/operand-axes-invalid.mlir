// RUN: mmcomp-opt %s -p compile-to-ptx --split-input-file --verify-diagnostics | filecheck %s

// The lowering refuses mainloop operands whose axes a wgmma tile cannot hold.

// A without an m axis while M is 300: every row of its tile would be the same row.
func.func @replicated_rows(%a: tensor<1x1x256xbf16>, %b: tensor<300x512x256xbf16>) -> tensor<300x512xf32> attributes {sched.params = #sched.params<tile = 128x128x64, epilogue = registers>} {
  %y = fusion.mma %a [_, _, k], %b [m, n, k] -> [m, n] : (tensor<1x1x256xbf16>, tensor<300x512x256xbf16>) -> tensor<300x512xf32>
  func.return %y : tensor<300x512xf32>
}
// CHECK: lower-schedule-to-hopper: @replicated_rows: mainloop operand %a (roles [_, _, k]) has no m axis while the iteration space has m = 300: every one of its rows would be the same, and TMA cannot replicate them; give %a its m axis (broadcast it to the full extent before the contraction)

// -----

// B with an m axis (A has one too): a wgmma B tile spans n and k only.
func.func @b_with_m(%a: tensor<300x1x256xbf16>, %b: tensor<300x512x256xbf16>) -> tensor<300x512xf32> attributes {sched.params = #sched.params<tile = 128x128x64, epilogue = registers>} {
  %y = fusion.mma %a [m, _, k], %b [m, n, k] -> [m, n] : (tensor<300x1x256xbf16>, tensor<300x512x256xbf16>) -> tensor<300x512xf32>
  func.return %y : tensor<300x512xf32>
}
// CHECK: lower-schedule-to-hopper: @b_with_m: mainloop operand %b (roles [m, n, k]) is the B of a contraction but has an m axis; a wgmma B operand spans n and k only
