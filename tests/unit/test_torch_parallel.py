"""mmcomp.torch's tensor-parallel modules on the CPU: two processes (torch.multiprocessing,
gloo on a free localhost port), each rank's kernels on the interp back end, against the
float64 reference of the whole module at 1, 7 and 300 tokens: TensorParallelGatedMLP (plain,
micro-batched, sequence-parallel, under torch.compile(fullgraph=True), from shards and from
DTensors), ColumnParallelLinear and RowParallelLinear (each input and output form); the
gradients of x and of every rank's weight blocks against float64 autograd; and the misuse
errors. The ranks run every check once (module fixture) and write their results; a rank that
dies or hangs fails the fixture within its deadline instead of hanging the run.
"""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import mmcomp.torch as mt  # noqa: E402
from mmcomp.errors import FusionError  # noqa: E402

INTERP = {"backend": "interp", "tile": (128, 128, 64)}
WORLD = 2
TOKENS = (1, 7, 300)
HIDDEN, INTERMEDIATE = 64, 128
"""The MLP's widths (each rank holds INTERMEDIATE / WORLD of gate, up and down)."""
TOLERANCE = 2e-2
"""Largest relative error of a bf16 output against float64."""
DEADLINE_S = 240.0
"""How long the ranks may take in all before they are stopped."""
COLLECTIVE_TIMEOUT_S = 60
"""How long one collective may wait for the other rank (then it raises)."""


def relative_error(got, want) -> float:
    got = got.detach().double()
    if not bool(torch.isfinite(got).all()):
        return float("inf")
    return float((got - want).abs().max() / want.abs().max())


class MLP(torch.nn.Module):
    """transformers' LlamaMLP (with biases, which it lacks, to check where they go)."""

    def __init__(self, hidden: int, intermediate: int, bias: bool):
        super().__init__()
        kw = {"bias": bias, "dtype": torch.bfloat16}
        self.gate_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.up_proj = torch.nn.Linear(hidden, intermediate, **kw)
        self.down_proj = torch.nn.Linear(intermediate, hidden, **kw)
        self.act_fn = torch.nn.SiLU()


def mlp_reference(mlp, x):
    def linear(module, value):
        y = value @ module.weight.double().t()
        return y if module.bias is None else y + module.bias.double()

    x64 = x.double()
    gated = torch.nn.functional.silu(linear(mlp.gate_proj, x64)) * linear(mlp.up_proj, x64)
    return linear(mlp.down_proj, gated)


def same_on_every_rank(seed: int, *shape) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(torch.bfloat16)


def block(tensor, rank: int, dim: int):
    size = tensor.shape[dim] // WORLD
    return tensor.narrow(dim, rank * size, size)


# --- the ranks' checks: each returns its largest relative error ----------------------------


def check_mlp(rank: int, bias: bool, **options) -> float:
    torch.manual_seed(0)
    mlp = MLP(HIDDEN, INTERMEDIATE, bias)
    tp = mt.TensorParallelGatedMLP(mlp, gate_up_schedule=INTERP, down_schedule=INTERP, **options)
    assert tp.local.intermediate == INTERMEDIATE // WORLD and tp.intermediate == INTERMEDIATE
    errors = []
    for tokens in TOKENS:
        x = same_on_every_rank(tokens, 1, tokens, HIDDEN)
        with torch.inference_mode():
            got = tp(x)
        assert got.shape == x.shape and got.dtype == torch.bfloat16
        errors.append(relative_error(got, mlp_reference(mlp, x)))
    return max(errors)


def check_mlp_sequence_parallel(rank: int, micro_batches: int, compiled: bool = False) -> float:
    torch.manual_seed(0)
    mlp = MLP(HIDDEN, INTERMEDIATE, True)
    tp = mt.TensorParallelGatedMLP(
        mlp,
        sequence_parallel=True,
        micro_batches=micro_batches,
        gate_up_schedule=INTERP,
        down_schedule=INTERP,
    )
    if compiled:  # Dynamo traces the collectives (aot_eager: no C++ build on the CPU)
        tp = torch.compile(tp, fullgraph=True, backend="aot_eager", dynamic=True)
    errors = []
    for tokens in TOKENS:  # per rank: the sequence is WORLD * tokens long
        x = same_on_every_rank(tokens, WORLD * tokens, HIDDEN)
        mine = block(x, rank, 0)
        with torch.inference_mode():
            got = tp(mine)
        assert got.shape == mine.shape
        errors.append(relative_error(got, block(mlp_reference(mlp, x), rank, 0)))
    return max(errors)


def check_mlp_from_shards(rank: int) -> float:
    torch.manual_seed(0)
    mlp = MLP(HIDDEN, INTERMEDIATE, True)
    shards = MLP(HIDDEN, INTERMEDIATE // WORLD, True)
    with torch.no_grad():
        for name in ("gate_proj", "up_proj"):
            getattr(shards, name).weight.copy_(block(getattr(mlp, name).weight, rank, 0))
            getattr(shards, name).bias.copy_(block(getattr(mlp, name).bias, rank, 0))
        shards.down_proj.weight.copy_(block(mlp.down_proj.weight, rank, 1))
        shards.down_proj.bias.copy_(mlp.down_proj.bias)
    tp = mt.TensorParallelGatedMLP(
        shards, sharded=True, gate_up_schedule=INTERP, down_schedule=INTERP
    )
    x = same_on_every_rank(7, 7, HIDDEN)
    with torch.inference_mode():
        return relative_error(tp(x), mlp_reference(mlp, x))


def check_mlp_from_dtensors(rank: int, placements: str) -> float:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    torch.manual_seed(0)
    mlp = MLP(HIDDEN, INTERMEDIATE, False)
    mesh = init_device_mesh("cpu", (WORLD,))
    distributed = MLP(HIDDEN, INTERMEDIATE, False)
    chosen = {
        "megatron": {"gate_proj": Shard(0), "up_proj": Shard(0), "down_proj": Shard(1)},
        "transposed": {"gate_proj": Shard(1), "up_proj": Replicate(), "down_proj": Shard(0)},
    }[placements]
    for name, placement in chosen.items():
        weight = distribute_tensor(getattr(mlp, name).weight.detach(), mesh, [placement])
        getattr(distributed, name).weight = torch.nn.Parameter(weight, requires_grad=False)
    tp = mt.TensorParallelGatedMLP(distributed, gate_up_schedule=INTERP, down_schedule=INTERP)
    assert tp.tp.group is mesh.get_group()
    x = same_on_every_rank(300, 300, HIDDEN)
    with torch.inference_mode():
        return relative_error(tp(x), mlp_reference(mlp, x))


def linear_reference(linear, x, activation=lambda y: y):
    return activation(x.double() @ linear.weight.double().t() + linear.bias.double())


def check_column(rank: int, sequence_parallel: bool) -> float:
    torch.manual_seed(1)
    linear = torch.nn.Linear(HIDDEN, 96, dtype=torch.bfloat16)
    options = {"sequence_parallel": sequence_parallel, **INTERP}
    column = mt.ColumnParallelLinear(linear, "silu", **options)
    gathered = mt.ColumnParallelLinear(linear, "silu", gather_output=True, **options)
    assert column.local.out_features == 96 // WORLD and column.out_features == 96
    silu = torch.nn.functional.silu
    errors = []
    for tokens in TOKENS:
        x = same_on_every_rank(tokens, WORLD * tokens if sequence_parallel else tokens, HIDDEN)
        want = linear_reference(linear, x, silu)
        mine = block(x, rank, 0) if sequence_parallel else x
        with torch.inference_mode():
            got, whole = column(mine), gathered(mine)
        assert whole.shape == want.shape
        errors += [relative_error(got, block(want, rank, 1)), relative_error(whole, want)]
    return max(errors)


def check_row(rank: int, sequence_parallel: bool) -> float:
    torch.manual_seed(2)
    linear = torch.nn.Linear(96, HIDDEN, dtype=torch.bfloat16)
    options = {"sequence_parallel": sequence_parallel, **INTERP}
    row = mt.RowParallelLinear(linear, **options)
    whole_input = mt.RowParallelLinear(linear, input_is_parallel=False, **options)
    assert row.local.in_features == 96 // WORLD and row.in_features == 96
    assert row.local.bias is None and row.bias is not None  # the bias: once, after the sum
    errors = []
    for tokens in TOKENS:
        x = same_on_every_rank(tokens, WORLD * tokens if sequence_parallel else tokens, 96)
        want = linear_reference(linear, x)
        if sequence_parallel:
            want = block(want, rank, 0)
        with torch.inference_mode():
            got, from_whole = row(block(x, rank, 1)), whole_input(x)
        assert got.shape == want.shape
        errors += [relative_error(got, want), relative_error(from_whole, want)]
    return max(errors)


def check_linears_from_dtensors(rank: int) -> float:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (WORLD,))
    torch.manual_seed(3)
    errors = []
    x = same_on_every_rank(7, 7, HIDDEN)
    for placement in (Shard(0), Shard(1), Replicate()):
        linear = torch.nn.Linear(HIDDEN, 96, dtype=torch.bfloat16)
        want = linear_reference(linear, x)
        distributed = torch.nn.Linear(HIDDEN, 96, dtype=torch.bfloat16)
        distributed.weight = torch.nn.Parameter(
            distribute_tensor(linear.weight.detach(), mesh, [placement])
        )
        distributed.bias = torch.nn.Parameter(
            distribute_tensor(linear.bias.detach(), mesh, [Replicate()])
        )
        column = mt.ColumnParallelLinear(distributed, gather_output=True, group=mesh, **INTERP)
        row_linear = torch.nn.Linear(96, HIDDEN, dtype=torch.bfloat16)
        row_want = linear_reference(row_linear, want.to(torch.bfloat16))
        row_linear.weight = torch.nn.Parameter(
            distribute_tensor(row_linear.weight.detach(), mesh, [placement])
        )
        row_linear.bias = torch.nn.Parameter(
            distribute_tensor(row_linear.bias.detach(), mesh, [Shard(0)])
        )
        row = mt.RowParallelLinear(row_linear, **INTERP)
        with torch.inference_mode():
            y = column(x)
            errors += [
                relative_error(y, want),
                relative_error(row(block(want.to(torch.bfloat16), rank, 1)), row_want),
            ]
    return max(errors)


def float64_gradients(module, x, grad_y, forward):
    """The gradients of sum(forward(module64, x64) * grad_y) by x and by each parameter of
    module (by name), in float64."""
    module64 = copy.deepcopy(module).double()
    x64 = x.detach().double().requires_grad_()
    (forward(module64, x64) * grad_y.double()).sum().backward()
    return x64.grad, {name: p.grad for name, p in module64.named_parameters()}


def mlp_forward(mlp, x):
    def apply(module, value):
        return torch.nn.functional.linear(value, module.weight, module.bias)

    gated = torch.nn.functional.silu(apply(mlp.gate_proj, x)) * apply(mlp.up_proj, x)
    return apply(mlp.down_proj, gated)


def check_mlp_gradients(rank: int, sequence_parallel: bool) -> float:
    """Training: x's gradient (the sum of every rank's part, Megatron's f) and each rank's
    weight blocks' gradients against float64 autograd of the whole module."""
    torch.manual_seed(4)
    mlp = MLP(HIDDEN, INTERMEDIATE, True)
    tp = mt.TensorParallelGatedMLP(
        mlp, sequence_parallel=sequence_parallel, gate_up_schedule=INTERP, down_schedule=INTERP
    )
    tokens = 2 * 7 if sequence_parallel else 7
    x = same_on_every_rank(5, tokens, HIDDEN)
    grad_y = same_on_every_rank(6, tokens, HIDDEN)
    want_x, want = float64_gradients(mlp, x, grad_y, mlp_forward)
    if sequence_parallel:
        x, grad_y, want_x = block(x, rank, 0), block(grad_y, rank, 0), block(want_x, rank, 0)
    x = x.clone().requires_grad_()
    (tp(x).float() * grad_y.float()).sum().backward()
    local = tp.local
    pairs = [
        (x.grad, want_x),
        (local.gate_weight.grad, block(want["gate_proj.weight"], rank, 0)),
        (local.up_weight.grad, block(want["up_proj.weight"], rank, 0)),
        (local.gate_bias.grad, block(want["gate_proj.bias"], rank, 0)),
        (local.down.weight.grad, block(want["down_proj.weight"], rank, 1)),
        (tp.down_bias.grad, want["down_proj.bias"]),
    ]
    return max(relative_error(got, wanted) for got, wanted in pairs)


def check_linear_gradients(rank: int, sequence_parallel: bool) -> float:
    """Training through ColumnParallelLinear (gathered output) into RowParallelLinear
    (whole input, sliced): x's gradient and every weight block's."""
    torch.manual_seed(5)
    up = torch.nn.Linear(HIDDEN, 96, dtype=torch.bfloat16)
    down = torch.nn.Linear(96, HIDDEN, dtype=torch.bfloat16)
    options = {"sequence_parallel": sequence_parallel, **INTERP}
    column = mt.ColumnParallelLinear(up, "silu", gather_output=True, **options)
    row = mt.RowParallelLinear(down, input_is_parallel=False, **options)
    pair = torch.nn.ModuleDict({"up": up, "down": down})
    tokens = 2 * 7 if sequence_parallel else 7

    def forward(modules, x):
        return modules["down"](torch.nn.functional.silu(modules["up"](x)))

    x = same_on_every_rank(7, tokens, HIDDEN)
    grad_y = same_on_every_rank(8, tokens, HIDDEN)
    want_x, want = float64_gradients(pair, x, grad_y, forward)
    if sequence_parallel:  # column: this rank's tokens in, every rank's out; row: the reverse
        x, grad_y, want_x = block(x, rank, 0), block(grad_y, rank, 0), block(want_x, rank, 0)
    x = x.clone().requires_grad_()
    (row(column(x)).float() * grad_y.float()).sum().backward()
    pairs = [
        (x.grad, want_x),
        (column.local.weight.grad, block(want["up.weight"], rank, 0)),
        (column.local.bias.grad, block(want["up.bias"], rank, 0)),
        (row.local.weight.grad, block(want["down.weight"], rank, 1)),
        (row.bias.grad, want["down.bias"]),
    ]
    return max(relative_error(got, wanted) for got, wanted in pairs)


def check_misuse(rank: int) -> float:
    """Each misuse raises FusionError naming it (on every rank, so no collective is left
    half-entered)."""
    import torch.distributed as dist

    linear = torch.nn.Linear(HIDDEN, 33, dtype=torch.bfloat16)
    expected = [
        (
            lambda: mt.ColumnParallelLinear(linear, **INTERP),
            r"ColumnParallelLinear: linear.weight: 33 rows \(output features\) do not split "
            r"over 2 ranks",
        ),
        (
            lambda: mt.RowParallelLinear(torch.nn.Linear(33, 8, dtype=torch.bfloat16)),
            r"RowParallelLinear: linear.weight: 33 columns \(input features\) do not split",
        ),
        (
            lambda: mt.TensorParallelGatedMLP(MLP(HIDDEN, 65, False)),
            r"gate_proj.weight: 65 rows \(output features\) do not split over 2 ranks",
        ),
        (
            lambda: mt.ColumnParallelLinear(linear, group="world"),
            r"argument 'group': expected a torch.distributed ProcessGroup, a 1-D DeviceMesh or "
            r"None \(the world group\), found str",
        ),
        (
            lambda: mt.TensorParallelGatedMLP(MLP(HIDDEN, INTERMEDIATE, False), micro_batches=0),
            r"argument 'micro_batches': expected a positive int, found 0",
        ),
    ]
    only_rank_0 = dist.new_group([0])  # every rank creates it; rank 1 is not in it
    if rank == 1:
        expected.append(
            (
                lambda: mt.RowParallelLinear(torch.nn.Linear(96, 8), group=only_rank_0),
                r"argument 'group': this process \(global rank 1\) is not in the group",
            )
        )
    row = mt.RowParallelLinear(
        torch.nn.Linear(96, HIDDEN, dtype=torch.bfloat16), sequence_parallel=True, **INTERP
    )
    column = mt.ColumnParallelLinear(
        torch.nn.Linear(HIDDEN, 96, dtype=torch.bfloat16), sequence_parallel=True, **INTERP
    )
    expected += [
        (
            lambda: row(same_on_every_rank(0, 3, 48)),
            r"RowParallelLinear: sequence_parallel: 3 tokens \(the first axis\) do not split "
            r"over 2 ranks",
        ),
        (
            lambda: row(same_on_every_rank(0, 4, 96)),
            r"RowParallelLinear: input: expected \[tokens, \.\.\., 48\], found \[4, 96\]",
        ),
        (
            lambda: column(same_on_every_rank(0, HIDDEN)),
            r"ColumnParallelLinear: input: expected \[tokens, \.\.\., 64\], found \[64\]",
        ),
        (
            lambda: column(torch.randn(4, HIDDEN)),
            r"input: expected dtype torch.bfloat16, found torch.float32",
        ),
    ]
    for make, message in expected:
        try:
            with torch.inference_mode():
                make()
        except FusionError as error:
            assert re.search(message, str(error)), f"{message!r} not in {error}"
        else:
            raise AssertionError(f"no FusionError matching {message!r}")
    return 0.0


CHECKS: dict[str, Callable[[int], float]] = {
    "mlp": lambda rank: check_mlp(rank, False),
    "mlp with biases": lambda rank: check_mlp(rank, True),
    "mlp micro-batched": lambda rank: check_mlp(rank, True, micro_batches=3),
    "mlp sequence-parallel": lambda rank: check_mlp_sequence_parallel(rank, 1),
    "mlp sequence-parallel micro-batched": lambda rank: check_mlp_sequence_parallel(rank, 2),
    "mlp sequence-parallel micro-batched under torch.compile": lambda rank: (
        check_mlp_sequence_parallel(rank, 2, compiled=True)
    ),
    "mlp from shards": check_mlp_from_shards,
    "mlp from megatron DTensors": lambda rank: check_mlp_from_dtensors(rank, "megatron"),
    "mlp from transposed DTensors": lambda rank: check_mlp_from_dtensors(rank, "transposed"),
    "column": lambda rank: check_column(rank, False),
    "column sequence-parallel": lambda rank: check_column(rank, True),
    "row": lambda rank: check_row(rank, False),
    "row sequence-parallel": lambda rank: check_row(rank, True),
    "linears from DTensors": check_linears_from_dtensors,
    "mlp gradients": lambda rank: check_mlp_gradients(rank, False),
    "mlp gradients sequence-parallel": lambda rank: check_mlp_gradients(rank, True),
    "linear gradients": lambda rank: check_linear_gradients(rank, False),
    "linear gradients sequence-parallel": lambda rank: check_linear_gradients(rank, True),
    "misuse": check_misuse,
}
"""What each rank runs, in this order (the same on every rank: the collectives pair up)."""


def rank_main(rank: int, port: int, results: str) -> None:
    """One rank: join the gloo group, run every check, write {check: error or failure}."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=WORLD,
        timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S),
    )
    found: dict[str, object] = {}
    try:
        for name, check in CHECKS.items():
            start = time.perf_counter()
            try:
                found[name] = {"error": check(rank), "seconds": time.perf_counter() - start}
            except Exception:  # recorded, the others still run
                found[name] = {"failure": traceback.format_exc()}
            dist.barrier()
    finally:
        Path(results, f"rank{rank}.json").write_text(json.dumps(found))
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    """Every rank's results, the ranks run once in two spawned processes."""
    import torch.multiprocessing as mp

    results = tmp_path_factory.mktemp("tp")
    context = mp.start_processes(
        rank_main,
        args=(free_port(), str(results)),
        nprocs=WORLD,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not context.join(timeout=5):
            if time.monotonic() > deadline:
                pytest.fail(f"the ranks ran past {DEADLINE_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()
                process.join(10)
    return [json.loads((results / f"rank{rank}.json").read_text()) for rank in range(WORLD)]


@pytest.mark.parametrize("check", list(CHECKS))
def test_every_rank_matches_the_float64_reference(ranks, check):
    for rank, found in enumerate(ranks):
        result = found[check]
        assert "failure" not in result, f"rank {rank}:\n{result.get('failure')}"
        assert result["error"] < TOLERANCE, f"rank {rank}: relative error {result['error']}"


def test_a_module_without_torch_distributed_initialized_says_so():
    import torch.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(FusionError, match=r"torch.distributed is not initialized: call"):
        mt.ColumnParallelLinear(torch.nn.Linear(8, 8, dtype=torch.bfloat16))


def test_the_example_runs_under_torchrun_on_two_cpu_ranks(tmp_path):
    """examples/tp_mlp.py as users launch it (torchrun, gloo, interp kernels): every
    contender within tolerance of float64 on both ranks, the table printed."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node", "2", str(root / "examples" / "tp_mlp.py")]
    command += ["--cpu", "--tokens", "7", "64", "--repeat", "10", "--no-compile"]
    command += ["--json", str(tmp_path / "tp.json")]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "passed" in done.stdout
    result = json.loads((tmp_path / "tp.json").read_text())
    assert [row["tokens"] for row in result["rows"]] == [7, 64]
    names = set(result["rows"][1]["errors"])
    assert names == {"torch eager", "mmcomp", "mmcomp micro-batched (2)"}
    assert all(e < TOLERANCE for row in result["rows"] for e in row["errors"].values())
