"""The `fusion` dialect: matmul fusions at the tensor level, as users write them.

Bodies are `func.func` with builtin ranked tensor types of static shape. Element types are
bf16, f16 and f32; contractions (`matmul`, `linear`, `fused_multiply_sum`, `mma`) produce
f32. Pointwise operands have equal shapes and element types: broadcasts (`broadcast`),
casts (`cast`) and scalar constants (`splat`) are explicit ops.

`propagate-axis-mapping` lowers every contraction to `fusion.mma` and attaches axis roles
(`#fusion.roles<[m, n]>`) and the iteration space (`#fusion.space<m = 4, n = 8, k = 16>`).
The syntax of every op, with one example each, is in docs/fusion-dialect.md.
"""

from xdsl.ir import Dialect

from mmcomp.dialects.fusion.attrs import (
    ELEMENT_TYPES,
    AxisRolesAttr,
    IterationSpaceAttr,
    dtype_name,
    float_literal,
    is_role,
    parse_role_list,
    print_role_list,
    role_order,
    roles_problem,
    space_problem,
    tensor_type,
)
from mmcomp.dialects.fusion.ops import (
    CONTRACTION_OPS,
    BroadcastOp,
    FunctionalSyntaxOp,
    FusedMultiplySumOp,
    LinearOp,
    MatmulOp,
    MmaOp,
    SplatOp,
    broadcast_shapes,
    checked_tensor,
    format_shape,
    parse_operands_with_roles,
    print_operands_with_roles,
    static_shape,
)
from mmcomp.dialects.fusion.pointwise import (
    BINARY_OPS,
    GELU_APPROXIMATIONS,
    UNARY_OPS,
    AddOp,
    BinaryOp,
    CastOp,
    DivOp,
    ExpOp,
    GeluOp,
    MulOp,
    NegOp,
    PointwiseOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
    SubOp,
    TanhOp,
    UnaryOp,
)

__all__ = [
    "ELEMENT_TYPES",
    "dtype_name",
    "tensor_type",
    "is_role",
    "role_order",
    "float_literal",
    "AxisRolesAttr",
    "IterationSpaceAttr",
    "roles_problem",
    "space_problem",
    "parse_role_list",
    "print_role_list",
    "format_shape",
    "checked_tensor",
    "static_shape",
    "broadcast_shapes",
    "parse_operands_with_roles",
    "print_operands_with_roles",
    "FunctionalSyntaxOp",
    "MatmulOp",
    "LinearOp",
    "FusedMultiplySumOp",
    "MmaOp",
    "BroadcastOp",
    "SplatOp",
    "CONTRACTION_OPS",
    "GELU_APPROXIMATIONS",
    "PointwiseOp",
    "BinaryOp",
    "UnaryOp",
    "AddOp",
    "SubOp",
    "MulOp",
    "DivOp",
    "NegOp",
    "ExpOp",
    "TanhOp",
    "SigmoidOp",
    "SiluOp",
    "ReluOp",
    "GeluOp",
    "CastOp",
    "BINARY_OPS",
    "UNARY_OPS",
    "Fusion",
]

Fusion = Dialect(
    "fusion",
    [
        MatmulOp,
        LinearOp,
        FusedMultiplySumOp,
        MmaOp,
        BroadcastOp,
        SplatOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        NegOp,
        ExpOp,
        TanhOp,
        SigmoidOp,
        SiluOp,
        GeluOp,
        ReluOp,
        CastOp,
    ],
    [AxisRolesAttr, IterationSpaceAttr],
)
"""The fusion dialect."""
