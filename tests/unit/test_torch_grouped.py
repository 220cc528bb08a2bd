"""mmcomp.torch.grouped_mm and MoEExperts on the interp back end (CPU), against float64,
and on the GPU (marked gpu): CUDA-graph replays with new routing each time."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import mmcomp.torch as mt  # noqa: E402
from mmcomp.errors import FusionError  # noqa: E402

nn = torch.nn


def _offsets(sizes: list[int], device: str = "cpu") -> Any:
    return torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).to(device)


def _ragged(groups: int, rows: int, generator: Any) -> list[int]:
    """Group sizes summing to `rows`, about a third of the groups empty."""
    weights = torch.rand(groups, generator=generator)
    weights[torch.randperm(groups, generator=generator)[: groups // 3]] = 0
    if weights.sum() == 0:
        weights[0] = 1
    picks = torch.multinomial(weights, rows, replacement=True, generator=generator)
    return torch.bincount(picks, minlength=groups).tolist()


def _grouped64(x: Any, w: Any, sizes: list[int]) -> Any:
    """x [T, K] times w [G, K, N] per group, in float64; NaN past the last group."""
    out = torch.full((x.shape[0], w.shape[2]), float("nan"), dtype=torch.float64)
    start = 0
    for group, size in enumerate(sizes):
        out[start : start + size] = x[start : start + size].double() @ w[group].double()
        start += size
    return out


def _relative(found: Any, expected: Any) -> float:
    scale = max(float(expected.abs().max()), 1e-30)
    return float((found.double() - expected).abs().max()) / scale


@pytest.mark.parametrize("groups", [1, 3, 8])
@pytest.mark.parametrize("rows", [1, 37])
def test_grouped_mm_matches_float64(groups: int, rows: int):
    generator = torch.Generator().manual_seed(groups * 100 + rows)
    sizes = _ragged(groups, rows, generator)
    x = torch.randn(rows, 32, generator=generator).to(torch.bfloat16)
    weight = torch.randn(groups, 24, 32, generator=generator).to(torch.bfloat16)
    w = weight.transpose(-2, -1)  # [G, K, N], as torch._grouped_mm takes it
    offs = _offsets(sizes)
    y = mt.grouped_mm(x, w, offs, out_dtype=torch.float32)
    assert y.shape == (rows, 24) and y.dtype == torch.float32
    assert _relative(y, _grouped64(x, w, sizes)) < 1e-5
    y16 = mt.grouped_mm(x, w, offs)
    assert y16.dtype == torch.bfloat16
    assert _relative(y16, _grouped64(x, w, sizes)) < 1e-2
    assert torch.equal(y16, torch._grouped_mm(x, w, offs=offs))


def test_grouped_mm_rows_past_the_last_offset():
    x = torch.randn(10, 16).to(torch.bfloat16)
    w = torch.randn(3, 16, 8).to(torch.bfloat16)
    y = mt.grouped_mm(x, w, _offsets([2, 0, 5]), out_dtype=torch.float32)
    assert y.shape == (10, 8)
    assert _relative(y[:7], _grouped64(x, w, [2, 0, 5])[:7]) < 1e-5


def test_grouped_mm_under_torch_compile_with_new_offsets():
    w = torch.randn(4, 32, 16).to(torch.bfloat16)
    compiled = torch.compile(
        lambda x, w, offs: mt.grouped_mm(x, w, offs, out_dtype=torch.float32) * 2.0,
        fullgraph=True,
    )
    for sizes in ([3, 0, 4, 1], [0, 0, 9, 2], [1, 1, 1, 1]):
        x = torch.randn(sum(sizes), 32).to(torch.bfloat16)
        y = compiled(x, w, _offsets(sizes))
        assert _relative(y, 2.0 * _grouped64(x, w, sizes)) < 1e-5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((torch.ones(4, 8, 16), torch.ones(2, 16, 8), None), "argument 'x': expected 2 dim"),
        ((torch.ones(4, 16), torch.ones(16, 8), None), "argument 'w': expected 3 dimensions"),
        ((torch.ones(4, 16), torch.ones(2, 8, 8), None), "expected K = 16"),
        ((torch.ones(4, 16), torch.ones(2, 16, 8), "int64"), "argument 'offs': expected an int32"),
    ],
)
def test_grouped_mm_errors(arguments: tuple[Any, Any, Any], message: str):
    x, w, offs = arguments
    x, w = x.to(torch.bfloat16), w.to(torch.bfloat16)
    offs = torch.tensor([1, 4]) if offs == "int64" else torch.tensor([1, 4], dtype=torch.int32)
    with pytest.raises(FusionError, match=message):
        mt.grouped_mm(x, w, offs)


def test_grouped_mm_refuses_float64_and_an_out_dtype():
    x, w = torch.ones(4, 16, dtype=torch.float64), torch.ones(2, 16, 8, dtype=torch.float64)
    offs = torch.tensor([1, 4], dtype=torch.int32)
    with pytest.raises(FusionError, match="expected bfloat16 or float16"):
        mt.grouped_mm(x, w, offs)
    with pytest.raises(FusionError, match="argument 'out_dtype'"):
        mt.grouped_mm(x.bfloat16(), w.bfloat16(), offs, out_dtype=torch.int32)


# The experts of a mixture-of-experts block: transformers' layouts, as stand-ins where
# transformers is absent (and the real ones where it is installed).


class StackedExperts(nn.Module):
    """transformers 5's MixtralExperts / Qwen3MoeExperts: stacked weights."""

    def __init__(self, groups: int, hidden: int, inner: int):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.randn(groups, 2 * inner, hidden) * 0.2)
        self.down_proj = nn.Parameter(torch.randn(groups, hidden, inner) * 0.2)
        self.act_fn = nn.SiLU()


class MixtralExpert(nn.Module):
    """transformers 4's MixtralBlockSparseTop2MLP: w1 (gate), w3 (up), w2 (down)."""

    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.w1 = nn.Linear(hidden, inner, bias=False)
        self.w3 = nn.Linear(hidden, inner, bias=False)
        self.w2 = nn.Linear(inner, hidden, bias=False)
        self.act_fn = nn.SiLU()


class QwenExpert(nn.Module):
    """transformers 4's Qwen2MoeMLP: gate_proj, up_proj, down_proj."""

    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)
        self.act_fn = nn.SiLU()


def _weights64(experts: Any) -> tuple[Any, Any, Any]:
    """(gate, up, down) as float64 [G, N, K] stacks, from either layout."""
    if hasattr(experts, "gate_up_proj"):
        inner = experts.gate_up_proj.shape[1] // 2
        gate_up = experts.gate_up_proj.detach().double()
        return gate_up[:, :inner], gate_up[:, inner:], experts.down_proj.detach().double()
    names = (
        ("w1", "w3", "w2") if hasattr(experts[0], "w1") else ("gate_proj", "up_proj", "down_proj")
    )
    return tuple(  # type: ignore[return-value]
        torch.stack([getattr(expert, name).weight.detach().double() for expert in experts])
        for name in names
    )


def _moe64(hidden: Any, weights: Any, selected: Any, experts: Any) -> Any:
    """The experts' output in float64, token by token and slot by slot."""
    gate, up, down = _weights64(experts)
    out = torch.zeros(hidden.shape[0], hidden.shape[1], dtype=torch.float64)
    for token in range(hidden.shape[0]):
        x = hidden[token].double()
        for slot in range(selected.shape[1]):
            group = int(selected[token, slot])
            g, u = gate[group] @ x, up[group] @ x
            out[token] += float(weights[token, slot]) * (
                down[group] @ (g / (1 + torch.exp(-g)) * u)
            )
    return out


def _routing(tokens: int, groups: int, chosen: int, generator: Any) -> tuple[Any, Any]:
    """Each token's `chosen` distinct experts among the first half or so (some experts get
    none), and their softmax weights."""
    used = max(1, (groups + 1) // 2)
    scores = torch.rand(tokens, used, generator=generator)
    weights, selected = torch.topk(scores.softmax(-1), min(chosen, used), dim=-1)
    return weights / weights.sum(-1, keepdim=True), selected


def _experts(kind: str, groups: int, hidden: int, inner: int) -> Any:
    if kind == "stacked":
        return StackedExperts(groups, hidden, inner).to(torch.bfloat16)
    expert = MixtralExpert if kind == "mixtral" else QwenExpert
    return nn.ModuleList([expert(hidden, inner) for _ in range(groups)]).to(torch.bfloat16)


@pytest.mark.parametrize("kind", ["stacked", "mixtral", "qwen"])
@pytest.mark.parametrize(("groups", "tokens"), [(1, 5), (3, 1), (8, 19)])
def test_moe_experts_match_float64(kind: str, groups: int, tokens: int):
    generator = torch.Generator().manual_seed(groups * 10 + tokens)
    torch.manual_seed(groups)
    experts = _experts(kind, groups, 32, 48)
    module = mt.MoEExperts(experts)
    assert module.backend == "interp" and module.activation == "silu"
    hidden = torch.randn(tokens, 32, generator=generator).to(torch.bfloat16)
    weights, selected = _routing(tokens, groups, 2, generator)
    with torch.no_grad():
        out = module(hidden, weights, selected)
    assert out.shape == hidden.shape and out.dtype == torch.bfloat16
    assert _relative(out, _moe64(hidden, weights, selected, experts)) < 2e-2


def test_moe_experts_share_the_weights():
    experts = _experts("mixtral", 3, 16, 24)
    module = mt.MoEExperts(experts)
    gate, up, down = module.weights()
    assert experts[1].w1.weight.data_ptr() == gate[1].data_ptr()
    assert experts[2].w2.weight.data_ptr() == down[2].data_ptr()
    stacked = _experts("stacked", 3, 16, 24)
    module = mt.MoEExperts(stacked)
    gate, up, down = module.weights()
    assert gate.data_ptr() == stacked.gate_up_proj.data_ptr()
    assert up.data_ptr() == stacked.gate_up_proj[:, 24:].data_ptr()
    assert down.data_ptr() == stacked.down_proj.data_ptr()


def test_moe_experts_under_torch_compile_with_new_routing():
    generator = torch.Generator().manual_seed(7)
    experts = _experts("stacked", 4, 32, 16)
    module = mt.MoEExperts(experts)
    compiled = torch.compile(module, fullgraph=True)
    for tokens in (6, 6, 11):
        hidden = torch.randn(tokens, 32, generator=generator).to(torch.bfloat16)
        weights, selected = _routing(tokens, 4, 2, generator)
        with torch.no_grad():
            out = compiled(hidden, weights, selected)
        assert _relative(out, _moe64(hidden, weights, selected, experts)) < 2e-2


def test_moe_experts_errors():
    with pytest.raises(FusionError, match="expected stacked experts"):
        mt.MoEExperts(nn.Linear(4, 4))
    with pytest.raises(FusionError, match=r"experts\[0\]: expected nn.Linear w1, w3, w2"):
        mt.MoEExperts(nn.ModuleList([nn.Linear(4, 4)]))
    biased = _experts("qwen", 2, 16, 16)
    biased[1].up_proj = nn.Linear(16, 16).to(torch.bfloat16)
    with pytest.raises(FusionError, match=r"experts\[1\].up_proj: expected a linear without"):
        mt.MoEExperts(biased)


def test_transformers_mixtral_block():
    transformers = pytest.importorskip("transformers")
    from transformers.models.mixtral import modeling_mixtral

    config = transformers.MixtralConfig(
        hidden_size=32, intermediate_size=48, num_local_experts=8, num_experts_per_tok=2
    )
    torch.manual_seed(3)
    block = modeling_mixtral.MixtralSparseMoeBlock(config)
    for parameter in block.parameters():
        nn.init.normal_(parameter, std=0.1)
    block = block.to(torch.bfloat16)
    module = mt.MoEExperts(block.experts)
    hidden = torch.randn(9, 32).to(torch.bfloat16)
    with torch.no_grad():
        _, weights, selected = block.gate(hidden)
        out = module(hidden, weights, selected)
        expected = block(hidden.view(1, 9, 32)).view(9, 32)
    assert _relative(out, expected.double()) < 2e-2


@pytest.mark.gpu
def test_moe_experts_cuda_graph_replays_new_routing():
    generator = torch.Generator().manual_seed(11)
    experts = _experts("stacked", 8, 256, 512).cuda()
    module = mt.MoEExperts(experts)
    tokens = 64
    hidden = torch.randn(tokens, 256, generator=generator).to(torch.bfloat16).cuda()
    weights, selected = (t.cuda() for t in _routing(tokens, 8, 2, generator))
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            module(hidden, weights, selected)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = module(hidden, weights, selected)
        for _ in range(3):
            new_weights, new_selected = _routing(tokens, 8, 2, generator)
            weights.copy_(new_weights)
            selected.copy_(new_selected)
            hidden.copy_(torch.randn(tokens, 256, generator=generator).to(torch.bfloat16))
            graph.replay()
            torch.cuda.synchronize()
            expected = _moe64(hidden.cpu(), weights.cpu(), selected.cpu(), experts.cpu())
            experts.cuda()
            assert _relative(out.cpu(), expected) < 2e-2


@pytest.mark.gpu
@pytest.mark.parametrize("groups", [1, 8, 64, 128])
def test_grouped_mm_cuda_matches_float64(groups: int):
    generator = torch.Generator().manual_seed(groups)
    rows = 4 * groups + 3
    sizes = _ragged(groups, rows, generator)
    x = torch.randn(rows, 256, generator=generator).to(torch.bfloat16)
    w = torch.randn(groups, 128, 256, generator=generator).to(torch.bfloat16).transpose(-2, -1)
    y = mt.grouped_mm(x.cuda(), w.cuda(), _offsets(sizes, "cuda"), out_dtype=torch.float32)
    assert _relative(y.cpu(), _grouped64(x, w, sizes)) < 1e-5
