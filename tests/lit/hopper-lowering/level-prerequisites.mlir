// RUN: mmcomp-opt %s -p partition-warp-roles --verify-diagnostics --split-input-file | filecheck %s --check-prefix=PART
// RUN: mmcomp-opt %s -p lower-schedule-to-hopper --verify-diagnostics --split-input-file | filecheck %s --check-prefix=LOWER
// RUN: mmcomp-opt %s -p convert-hopper-to-ptx --verify-diagnostics --split-input-file | filecheck %s --check-prefix=CONV
// RUN: mmcomp-opt %s -p convert-arith-to-ptx --verify-diagnostics --split-input-file | filecheck %s --check-prefix=ARITH

// The Hopper passes on a module that the schedule passes have not brought to their level:
// each names itself, the function, what is missing, what the function is and the passes
// to run first. (level-kernels.mlir: materialized and partitioned kernels.)

// A fusion as written.
func.func @as_written(%a: tensor<300x200xbf16>, %w: tensor<500x200xbf16>) -> tensor<300x500xf32> {
  %y = fusion.linear %a, %w : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// PART: partition-warp-roles: @as_written: not a materialized kernel (no 'sched.grid') (a fusion as written, without 'fusion.space'): run propagate-axis-mapping through materialize-schedule first
// LOWER: lower-schedule-to-hopper: @as_written: no 'hopper.warp_roles' (a fusion as written, without 'fusion.space'): run propagate-axis-mapping through carry-ring-positions first
// CONV: convert-hopper-to-ptx: @as_written: not lowered to a hopper.kernel (a fusion as written, without 'fusion.space'): run propagate-axis-mapping through lower-schedule-to-hopper first

// -----

// After propagate-axis-mapping: no params yet.
func.func @no_params(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// PART: partition-warp-roles: @no_params: not a materialized kernel (no 'sched.grid') (a fusion with 'fusion.space' but no 'sched.params'): run choose-schedule through materialize-schedule first
// LOWER: lower-schedule-to-hopper: @no_params: no 'hopper.warp_roles' (a fusion with 'fusion.space' but no 'sched.params'): run choose-schedule through carry-ring-positions first
// CONV: convert-hopper-to-ptx: @no_params: not lowered to a hopper.kernel (a fusion with 'fusion.space' but no 'sched.params'): run choose-schedule through lower-schedule-to-hopper first

// -----

// Params chosen, no schedule: partition-warp-roles used to take the 'sched.params' alone
// for a kernel.
func.func @params_only(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// PART: partition-warp-roles: @params_only: not a materialized kernel (no 'sched.grid') (a fusion with 'sched.params' but no sched.schedule): run tile-split through materialize-schedule first
// LOWER: lower-schedule-to-hopper: @params_only: no 'hopper.warp_roles' (a fusion with 'sched.params' but no sched.schedule): run tile-split through carry-ring-positions first
// CONV: convert-hopper-to-ptx: @params_only: not lowered to a hopper.kernel (a fusion with 'sched.params' but no sched.schedule): run tile-split through lower-schedule-to-hopper first

// -----

// A schedule, not materialized.
func.func @scheduled(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// PART: partition-warp-roles: @scheduled: not a materialized kernel (no 'sched.grid') (a fusion whose sched.schedule is not materialized): run the passes it lacks of tile-merge, split-k, insert-persistent-loop, then materialize-schedule first
// LOWER: lower-schedule-to-hopper: @scheduled: no 'hopper.warp_roles' (a fusion whose sched.schedule is not materialized): run the passes it lacks of tile-merge, split-k, insert-persistent-loop, then materialize-schedule through carry-ring-positions first
// CONV: convert-hopper-to-ptx: @scheduled: not lowered to a hopper.kernel (a fusion whose sched.schedule is not materialized): run the passes it lacks of tile-merge, split-k, insert-persistent-loop, then materialize-schedule through lower-schedule-to-hopper first

// -----

// A plain function is left alone by each pass; convert-hopper-to-ptx lowers the
// hopper.kernel beside it.
hopper.kernel @ids() reqntid [128] {
  %t = hopper.id thread.x : !ptx.reg<u32>
  ptx.ret
}
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// PART:       hopper.id thread.x
// PART:       func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// PART-NEXT:    func.return %x : tensor<4xf32>
// LOWER:      hopper.id thread.x
// LOWER:      func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// LOWER-NEXT:   func.return %x : tensor<4xf32>
// CONV-NOT:   hopper.
// CONV:       ptx.entry @ids() reqntid [128] {
// CONV-NEXT:    ptx.sreg tid.x
// CONV:       func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// CONV-NEXT:    func.return %x : tensor<4xf32>
// convert-arith-to-ptx takes ptx entries: the hopper.kernel is an error naming the passes
// that lower it.
// ARITH:      convert-arith-to-ptx: @ids: not lowered to a ptx.module (a hopper.kernel): run convert-hopper-to-ptx through convert-scf-to-ptx first
