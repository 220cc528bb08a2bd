"""`mmcomp.grad`: a fusion differentiated into the forward to run and backward fusions.

For a fusion `outputs = epilogue(C_1, ..., C_n, inputs)` with contractions
`C_j = linear(A_j, W_j, bias_j)` or `matmul(A_j, B_j)` on its inputs:

1. **The epilogue's adjoint** (`<name>.epilogue`): the adjoints dC_j of the contraction
   results and of the inputs the epilogue reads, from the outputs' adjoints, by the
   pointwise rules (mmcomp.autodiff.rules), reverse over the epilogue's ops. The epilogue's
   values it needs are recomputed from C_j: saved by the forward (the default policy: the
   forward also writes `C_j` in `save_dtype`; the step is then pointwise only), or, with
   `recompute=True`, recomputed by the contractions themselves, so that the step is a GEMM
   whose epilogue is the adjoint (the forward saves nothing but its inputs). Where dC_j is
   the output's adjoint itself (an epilogue of casts), no step is made.
2. **dgrad** (`<name>.dgrad.<input>`), for an input that is some contraction's A:
   `sum_j dC_j W_j` (`matmul(dC_j, W_j)`; for a matmul, `linear(dC_j, B_j)`), every term in
   one kernel, the epilogue's own adjoint of that input added in its epilogue.
3. **wgrad** (`<name>.wgrad.<input>`), for a W or B: `dC_j^T A_j` as a
   `fused_multiply_sum` over the tokens (both operands MN-major), whose contraction
   extent K is the token count, dynamic: one compiled kernel serves every count.
4. **sum** (`<name>.sum.<input>`), for a bias or a broadcast row: the column sum of dC_j
   (and of the epilogue's adjoints of it), a COLUMN_SUM step (a reduction over the
   tokens; its fusion writes it as a `fused_multiply_sum` with a ones factor).

wgrad and the column sums reduce over the tokens (every row of the contraction's result;
`Step.over_tokens`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from mmcomp.autodiff.plan import COLUMN_SUM, KERNEL, POINTWISE, Gradient, Step
from mmcomp.autodiff.replay import Operand, Replayer, dtype_of, extents, shape_of
from mmcomp.autodiff.rules import RULES
from mmcomp.dialects import fusion as fd
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion, Value, dtype_name

_CONTRACTIONS = (fd.LinearOp, fd.MatmulOp)


@dataclass
class _Contraction:
    """A contraction of the forward and its operands (inputs of the fusion)."""

    index: int
    op: fd.LinearOp | fd.MatmulOp
    a: BlockArgument
    b: BlockArgument
    """W of a linear, B of a matmul."""
    bias: BlockArgument | None

    @property
    def linear(self) -> bool:
        """Whether it is a linear (W [N, K]) rather than a matmul (B [K, N])."""
        return isinstance(self.op, fd.LinearOp)


@dataclass
class _Terms:
    """The contributions to one input's gradient."""

    dgrad: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    """(contraction, env of dC_j) where the input is A_j."""
    wgrad: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    """(contraction, env of dC_j) where the input is W_j / B_j."""
    sums: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(env, dtype) of [..., N] adjoints whose column sum adds to it (a bias, a row)."""
    direct: str | None = None
    """Env of the epilogue's adjoint of it, of its own shape."""


def _where(name: str) -> str:
    return f"mmcomp.grad(@{name})"


def _operand_arg(value: SSAValue, op: Operation, what: str, name: str) -> BlockArgument:
    if not isinstance(value, BlockArgument):
        raise FusionError(
            f"{_where(name)}: {op.name}: operand '{what}': expected an input of the fusion "
            "(ops before a contraction, a prologue, are not differentiated)"
        )
    return value


def _contractions(fusion: Fusion) -> list[_Contraction]:
    found: list[_Contraction] = []
    for op in fusion.func.body.block.ops:
        if isinstance(op, fd.FusedMultiplySumOp | fd.MmaOp):
            raise FusionError(
                f"{_where(fusion.name)}: {op.name} is not differentiated; write the "
                "contraction as fusion.linear or fusion.matmul"
            )
        if isinstance(op, fd.ScaledContraction) and op.scales:
            raise FusionError(
                f"{_where(fusion.name)}: {op.name} with fp8 scales is not differentiated"
            )
        if isinstance(op, fd.GroupedLinearOp):
            raise FusionError(
                f"{_where(fusion.name)}: fusion.grouped_linear is not differentiated (grouped "
                "linears have no backward yet: docs/grouped.md)"
            )
        if isinstance(op, fd.LinearOp):
            bias = None
            if op.bias is not None:
                bias = _operand_arg(op.bias, op, "bias", fusion.name)
            a = _operand_arg(op.a, op, "a", fusion.name)
            w = _operand_arg(op.w, op, "w", fusion.name)
            found.append(_Contraction(len(found), op, a, w, bias))
        elif isinstance(op, fd.MatmulOp):
            a = _operand_arg(op.a, op, "a", fusion.name)
            b = _operand_arg(op.b, op, "b", fusion.name)
            if len(shape_of(b)) != 2:
                raise FusionError(
                    f"{_where(fusion.name)}: fusion.matmul: operand 'b': expected rank 2 "
                    f"([K, N]: a batched B is not differentiated), found {list(shape_of(b))}"
                )
            found.append(_Contraction(len(found), op, a, b, None))
    if not found:
        raise FusionError(f"{_where(fusion.name)}: expected a contraction, found none")
    return found


def _active(fusion: Fusion, wrt: set[BlockArgument]) -> set[SSAValue]:
    """The values that depend on a contraction or an input differentiated."""
    active: set[SSAValue] = set(wrt)
    for op in fusion.func.body.block.ops:
        if isinstance(op, _CONTRACTIONS) or any(o in active for o in op.operands):
            active.update(op.results)
    return active


def _cast_root(value: SSAValue) -> BlockArgument | None:
    """The input that `value` is (a chain of) casts of, or None."""
    while isinstance(value.owner, fd.CastOp):
        value = value.owner.input
    return value if isinstance(value, BlockArgument) else None


def _alias(value: SSAValue) -> BlockArgument | None:
    """The input `value` equals exactly: casts through f32 back to the input's dtype."""
    final = dtype_of(value)
    while isinstance(value.owner, fd.CastOp):
        value = value.owner.input
        if dtype_of(value) not in ("f32", final) and not isinstance(value, BlockArgument):
            return None
    if isinstance(value, BlockArgument) and dtype_of(value) == final:
        return value
    return None


def _prune(fusion: Fusion, env: list[str], keep: Sequence[bool]) -> tuple[Fusion, list[str]]:
    """`fusion` with only the outputs `keep` marks, dead ops and unused inputs removed."""
    module = fusion.peek_module().clone()
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    block = func.body.block
    last = block.last_op
    assert isinstance(last, ReturnOp)
    kept = [value for value, wanted in zip(last.operands, keep, strict=True) if wanted]
    last.detach()
    last.erase()
    block.add_op(ReturnOp(*kept))
    for op in reversed(list(block.ops)):
        if not isinstance(op, ReturnOp) and all(not r.uses for r in op.results):
            op.detach()
            op.erase()
    names: list[str] = []
    for arg, name in reversed(list(zip(block.args, env, strict=True))):
        if arg.uses:
            names.append(name)
        else:
            block.erase_arg(arg)
    func.function_type = FunctionType.from_lists(
        [arg.type for arg in block.args], [value.type for value in kept]
    )
    return Fusion.from_module(module, shared=False), list(reversed(names))


class _Epilogue:
    """Builds the epilogue's adjoint: a fusion reading the outputs' adjoints, the inputs,
    and the saved contraction results (or recomputing them)."""

    def __init__(self, fusion: Fusion, ns: str, recompute: bool, save_dtype: str):
        self.fusion = fusion
        self.ns = ns
        self.recompute = recompute
        self.save_dtype = save_dtype
        self.f = Fusion(f"{fusion.name}_epilogue_grad")
        self.env: list[str] = []
        self.inputs: dict[str, Value] = {}
        self.names = {value.ssa: value.name or f"arg{i}" for i, value in enumerate(fusion.inputs)}
        self.contractions: dict[Operation, int] = {}
        self.replay = Replayer(self.f, fusion.func, self._arg, self._op)

    def input(self, env: str, local: str, shape: Sequence[int], dtype: str) -> Value:
        """The fusion input reading array `env` (made at first use)."""
        found = self.inputs.get(env)
        if found is None:
            found = self.inputs[env] = self.f.input(local, extents(shape), dtype)
            self.env.append(env)
        return found

    def _arg(self, arg: BlockArgument) -> Operand:
        name = self.names[arg]
        return self.input(name, name, shape_of(arg), dtype_of(arg))

    def _op(self, op: Operation) -> Operand | None:
        index = self.contractions.get(op)
        if index is None or self.recompute:
            return None
        result = op.results[0]
        saved = self.input(
            f"{self.ns}.saved{index}", f"saved{index}", shape_of(result), self.save_dtype
        )
        return self.f.cast(saved, "f32")


def _parse_wrt(fusion: Fusion, wrt: Iterable[str] | None) -> list[Value]:
    inputs = {value.name: value for value in fusion.inputs}
    if wrt is None:
        return list(fusion.inputs)
    if isinstance(wrt, str):
        wrt = [wrt]
    chosen: list[Value] = []
    for name in wrt:
        found = inputs.get(name)
        if found is None:
            raise FusionError(
                f"{_where(fusion.name)}: argument 'wrt': expected input names of the fusion "
                f"({', '.join(str(n) for n in inputs)}), found {name!r}"
            )
        chosen.append(found)
    return chosen


def grad(
    fusion: Fusion,
    wrt: Iterable[str] | None = None,
    *,
    recompute: bool = False,
    save_dtype: object = None,
) -> Gradient:
    """The fusion differentiated: the forward to run and the backward steps.

    `wrt`: the input names to differentiate (default: every input). `recompute=True`
    saves nothing but the inputs: the epilogue's adjoint recomputes the contractions as a
    GEMM (the default saves each contraction result the adjoint needs, in `save_dtype`:
    default the contraction's operand dtype, as torch saves a bf16 pre-activation).
    """
    from mmcomp.frontend.builder import Fusion as FusionType

    if not isinstance(fusion, FusionType):
        raise FusionError(
            f"mmcomp.grad: argument 'fusion': expected an mmcomp.Fusion, found "
            f"{type(fusion).__name__}"
        )
    if not isinstance(recompute, bool):
        raise FusionError(
            f"mmcomp.grad: argument 'recompute': expected a bool, found {recompute!r}"
        )
    fusion.verify()
    name = fusion.name
    contractions = _contractions(fusion)
    chosen = _parse_wrt(fusion, wrt)
    wrt_args = {value.ssa for value in chosen if isinstance(value.ssa, BlockArgument)}
    space = shape_of(contractions[0].op.results[0])
    lead = space[:-1]
    tokens = None if any(fd.is_dynamic(e) for e in lead) else _product(lead)
    operand_dtype = dtype_of(contractions[0].a)
    saved_dtype = (
        operand_dtype
        if save_dtype is None
        else dtype_name(save_dtype, f"{_where(name)}: argument 'save_dtype'")
    )

    active = _active(fusion, set(wrt_args))
    epilogue = _Epilogue(fusion, name, recompute, saved_dtype)
    epilogue.contractions = {c.op: c.index for c in contractions}
    f = epilogue.f
    adjoints: dict[SSAValue, Value] = {}

    def accumulate(value: SSAValue, adjoint: Value) -> None:
        found = adjoints.get(value)
        adjoints[value] = adjoint if found is None else found + adjoint

    for index, output in enumerate(fusion.outputs):
        if output.ssa in active:
            dout = epilogue.input(f"{name}.dout{index}", f"dout{index}", output.shape, output.dtype)
            accumulate(output.ssa, f.cast(dout, "f32"))

    dcs: dict[int, Value] = {}
    direct: dict[BlockArgument, Value] = {}
    rows: list[tuple[BlockArgument, Value]] = []
    by_op: dict[Operation, _Contraction] = {c.op: c for c in contractions}
    for op in reversed(list(fusion.func.body.block.ops)):
        if isinstance(op, ReturnOp) or not op.results:
            continue
        adjoint = adjoints.get(op.results[0])
        if adjoint is None:
            continue
        contraction = by_op.get(op)
        if contraction is not None:
            dcs[contraction.index] = adjoint
            continue
        if isinstance(op, fd.SplatOp):
            continue
        if isinstance(op, fd.BroadcastOp):
            if op.input not in active:
                continue
            root = _cast_root(op.input)
            shape = shape_of(op.input)
            if root is None or not _is_row(shape, space):
                raise FusionError(
                    f"{_where(name)}: fusion.broadcast: the adjoint of a broadcast is a sum, made "
                    f"for an input (or casts of one) of shape [N] or [1, ..., N] broadcast to "
                    f"the result; found {op.input} of shape {list(shape)}"
                )
            rows.append((root, adjoint))
            continue
        rule = RULES.get(type(op))
        if rule is None:
            raise FusionError(f"{_where(name)}: {op.name} has no derivative rule")
        operands = [epilogue.replay.value(value) for value in op.operands]
        result = epilogue.replay.tensor(op.results[0], op.name)
        for value, operand_adjoint in zip(
            op.operands, rule(f, op, operands, result, adjoint), strict=True
        ):
            if operand_adjoint is None or value not in active:
                continue
            if isinstance(value, BlockArgument):
                found = direct.get(value)
                direct[value] = operand_adjoint if found is None else found + operand_adjoint
            else:
                accumulate(value, operand_adjoint)

    # The epilogue step's outputs: dC_j, the inputs' own adjoints, the row adjoints.
    names = epilogue.names
    terms: dict[BlockArgument, _Terms] = {arg: _Terms() for arg in wrt_args}
    candidates: list[tuple[str, Value]] = []
    for contraction in contractions:
        dc = dcs.get(contraction.index)
        needs = {contraction.a, contraction.b, contraction.bias} & wrt_args
        if dc is None or not needs:
            continue
        env = f"{name}.dc{contraction.index}"
        candidates.append((env, f.cast(dc, dtype_of(contraction.a))))
        if contraction.a in wrt_args:
            terms[contraction.a].dgrad.append((contraction.index, env))
        if contraction.b in wrt_args:
            terms[contraction.b].wgrad.append((contraction.index, env))
        if contraction.bias is not None and contraction.bias in wrt_args:
            terms[contraction.bias].sums.append((env, dtype_of(contraction.a)))
    for arg, adjoint in direct.items():
        env = f"{name}.direct.{names[arg]}"
        if shape_of(arg) != space:
            raise FusionError(
                f"{_where(name)}: input {names[arg]!r} of shape {list(shape_of(arg))} meets the "
                f"epilogue unbroadcast; expected the result's shape {list(space)}"
            )
        candidates.append((env, f.cast(adjoint, dtype_of(arg))))
        terms[arg].direct = env
    for number, (arg, adjoint) in enumerate(rows):
        env = f"{name}.row{number}"
        reduce_dtype = dtype_of(arg) if dtype_of(arg) != "f32" else operand_dtype
        candidates.append((env, f.cast(adjoint, reduce_dtype)))
        terms[arg].sums.append((env, reduce_dtype))

    aliases: dict[str, str] = {}
    written: list[str] = []
    env_of_input = dict(zip((v.ssa for v in epilogue.f.inputs), epilogue.env, strict=True))
    for env, value in candidates:
        source = _alias(value.ssa)
        if source is not None and env_of_input[source].startswith(f"{name}.dout"):
            aliases[env] = env_of_input[source]
            continue
        f.output(value if not isinstance(value.ssa, BlockArgument) else value + 0.0)
        written.append(env)

    steps: list[Step] = []
    saved: list[int] = []
    if written:
        pruned, env = _prune(f, epilogue.env, [True] * len(written))
        saved = [c.index for c in contractions if f"{name}.saved{c.index}" in env]
        kind = KERNEL if _has_contraction(pruned) else POINTWISE
        steps.append(Step(f"{name}.epilogue", kind, tuple(env), tuple(written), _fixed(pruned)))

    ctx = _Context(name, names, {c.index: c for c in contractions}, aliases)
    gradients: dict[str, str] = {}
    for value in chosen:
        arg = value.ssa
        assert isinstance(arg, BlockArgument)
        term = terms[arg]
        arg_name = names[arg]
        uses = [bool(term.dgrad or term.direct), bool(term.wgrad), bool(term.sums)]
        if sum(uses) > 1:
            raise FusionError(
                f"{_where(name)}: input {arg_name!r} is used in more than one way (as a "
                "contraction's A, its W or B, or a bias or row); its gradient is not built"
            )
        grad_env = f"{name}.grad.{arg_name}"
        if term.dgrad:
            steps.append(_dgrad(ctx, arg, term, grad_env))
        elif term.direct is not None:
            gradients[arg_name] = ctx.env(term.direct)
            continue
        elif term.wgrad:
            steps.append(_wgrad(ctx, arg, term, grad_env))
        elif term.sums:
            steps.append(_sum(ctx, arg, term, space[-1], grad_env))
        else:
            continue
        gradients[arg_name] = grad_env

    forward = _forward(fusion, contractions, saved, saved_dtype)
    inputs = tuple(value.name or f"arg{i}" for i, value in enumerate(fusion.inputs))
    outputs = tuple(f"{name}.out{i}" for i in range(len(fusion.outputs)))
    saved_env = tuple(f"{name}.saved{index}" for index in saved)
    forward_step = Step(f"{name}.forward", KERNEL, inputs, outputs + saved_env, _fixed(forward))
    return Gradient(
        forward_steps=(forward_step,),
        steps=tuple(steps),
        inputs=inputs,
        outputs=outputs,
        saved=saved_env,
        grad_outputs=tuple(f"{name}.dout{i}" for i in range(len(fusion.outputs))),
        gradients=gradients,
        tokens=tokens,
    )


def _product(extents: Sequence[int]) -> int:
    total = 1
    for extent in extents:
        total *= extent
    return total


def _is_row(shape: Sequence[int], space: Sequence[int]) -> bool:
    """Whether a broadcast input of `shape` is a row [N] / [1, ..., 1, N] of the space."""
    return (
        len(shape) >= 1
        and shape[-1] == space[-1]
        and all(extent == 1 for extent in shape[:-1])
        and len(shape) <= len(space)
    )


def _has_contraction(fusion: Fusion) -> bool:
    return any(
        isinstance(op, (*_CONTRACTIONS, fd.FusedMultiplySumOp)) for op in fusion.func.body.block.ops
    )


def _fixed(fusion: Fusion):
    def build(tokens: int | None) -> Fusion:
        del tokens
        return fusion

    return build


def _forward(
    fusion: Fusion, contractions: list[_Contraction], saved: list[int], save_dtype: str
) -> Fusion:
    """The fusion with each saved contraction result as an extra output."""
    if not saved:
        return fusion
    copy = fusion.clone()
    ops = list(fusion.func.body.block.ops)
    copied = list(copy.func.body.block.ops)
    for index in saved:
        op = copied[ops.index(contractions[index].op)]
        copy.output(copy.cast(Value(copy, op.results[0]), save_dtype))
    return copy


@dataclass
class _Context:
    """What the gradient kernels' builders share."""

    name: str
    """The forward fusion's name (the namespace of its arrays)."""
    names: dict[SSAValue, str]
    """The forward's inputs by name."""
    contractions: dict[int, _Contraction]
    aliases: dict[str, str]
    """Arrays the epilogue step does not write, and the adjoint each is."""

    def env(self, name: str) -> str:
        """The array `name` is read from."""
        return self.aliases.get(name, name)


def _dgrad(ctx: _Context, arg: BlockArgument, term: _Terms, grad_env: str) -> Step:
    """sum_j dC_j W_j (+ the epilogue's own adjoint), cast to the input's dtype."""
    envs: list[str] = []
    specs: list[tuple[str, str, tuple[int, ...], str]] = []
    for index, dc_env in term.dgrad:
        contraction = ctx.contractions[index]
        for env, local, value in (
            (ctx.env(dc_env), f"dc{index}", contraction.op.results[0]),
            (ctx.names[contraction.b], ctx.names[contraction.b], contraction.b),
        ):
            if env not in envs:
                envs.append(env)
                specs.append((env, local, shape_of(value), dtype_of(contraction.a)))
    if term.direct is not None:
        envs.append(ctx.env(term.direct))
        specs.append((ctx.env(term.direct), "direct", shape_of(arg), dtype_of(arg)))
    arg_name = ctx.names[arg]
    f = Fusion(f"{ctx.name}_dgrad_{arg_name}")
    values = {env: f.input(local, extents(shape), dtype) for env, local, shape, dtype in specs}
    total: Value | None = None
    for index, dc_env in term.dgrad:
        contraction = ctx.contractions[index]
        dc, other = values[ctx.env(dc_env)], values[ctx.names[contraction.b]]
        product = f.matmul(dc, other) if contraction.linear else f.linear(dc, other)
        total = product if total is None else total + product
    assert total is not None
    if term.direct is not None:
        total = total + f.cast(values[ctx.env(term.direct)], "f32")
    f.output(f.cast(total, dtype_of(arg)))
    return Step(f"{ctx.name}.dgrad.{arg_name}", KERNEL, tuple(envs), (grad_env,), _fixed(f))


def _wgrad(ctx: _Context, arg: BlockArgument, term: _Terms, grad_env: str) -> Step:
    """sum_j dC_j^T A_j over the tokens (both operands MN-major), cast to the input's
    dtype."""
    envs: list[str] = []
    specs: list[tuple[str, str, int, str]] = []
    for index, dc_env in term.wgrad:
        contraction = ctx.contractions[index]
        result = shape_of(contraction.op.results[0])
        for env, local, width in (
            (ctx.env(dc_env), f"dc{index}", result[-1]),
            (ctx.names[contraction.a], ctx.names[contraction.a], shape_of(contraction.a)[-1]),
        ):
            if env not in envs:
                envs.append(env)
                specs.append((env, local, width, dtype_of(contraction.a)))
    arg_name = ctx.names[arg]
    dtype = dtype_of(arg)

    def build(tokens: int | None) -> Fusion:
        rows = "tokens" if tokens is None else tokens
        f = Fusion(f"{ctx.name}_wgrad_{arg_name}")
        values = {env: f.input(local, [rows, width], d) for env, local, width, d in specs}
        total: Value | None = None
        for index, dc_env in term.wgrad:
            contraction = ctx.contractions[index]
            dc, a = values[ctx.env(dc_env)], values[ctx.names[contraction.a]]
            if contraction.linear:
                first, second = dc, a
            else:
                first, second = a, dc
            product = f.fused_multiply_sum(
                f.broadcast(first, [False, False, True]),
                f.broadcast(second, [False, True, False]),
                [0],
            )
            total = product if total is None else total + product
        assert total is not None
        f.output(f.cast(total, dtype))
        return f

    return Step(
        f"{ctx.name}.wgrad.{arg_name}",
        KERNEL,
        tuple(envs),
        (grad_env,),
        build,
        over_tokens=True,
        rows=tuple(True for _ in envs),
    )


def _sum(ctx: _Context, arg: BlockArgument, term: _Terms, width: int, grad_env: str) -> Step:
    """The column sum of each [..., N] adjoint over the tokens, cast to the input's dtype:
    a COLUMN_SUM step, whose fusion writes it as a fused_multiply_sum with a ones factor
    (one per dtype, the inputs after the adjoints)."""
    sums = [(ctx.env(env), dtype) for env, dtype in term.sums]
    dtypes = sorted({dtype for _, dtype in sums})
    envs = tuple(env for env, _ in sums)
    arg_name = ctx.names[arg]
    result_dtype = dtype_of(arg)

    def build(tokens: int | None) -> Fusion:
        rows = "tokens" if tokens is None else tokens
        f = Fusion(f"{ctx.name}_sum_{arg_name}")
        values = [f.input(f"adj{i}", [rows, width], dtype) for i, (_, dtype) in enumerate(sums)]
        ones = {dtype: f.input(f"ones{i}", [rows, 1], dtype) for i, dtype in enumerate(dtypes)}
        total: Value | None = None
        for value, (_, dtype) in zip(values, sums, strict=True):
            column = f.fused_multiply_sum(value, ones[dtype], [0])
            total = column if total is None else total + column
        assert total is not None
        f.output(f.cast(total, result_dtype))
        return f

    return Step(
        f"{ctx.name}.sum.{arg_name}",
        COLUMN_SUM,
        envs,
        (grad_env,),
        build,
        over_tokens=True,
        rows=tuple(True for _ in envs),
    )
