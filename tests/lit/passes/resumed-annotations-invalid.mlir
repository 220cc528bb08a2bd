// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p choose-schedule | filecheck %s
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p 'choose-schedule{backend=interp}' | filecheck %s
// RUN: mmcomp-opt %s --split-input-file --verify-diagnostics -p propagate-axis-mapping | filecheck %s --check-prefix=PAM
// RUN: not mmcomp-opt %s --split-input-file -t ptx -p choose-schedule,tile-split,tile-merge,split-k,insert-persistent-loop,materialize-schedule,partition-warp-roles,carry-ring-positions,lower-schedule-to-hopper,convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx 2>&1 | filecheck %s --check-prefix=PTX

// A printed stage resumed after an edit: the fusion.space and fusion.roles that
// propagate-axis-mapping wrote must be those it derives from the tensor types and fusion
// ops. choose-schedule (for either back end) refuses one that differs, naming the function,
// the attribute, the argument or op and both values; propagate-axis-mapping, run again,
// refuses it too rather than silently replacing it.

// K written as 64: the operands say 257.
// CHECK: resumed-annotations-invalid.mlir:[[# @LINE + 4]]:1: error: choose-schedule: @linear_k64: fusion.space k = 64 disagrees with the operands (k = 257 from fusion.mma operand 'a' (%a: tensor<97x257xbf16>))
// PTX: error: choose-schedule: @linear_k64: fusion.space k = 64 disagrees with the operands
// PTX-NOT: .entry
// PAM: error: propagate-axis-mapping: @linear_k64: fusion.space k = 64 disagrees with the operands (k = 257 from fusion.mma operand 'a' (%a: tensor<97x257xbf16>))
func.func @linear_k64(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 64>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.cast %0 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32> to tensor<97x131xbf16>
  func.return %1 : tensor<97x131xbf16>
}

// -----

// A batch axis that no operand has.
// CHECK: error: choose-schedule: @linear_b0: fusion.space b0 = 2 disagrees with the operands (they have no axis b0: m = 97, n = 131, k = 257)
// PAM: error: propagate-axis-mapping: @linear_b0: fusion.space b0 = 2 disagrees
func.func @linear_b0(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<b0 = 2, m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.cast %0 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32> to tensor<97x131xbf16>
  func.return %1 : tensor<97x131xbf16>
}

// -----

// A row operand [1, N] given the roles [_, m] (m = 97, but its axis 1 has extent 131).
// CHECK: resumed-annotations-invalid.mlir:[[# @LINE + 2]]:1: error: choose-schedule: @row_as_m: argument #2 (%row: tensor<1x131xbf16>): fusion.roles [_, m] but propagate-axis-mapping derives [_, n]
// PAM: error: propagate-axis-mapping: @row_as_m: argument #2 (%row: tensor<1x131xbf16>): fusion.roles [_, m] but propagate-axis-mapping derives [_, n]
func.func @row_as_m(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %row: tensor<1x131xbf16> {fusion.roles = #fusion.roles<[_, m]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.cast %row {fusion.roles = #fusion.roles<[_, n]>} : tensor<1x131xbf16> to tensor<1x131xf32>
  %2 = fusion.broadcast %1 new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<1x131xf32> to tensor<97x131xf32>
  %3 = fusion.mul %0, %2 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32>
  %4 = fusion.cast %3 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32> to tensor<97x131xbf16>
  func.return %4 : tensor<97x131xbf16>
}

// -----

// A column operand [M, 1] given the roles [n, _], then [b3, _].
// CHECK: error: choose-schedule: @column_as_n: argument #2 (%col: tensor<97x1xf32>): fusion.roles [n, _] but propagate-axis-mapping derives [m, _]
// PAM: error: propagate-axis-mapping: @column_as_n: argument #2 (%col: tensor<97x1xf32>): fusion.roles [n, _] but propagate-axis-mapping derives [m, _]
func.func @column_as_n(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %col: tensor<97x1xf32> {fusion.roles = #fusion.roles<[n, _]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.broadcast %col new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x1xf32> to tensor<97x131xf32>
  %2 = fusion.add %0, %1 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32>
  %3 = fusion.cast %2 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32> to tensor<97x131xbf16>
  func.return %3 : tensor<97x131xbf16>
}

// -----

// CHECK: error: choose-schedule: @column_as_batch: argument #2 (%col: tensor<97x1xf32>): fusion.roles [b3, _] but propagate-axis-mapping derives [m, _]
// PAM: error: propagate-axis-mapping: @column_as_batch: argument #2 (%col: tensor<97x1xf32>): fusion.roles [b3, _] but propagate-axis-mapping derives [m, _]
func.func @column_as_batch(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %col: tensor<97x1xf32> {fusion.roles = #fusion.roles<[b3, _]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.broadcast %col new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x1xf32> to tensor<97x131xf32>
  %2 = fusion.add %0, %1 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32>
  %3 = fusion.cast %2 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32> to tensor<97x131xbf16>
  func.return %3 : tensor<97x131xbf16>
}

// -----

// An op's roles: the error is at the op.
// CHECK: resumed-annotations-invalid.mlir:[[# @LINE + 4]]:8: error: choose-schedule: @op_roles: fusion.cast (op #1 of the body): fusion.roles [m, n] but propagate-axis-mapping derives [_, n]
// PAM: error: propagate-axis-mapping: @op_roles: fusion.cast (op #1 of the body): fusion.roles [m, n] but propagate-axis-mapping derives [_, n]
func.func @op_roles(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %row: tensor<1x131xbf16> {fusion.roles = #fusion.roles<[_, n]>}) -> tensor<97x131xf32> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.cast %row {fusion.roles = #fusion.roles<[m, n]>} : tensor<1x131xbf16> to tensor<1x131xf32>
  %2 = fusion.broadcast %1 new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<1x131xf32> to tensor<97x131xf32>
  %3 = fusion.mul %0, %2 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32>
  func.return %3 : tensor<97x131xf32>
}

// -----

// Roles missing on an argument: choose-schedule needs every value's roles;
// propagate-axis-mapping, run again, writes the ones it derives.
// CHECK: error: choose-schedule: @missing: argument #2 (%row: tensor<1x131xbf16>): no fusion.roles, but propagate-axis-mapping derives [_, n]
// PAM-LABEL: func.func @missing
// PAM-SAME: %row: tensor<1x131xbf16> {fusion.roles = #fusion.roles<[_, n]>}
func.func @missing(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}, %row: tensor<1x131xbf16>) -> tensor<97x131xf32> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.cast %row {fusion.roles = #fusion.roles<[_, n]>} : tensor<1x131xbf16> to tensor<1x131xf32>
  %2 = fusion.broadcast %1 new_dims [false, false] {fusion.roles = #fusion.roles<[m, n]>} : tensor<1x131xf32> to tensor<97x131xf32>
  %3 = fusion.mul %0, %2 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32>
  func.return %3 : tensor<97x131xf32>
}

// -----

// Right annotations pass both, unchanged by propagate-axis-mapping.
// CHECK-LABEL: func.func @right
// CHECK-SAME: sched.params = #sched.params<
// PAM-LABEL: func.func @right(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
func.func @right(%a: tensor<97x257xbf16> {fusion.roles = #fusion.roles<[m, k]>}, %w: tensor<131x257xbf16> {fusion.roles = #fusion.roles<[n, k]>}) -> tensor<97x131xbf16> attributes {fusion.space = #fusion.space<m = 97, n = 131, k = 257>} {
  %0 = fusion.mma %a [m, k], %w [n, k] -> [m, n] {fusion.roles = #fusion.roles<[m, n]>} : (tensor<97x257xbf16>, tensor<131x257xbf16>) -> tensor<97x131xf32>
  %1 = fusion.cast %0 {fusion.roles = #fusion.roles<[m, n]>} : tensor<97x131xf32> to tensor<97x131xbf16>
  func.return %1 : tensor<97x131xbf16>
}
