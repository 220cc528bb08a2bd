"""Misuse of the public call, mmcomp.torch, autotune and the compile cache, refused early.

`out=` entries are checked before anything runs (on the interp back end and the cuda back
end's host path, whose checks run before it needs a GPU): one array for two outputs, a
read-only array, a torch tensor that requires grad. Also: `check=` that is not a bool,
torch tensors that are not dense CPU or CUDA ones, `load_kernel` of neither text nor a
path, schema names of inputs named like Python keywords, the schedule keywords of the
torch modules, autotune budgets, and cache entries whose checksum is right but whose
contents are not. CPU only; the torch tests are skipped where torch is not installed.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import mmcomp
from mmcomp import cache as compile_cache
from mmcomp import tuning
from mmcomp.errors import LaunchError, ScheduleError
from mmcomp.runtime.cache import KernelCache

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture
def torch() -> Any:
    """torch, or the test is skipped."""
    return pytest.importorskip("torch")


def two_outputs(name: str, dtype: str, m: int, n: int, k: int) -> mmcomp.Fusion:
    """y = a w^T and y + 1: two outputs of one shape and dtype (f32)."""
    f = mmcomp.Fusion(name)
    a = f.input("a", [m, k], dtype)
    w = f.input("w", [n, k], dtype)
    y = f.linear(a, w)
    f.output(y)
    f.output(y + 1.0)
    return f


@pytest.fixture(scope="module")
def interp() -> mmcomp.Kernel:
    """Two f32 [4, 4] outputs of a 4x4x8 linear, on the interp back end."""
    return mmcomp.compile(two_outputs("two_out", "f32", 4, 4, 8), backend="interp")


@pytest.fixture(scope="module")
def cuda() -> mmcomp.Kernel:
    """Two f32 [64, 64] outputs of a bf16 64x64x64 linear, on the cuda back end (called
    with host arrays: every check runs before the GPU is needed)."""
    return mmcomp.compile(two_outputs("two_out_cuda", "bf16", 64, 64, 64))


def ones(kernel: mmcomp.Kernel) -> list[np.ndarray]:
    """Inputs of ones for the kernel's fusion."""
    return [np.ones(value.shape, value.numpy_dtype) for value in kernel.fusion.inputs]


# ----------------------------------------------------------------------------------------
# out=: one array for two outputs, read-only arrays, checked before the run
# ----------------------------------------------------------------------------------------


def test_interp_refuses_one_array_for_two_outputs(interp):
    a, w = ones(interp)
    out = np.zeros((4, 4), np.float32)
    with pytest.raises(LaunchError, match=r"kernel @two_out: out\[1\] shares memory with out\[0\]"):
        interp(a, w, out=(out, out))
    with pytest.raises(LaunchError, match=r"out\[1\] shares memory with out\[0\]"):
        interp(a, w, out={"out1": out[:, :], "out0": out})
    assert not out.any()  # nothing ran
    wide = np.zeros((4, 8), np.float32)
    y, z = interp(a, w, out=(wide[:, :4], wide[:, 4:]))  # disjoint views of one array
    assert y.base is wide and z.base is wide
    np.testing.assert_array_equal(wide, np.hstack([np.full((4, 4), 8.0), np.full((4, 4), 9.0)]))
    interleaved = np.zeros((4, 8), np.float32)
    interp(a, w, out=(interleaved[:, ::2], interleaved[:, 1::2]))  # share no element
    np.testing.assert_array_equal(interleaved[:, ::2], np.full((4, 4), 8.0))


def test_cuda_host_path_refuses_one_array_for_two_outputs(cuda):
    a, w = ones(cuda)
    out = np.zeros((64, 64), np.float32)
    with pytest.raises(LaunchError, match=r"out\[1\] shares memory with out\[0\]"):
        cuda(a, w, out=(out, out))
    buffer = np.zeros((64, 64), np.float32)
    inside = buffer.view(BF16)[:, :64]  # a bf16 [64, 64] view of the buffer's memory
    with pytest.raises(LaunchError, match=r"out\[1\] shares memory with input 'a'"):
        cuda(inside, w, out=(None, buffer))


def test_device_path_refuses_one_array_for_two_outputs(cuda):
    class FakeDeviceArray:
        def __init__(self, shape, dtype, ptr):
            self.shape = tuple(shape)
            self.__cuda_array_interface__ = {
                "shape": self.shape,
                "typestr": np.dtype(dtype).str,
                "data": (ptr, False),
                "strides": None,
                "version": 3,
            }

    a = FakeDeviceArray((64, 64), BF16, 1 << 32)
    w = FakeDeviceArray((64, 64), BF16, (1 << 32) + (1 << 24))
    out = FakeDeviceArray((64, 64), np.float32, 1 << 36)
    with pytest.raises(LaunchError, match=r"out\[1\] shares memory with out\[0\]"):
        cuda(a, w, out=(out, out), stream=0)


def test_interp_refuses_a_read_only_out_before_the_run(interp):
    a, w = ones(interp)
    good = np.zeros((4, 4), np.float32)
    frozen = np.zeros((4, 4), np.float32)
    frozen.setflags(write=False)
    with pytest.raises(LaunchError, match=r"kernel @two_out: out\[1\]: the array is read-only"):
        interp(a, w, out=(good, frozen))
    assert not good.any()  # the first entry is not written either
    broadcast = np.broadcast_to(np.zeros((1, 4), np.float32), (4, 4))
    with pytest.raises(LaunchError, match=r"out\[0\]: the array is read-only"):
        interp(a, w, out=(broadcast, None))
    with pytest.raises(LaunchError, match=r"'out\[1\]': expected shape \[4, 4\], found \[4, 5\]"):
        interp(a, w, out=(good, np.zeros((4, 5), np.float32)))
    assert not good.any()


def test_cuda_host_path_refuses_a_read_only_out(cuda):
    a, w = ones(cuda)
    frozen = np.zeros((64, 64), np.float32)
    frozen.setflags(write=False)
    with pytest.raises(LaunchError, match=r"out\[0\]: the array is read-only"):
        cuda(a, w, out=(frozen, None))


def test_interp_out_of_a_dynamic_m_is_checked_at_the_arrays_m():
    f = mmcomp.Fusion("dyn_out")
    a = f.input("a", ["m", 8], "f32")
    w = f.input("w", [4, 8], "f32")
    f.output(f.linear(a, w))
    kernel = mmcomp.compile(f, backend="interp")
    x, y = np.ones((5, 8), np.float32), np.ones((4, 8), np.float32)
    out = np.zeros((5, 4), np.float32)
    (got,) = kernel(x, y, out=(out,))
    assert got is out
    np.testing.assert_array_equal(out, np.full((5, 4), 8.0))
    with pytest.raises(LaunchError, match=r"'out\[0\]': expected shape \[5, 4\], found \[6, 4\]"):
        kernel(x, y, out=(np.zeros((6, 4), np.float32),))


# ----------------------------------------------------------------------------------------
# check=, torch out= entries that require grad
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("check", ["x", 1, 0.0, [True]])
def test_check_must_be_a_bool(interp, cuda, check):
    for kernel in (interp, cuda):
        with pytest.raises(LaunchError, match=r"argument 'check': expected True, False or None"):
            kernel(*ones(kernel), check=check)


def test_check_takes_bools(interp):
    a, w = ones(interp)
    for check in (True, False, None, np.bool_(True)):
        y, _ = interp(a, w, check=check)
        np.testing.assert_array_equal(y, np.full((4, 4), 8.0))


def test_torch_out_that_requires_grad_is_refused(torch, interp, cuda):
    for kernel, size, dtype in ((interp, 4, torch.float32), (cuda, 64, torch.bfloat16)):
        a, w = (torch.ones(value.shape, dtype=dtype) for value in kernel.fusion.inputs)
        target = torch.zeros(size, size, requires_grad=True)
        with pytest.raises(LaunchError, match=r"out\[0\]: the tensor requires grad"):
            kernel(a, w, out=(target, None))
        assert not target.detach().any()
        shared = torch.zeros(size, size)
        with pytest.raises(LaunchError, match=r"out\[1\] shares memory with out\[0\]"):
            kernel(a, w, out=(shared, shared))
    a, w = torch.ones(4, 8), torch.ones(4, 8)
    target = torch.zeros(4, 4, requires_grad=True)
    with torch.no_grad():  # as torch's own out= functions: allowed without grad mode
        (y, _) = interp(a, w, out=(target, None))
    assert y is target and torch.equal(target.detach(), torch.full((4, 4), 8.0))


# ----------------------------------------------------------------------------------------
# torch tensors the call cannot read; load_kernel of neither text nor a path
# ----------------------------------------------------------------------------------------


def test_meta_and_sparse_tensors_are_refused_naming_the_argument(torch, interp, cuda):
    def sparse(tensor):
        return tensor.to_sparse()

    def meta(tensor):
        return tensor.to("meta")

    for kernel in (interp, cuda):
        a, w = ones(kernel)
        dtype = torch.float32 if kernel is interp else torch.bfloat16
        ta, tw = torch.ones(a.shape, dtype=dtype), torch.ones(w.shape, dtype=dtype)
        cases = [
            (
                (meta(ta), tw),
                r"input 'a': expected a dense \(strided\) torch tensor on the CPU "
                r"or a CUDA device, found a tensor on device 'meta'",
            ),
            (
                (ta, sparse(tw)),
                r"input 'w': expected a dense \(strided\) torch tensor .* found "
                r"a sparse_coo tensor on device 'cpu'",
            ),
        ]
        for arrays, message in cases:
            with pytest.raises(LaunchError, match=message):
                kernel(*arrays)
        out = torch.zeros(kernel.fusion.outputs[0].shape, device="meta")
        with pytest.raises(LaunchError, match=r"out\[0\]: expected a dense .* device 'meta'"):
            kernel(ta, tw, out=(out, None))


@pytest.mark.parametrize("source", [5, None, b"kernel.mlir", ["a.mlir"]])
def test_load_kernel_takes_text_or_a_path(source):
    with pytest.raises(LaunchError, match=r"load_kernel: argument 'source': expected IR text or"):
        mmcomp.load_kernel(source)


def test_load_kernel_reads_path_likes(tmp_path: Path):
    class Where:
        def __fspath__(self) -> str:
            return str(tmp_path / "missing.mlir")

    with pytest.raises(LaunchError, match=r"load_kernel: cannot read .*missing\.mlir"):
        mmcomp.load_kernel(Where())
    with pytest.raises(LaunchError, match=r"load_kernel: cannot read .*missing\.mlir"):
        mmcomp.load_kernel(tmp_path / "missing.mlir")


# ----------------------------------------------------------------------------------------
# mmcomp.torch: input names torch's schema refuses, module schedule keywords
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "names", [("None", "w"), ("True", "False"), ("def", "in"), ("out", "out_"), ("None", "None_")]
)
def test_op_renames_inputs_named_like_keywords(torch, names):
    import mmcomp.torch as mt

    f = mmcomp.Fusion("keyword_names")
    a = f.input(names[0], [8, 16], "f32")
    w = f.input(names[1], [12, 16], "f32")
    f.output(f.linear(a, w))
    op = mt.op(f, backend="interp")
    arguments = [argument.name for argument in op._opoverload._schema.arguments]
    assert arguments[0] != arguments[1]
    assert arguments[0].startswith(names[0]) and arguments[1].startswith(names[1])
    x, y = torch.ones(8, 16), torch.ones(12, 16)
    torch.testing.assert_close(op(x, y), torch.full((8, 12), 16.0))
    torch.testing.assert_close(op(**dict(zip(arguments, (x, y), strict=True))), op(x, y))


def test_schema_argument_names_are_distinct_and_parse(torch):
    from mmcomp.torch.ops import arguments

    names = arguments(["None", "None_", "def", "out", "out_", "NoneType", None, "x6", "a"])
    assert names == ["None_", "None__", "def_", "out_", "out__", "NoneType_", "x6", "x6_", "a"]
    schema = f"f({', '.join(f'Tensor {name}' for name in names)}) -> Tensor"
    torch._C.parse_schema(schema)


def linear_module(torch):
    return torch.nn.Linear(64, 128).to(torch.bfloat16)


def gated_mlp_module(torch):
    """A Llama-like MLP: gate, up and down projections and a SiLU."""
    mlp = torch.nn.Module()
    mlp.gate_proj = torch.nn.Linear(64, 128, bias=False).to(torch.bfloat16)
    mlp.up_proj = torch.nn.Linear(64, 128, bias=False).to(torch.bfloat16)
    mlp.down_proj = torch.nn.Linear(128, 64, bias=False).to(torch.bfloat16)
    mlp.act_fn = torch.nn.SiLU()
    return mlp


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"tyle": (1, 2, 3)}, r"FusedLinear: unknown schedule parameter 'tyle'"),
        ({"backend": "cpu"}, r"FusedLinear: unknown backend 'cpu'; expected one of cuda, interp"),
        ({"tile": (128, 128)}, r"FusedLinear: tile=\(128, 128\): expected \(m, n, k\)"),
        ({"schedule_m": 0}, r"FusedLinear: schedule_m: expected a positive int"),
        ({"autotune": "yes"}, r"FusedLinear: autotune='yes': expected True or False"),
        (
            {"autotune": True, "autotune_budget_s": float("nan")},
            r"FusedLinear: autotune_budget_s=nan: expected a positive, finite number",
        ),
    ],
)
def test_fused_linear_checks_its_schedule_when_built(torch, schedule, message):
    import mmcomp.torch as mt

    with pytest.raises(ScheduleError, match=message):
        mt.FusedLinear(linear_module(torch), "gelu", **schedule)


def test_gated_mlp_checks_both_schedules_when_built(torch):
    import mmcomp.torch as mt

    with pytest.raises(ScheduleError, match=r"GatedMLP: gate_up_schedule: unknown schedule "):
        mt.GatedMLP(gated_mlp_module(torch), gate_up_schedule={"tyle": (1, 2, 3)})
    with pytest.raises(ScheduleError, match=r"GatedMLP: down_schedule: unknown backend 'cpu'"):
        mt.GatedMLP(gated_mlp_module(torch), down_schedule={"backend": "cpu"})
    with pytest.raises(ScheduleError, match=r"down_schedule: expected a dict .* found list"):
        mt.GatedMLP(gated_mlp_module(torch), down_schedule=["interp"])


def test_modules_with_valid_schedules_still_run(torch):
    import mmcomp.torch as mt

    linear = linear_module(torch)
    module = mt.FusedLinear(linear, None, backend="interp", tile=[128, 128, 64])
    x = torch.randn(3, 64, dtype=torch.bfloat16)
    with torch.no_grad():
        want = linear(x).double()
        got = module(x).double()
    assert float((got - want).abs().max() / want.abs().max()) < 2e-2
    interp = {"backend": "interp"}
    gated = mt.GatedMLP(gated_mlp_module(torch), gate_up_schedule=interp, down_schedule=interp)
    with torch.no_grad():
        assert gated(x).shape == (3, 64)


# ----------------------------------------------------------------------------------------
# autotune arguments, checked before anything else
# ----------------------------------------------------------------------------------------


def small_linear() -> mmcomp.Fusion:
    f = mmcomp.Fusion("tuned")
    a = f.input("a", [128, 64], "bf16")
    w = f.input("w", [64, 64], "bf16")
    f.output(f.linear(a, w))
    return f


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), -float("inf"), 0, -1.0, "5", True])
def test_autotune_refuses_a_budget_that_is_not_finite_and_positive(monkeypatch, budget):
    monkeypatch.setattr(tuning, "gpu_reason", lambda: "no GPU in this test")
    with pytest.raises(ValueError, match=r"autotune: budget_s=.*: expected a positive, finite"):
        mmcomp.autotune(small_linear(), budget_s=budget)


class UnusedTimer:
    """A timer the tune must not reach (its arguments are refused first)."""

    def device(self) -> str:
        raise AssertionError("the timer was used")


@pytest.mark.parametrize("limit", [0, -3, 2.0, True])
def test_autotune_refuses_max_candidates_with_or_without_a_gpu(monkeypatch, limit):
    with pytest.raises(ValueError, match=r"autotune: max_candidates=.*: expected a positive int"):
        mmcomp.autotune(small_linear(), max_candidates=limit, timer=UnusedTimer())
    monkeypatch.setattr(tuning, "gpu_reason", lambda: "no GPU in this test")
    with pytest.raises(ValueError, match=r"autotune: max_candidates=.*: expected a positive int"):
        mmcomp.autotune(small_linear(), max_candidates=limit)


def test_check_budget_takes_finite_positive_numbers():
    assert tuning.check_budget("budget_s", 3) == 3.0
    assert tuning.check_budget("budget_s", np.float32(0.5)) == 0.5
    with pytest.raises(ValueError, match=r"budget_s=nan: expected a positive, finite number"):
        tuning.check_budget("budget_s", float("nan"))


# ----------------------------------------------------------------------------------------
# The compile cache: whole entries of the wrong contents are misses
# ----------------------------------------------------------------------------------------


def pack(artifact: object) -> bytes:
    return zlib.compress(pickle.dumps(artifact))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Iterator[Path]:
    """A fresh cache directory, and no kernel in memory."""
    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path))
    compile_cache.clear_memory()
    yield tmp_path
    compile_cache.clear_memory()


def test_decode_refuses_missing_keys_and_wrong_types(cache_dir):
    kernel = mmcomp.compile(small_linear())
    (entry,) = cache_dir.glob(f"*{compile_cache.ARTIFACT_SUFFIX}")
    artifact = compile_cache.read_artifact(entry)
    assert artifact is not None and artifact["name"] == "tuned"
    assert compile_cache._decode(pack(artifact)) is not None
    broken = [
        {"format": compile_cache.FORMAT},
        {**artifact, "params": None},
        {**artifact, "ptx": b"ptx"},
        {**artifact, "num_inputs": "2"},
        {**artifact, "num_outputs": True},
        {**artifact, "stage_ir": {"fusion": 1}},
        {**artifact, "stage_ir": []},
        {**artifact, "backend": "interp"},
        {key: value for key, value in artifact.items() if key != "name"},
        {**artifact, "plan": None},
    ]
    for wrong in broken:
        assert compile_cache._decode(pack(wrong)) is None, wrong
    store = KernelCache(cache_dir, suffix=compile_cache.ARTIFACT_SUFFIX)
    for wrong in broken[:2]:
        assert store.store(entry.stem, pack(wrong))
        assert "damaged" in compile_cache.info(verbose=True)
        compile_cache.clear_memory()
        with pytest.warns(UserWarning, match=r"does not decode; it is discarded and rebuilt"):
            again = mmcomp.compile(small_linear())
        assert again.params == kernel.params and again.ptx == kernel.ptx
        assert compile_cache.read_artifact(entry) is not None  # rebuilt whole
    assert "@tuned" in compile_cache.info(verbose=True)


def test_info_says_a_cache_path_that_is_a_file_is_not_a_directory(tmp_path, monkeypatch):
    path = tmp_path / "a-file"
    path.write_text("x")
    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(path))
    shown = compile_cache.info()
    assert f"mmcomp cache: {path} (not a directory" in shown
    assert "not created yet" not in shown
    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path / "new"))
    assert "(not created yet)" in compile_cache.info()
