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
    BINARY_OPS,
    CONTRACTION_OPS,
    GELU_APPROXIMATIONS,
    UNARY_OPS,
    AddOp,
    BinaryOp,
    BroadcastOp,
    CastOp,
    DivOp,
    ExpOp,
    FusedMultiplySumOp,
    GeluOp,
    LinearOp,
    MatmulOp,
    MmaOp,
    MulOp,
    NegOp,
    PointwiseOp,
    ReluOp,
    SigmoidOp,
    SiluOp,
    SplatOp,
    SubOp,
    TanhOp,
    UnaryOp,
    broadcast_shapes,
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
    "GELU_APPROXIMATIONS",
    "broadcast_shapes",
    "MatmulOp",
    "LinearOp",
    "FusedMultiplySumOp",
    "MmaOp",
    "BroadcastOp",
    "SplatOp",
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
    "CONTRACTION_OPS",
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
