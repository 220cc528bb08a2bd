"""The `fusion` dialect: matmul fusions at the tensor level, as users write them.

Bodies are `func.func` with builtin ranked tensor types; an m or batch extent may be
dynamic (`tensor<?x4096xbf16>`), n and k are static (docs/dynamic-shapes.md). Element types
are bf16, f16, f32 and the fp8 types f8E4M3FN and f8E5M2 (and i32 for the group sizes of
`grouped_linear`, docs/grouped.md); contractions (`matmul`, `linear`,
`fused_multiply_sum`, `mma`, `grouped_linear`) produce f32, and those of fp8 factors may
carry f32 scales (`scales %sa, %sb`: per-tensor, row-wise or block-wise,
`mmcomp.dialects.fusion.scales`). `quantize_scale` and `quantize` make fp8 tensors with
their scales (`mmcomp.dialects.fusion.quantize`).
Pointwise operands have equal shapes and element types: broadcasts (`broadcast`), casts
(`cast`) and scalar constants (`splat`) are explicit ops.

`propagate-axis-mapping` lowers every contraction to `fusion.mma` and attaches axis roles
(`#fusion.roles<[m, n]>`) and the iteration space (`#fusion.space<m = 4, n = 8, k = 16>`).
The syntax of every op, with one example each, is in docs/fusion-dialect.md.
"""

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation

from mmcomp.dialects.fusion.attrs import (
    BLOCK_ROLES,
    DYNAMIC,
    DYNAMIC_ROLES,
    ELEMENT_TYPES,
    GROUP_SIZE_ELEMENT_TYPES,
    AxisRolesAttr,
    IterationSpaceAttr,
    dtype_name,
    float_literal,
    format_extent,
    group_size_dtype_name,
    is_dynamic,
    is_finite_in,
    is_role,
    largest_finite,
    may_be_dynamic,
    parse_role_list,
    print_role_list,
    role_order,
    roles_problem,
    space_problem,
    tensor_type,
)
from mmcomp.dialects.fusion.grouped import GROUP_SIZE_KEYWORDS, GroupedLinearOp
from mmcomp.dialects.fusion.ops import (
    DENSE_CONTRACTION_OPS,
    BroadcastOp,
    DefinedBeforeUse,
    FunctionalSyntaxOp,
    FusedMultiplySumOp,
    LinearOp,
    MatmulOp,
    MmaOp,
    ScaledContraction,
    SplatOp,
    broadcast_shapes,
    checked_tensor,
    format_shape,
    is_fp8,
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
from mmcomp.dialects.fusion.quantize import (
    GROUPED_N,
    LARGEST_FINITE,
    QUANTIZE_GROUP,
    QuantizeOp,
    QuantizeScaleOp,
    saturated,
)

CONTRACTION_OPS: tuple[type[IRDLOperation], ...] = (*DENSE_CONTRACTION_OPS, GroupedLinearOp)
"""The ops that sum over a K axis and produce f32."""

__all__ = [
    "DYNAMIC",
    "DYNAMIC_ROLES",
    "is_dynamic",
    "may_be_dynamic",
    "format_extent",
    "ELEMENT_TYPES",
    "GROUP_SIZE_ELEMENT_TYPES",
    "dtype_name",
    "group_size_dtype_name",
    "tensor_type",
    "is_finite_in",
    "largest_finite",
    "BLOCK_ROLES",
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
    "is_fp8",
    "parse_operands_with_roles",
    "print_operands_with_roles",
    "DefinedBeforeUse",
    "FunctionalSyntaxOp",
    "MatmulOp",
    "LinearOp",
    "FusedMultiplySumOp",
    "MmaOp",
    "GroupedLinearOp",
    "GROUP_SIZE_KEYWORDS",
    "ScaledContraction",
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
    "GROUPED_N",
    "LARGEST_FINITE",
    "QUANTIZE_GROUP",
    "QuantizeOp",
    "QuantizeScaleOp",
    "saturated",
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
        GroupedLinearOp,
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
        QuantizeScaleOp,
        QuantizeOp,
    ],
    [AxisRolesAttr, IterationSpaceAttr],
)
"""The fusion dialect."""
