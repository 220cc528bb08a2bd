// RUN: mmcomp-opt %s -p tile-split --verify-diagnostics --split-input-file | filecheck %s --check-prefix=SPLIT
// RUN: mmcomp-opt %s -p tile-merge --verify-diagnostics --split-input-file | filecheck %s --check-prefix=MERGE
// RUN: mmcomp-opt %s -p split-k --verify-diagnostics --split-input-file | filecheck %s --check-prefix=SPLITK
// RUN: mmcomp-opt %s -p insert-persistent-loop --verify-diagnostics --split-input-file | filecheck %s --check-prefix=LOOP
// RUN: mmcomp-opt %s -p materialize-schedule --verify-diagnostics --split-input-file | filecheck %s --check-prefix=MAT

// A fusion after propagate-axis-mapping, with neither params nor a schedule.
func.func @no_params(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// SPLIT: tile-split: @no_params: no 'sched.params' attribute: choose the schedule first (mmcomp.compile's choose-schedule stage, or write sched.params = #sched.params<...> on the func)
// MERGE: tile-merge: @no_params: no sched.schedule (run propagate-axis-mapping, choose the params with 'sched.params' and run tile-split first)
// SPLITK: split-k: @no_params: no sched.schedule (run propagate-axis-mapping, choose the params with 'sched.params' and run tile-split first)
// LOOP: insert-persistent-loop: @no_params: no sched.schedule (run propagate-axis-mapping, choose the params with 'sched.params' and run tile-split first)
// MAT: materialize-schedule: @no_params: no sched.schedule (run propagate-axis-mapping, choose the params with 'sched.params' and run tile-split first)

// -----

// A fusion as written (no fusion.space), without params.
func.func @as_written(%a: tensor<300x200xbf16>, %w: tensor<500x200xbf16>) -> tensor<300x500xf32> {
  %y = fusion.linear %a, %w : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// SPLIT: tile-split: @as_written: no 'sched.params' attribute
// MERGE: tile-merge: @as_written: no sched.schedule (run propagate-axis-mapping
// SPLITK: split-k: @as_written: no sched.schedule
// LOOP: insert-persistent-loop: @as_written: no sched.schedule
// MAT: materialize-schedule: @as_written: no sched.schedule

// -----

// Params chosen, but tile-split has not run: the later passes say so.
func.func @params_only(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>, sched.params = #sched.params<tile = 128x128x64>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// SPLIT: func.func @params_only
// SPLIT: sched.schedule params #sched.params<tile = 128x128x64
// MERGE: tile-merge: @params_only: no sched.schedule yet (it has 'sched.params': run tile-split first)
// SPLITK: split-k: @params_only: no sched.schedule yet (it has 'sched.params': run tile-split first)
// LOOP: insert-persistent-loop: @params_only: no sched.schedule yet (it has 'sched.params': run tile-split first)
// MAT: materialize-schedule: @params_only: no sched.schedule yet (it has 'sched.params': run tile-split first)

// -----

// tile-split twice: the params moved into the schedule.
func.func @twice(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}
// SPLIT: tile-split: @twice: already has a sched.schedule (tile-split already ran)
// MERGE: tile-merge: @twice: axis m is not split into tiles (run tile-split first)
// SPLITK: split-k: @twice: the m and n tile indices are not merged (run tile-merge first)
// LOOP: insert-persistent-loop: @twice: the m and n tile indices are not merged (run tile-merge first)
// MAT: materialize-schedule: @twice: axis m is not split into tiles (run tile-split first)

// -----

// A plain function (no fusion ops) is left alone by every schedule pass.
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// SPLIT:      func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// SPLIT-NEXT:   func.return %x : tensor<4xf32>
// MERGE:      func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// MERGE-NEXT:   func.return %x : tensor<4xf32>
// SPLITK:     func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// SPLITK-NEXT:  func.return %x : tensor<4xf32>
// LOOP:       func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// LOOP-NEXT:    func.return %x : tensor<4xf32>
// MAT:        func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
// MAT-NEXT:     func.return %x : tensor<4xf32>
