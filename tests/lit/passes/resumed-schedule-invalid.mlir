// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p tile-split | filecheck %s --check-prefix=SPLIT
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p tile-merge | filecheck %s --check-prefix=MERGE
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p materialize-schedule | filecheck %s --check-prefix=MAT

// tile-split and the schedule passes after it read fusion.space, the fusion.roles and the
// schedule's sched.space of a function resumed from a printed stage: each must be what the
// tensor types and fusion ops give.

// Params written, K edited: tile-split refuses to split a space that the operands contradict.
// SPLIT: resumed-schedule-invalid.mlir:[[# @LINE + 1]]:1: error: tile-split: @params_k64: fusion.space k = 64 disagrees with the operands (k = 200 from fusion.mma operand 'a' (%a: tensor<300x200xbf16>))
func.func @params_k64(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 64>, sched.params = #sched.params<tile = 128x128x64>} {
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}

// -----

// Scheduled, N edited in fusion.space.
// MERGE: error: tile-merge: @space_n64: fusion.space n = 64 disagrees with the operands (n = 500 from fusion.mma operand 'b' (%w: tensor<500x200xbf16>))
// MAT: error: materialize-schedule: @space_n64: fusion.space n = 64 disagrees with the operands (n = 500 from fusion.mma operand 'b' (%w: tensor<500x200xbf16>))
func.func @space_n64(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 64, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}

// -----

// Scheduled, K edited in the schedule's sched.space (and its splits).
// MERGE: error: tile-merge: @sched_space_k128: sched.space k = 128 disagrees with the operands (k = 200 from fusion.mma operand 'a' (%a: tensor<300x200xbf16>))
// MAT: error: materialize-schedule: @sched_space_k128: sched.space k = 128 disagrees with the operands (k = 200 from fusion.mma operand 'a' (%a: tensor<300x200xbf16>))
func.func @sched_space_k128(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 128
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<128>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  func.return %y : tensor<300x500xf32>
}

// -----

// Scheduled, a row operand's roles edited: materialize-schedule would load it along m.
// MERGE: error: tile-merge: @row_as_m: argument #2 (%row: tensor<1x500xf32>): fusion.roles [_, m] but propagate-axis-mapping derives [_, n]
// MAT: error: materialize-schedule: @row_as_m: argument #2 (%row: tensor<1x500xf32>): fusion.roles [_, m] but propagate-axis-mapping derives [_, n]
func.func @row_as_m(%a: tensor<300x200xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<500x200xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %row: tensor<1x500xf32> {fusion.roles = #fusion.roles<[_, m]>}) -> tensor<300x500xf32> attributes {fusion.space = #fusion.space<m = 300, n = 500, k = 200>} {
  sched.schedule params #sched.params<tile = 128x128x64> {
    %m, %n, %k = sched.space m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128 : !sched.axis<300>
    %n_tile, %n_cta = sched.split %n by 128 : !sched.axis<500>
    %k_blk, %k_cta = sched.split %k by 64 : !sched.axis<200>
  }
  %y = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<300x200xbf16>, tensor<500x200xbf16>) -> tensor<300x500xf32>
  %b = fusion.broadcast %row new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<1x500xf32> to tensor<300x500xf32>
  %s = fusion.mul %y, %b {fusion.roles = #fusion.roles<[m, n]>} : tensor<300x500xf32>
  func.return %s : tensor<300x500xf32>
}
