"""GPU tests of the lowering's edge cases against the float64 reference: operands and
outputs without an m or n axis (M = 1, N = 1), rows that are not a multiple of 16 bytes
(staged through padded copies), and an output past 2^32 elements (sampled rows and columns).

Each case runs in a child process with a timeout (a wrong mbarrier parity hangs rather than
fails). The child compiles the fusion, draws fresh random inputs, poisons the outputs
(0xFF bytes: NaN) and zeroes the workspaces, launches, and prints one JSON line with each
output's relative error; a second launch of the same binding, on new inputs and on another
stream, checks that the staging copies are refilled at every launch and follow the stream.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import cases
import pytest
from cases import TOLERANCE, child_environment

from mmcomp.frontend.builder import Fusion

pytestmark = pytest.mark.gpu

CASE_TIMEOUT_S = 120
"""Seconds one case may take, compilation included."""

CHILD = r"""
import json, sys
import numpy as np
import mmcomp
from mmcomp.backend import build_cuda_kernel
from cases import inputs_for, relative_error
from mmcomp.pipeline import run_pipeline
from mmcomp.interp.reference import reference
from mmcomp.runtime import DeviceBuffer, Stream, synchronize

spec = json.loads(sys.argv[1])
params = spec["params"]
for key in ("tile", "cluster"):
    if key in params:
        params[key] = tuple(params[key])
fusion = mmcomp.parse(spec["ir"])
module, chosen, _ = run_pipeline(fusion.module, params)
kernel = build_cuda_kernel(module)
specs = kernel.argument_specs()
first_output = kernel.num_inputs
first_workspace = kernel.num_inputs + kernel.num_outputs
rounds = []
inputs = [DeviceBuffer.from_host(x) for x in inputs_for(fusion)]
outputs = [DeviceBuffer(shape, dtype) for _, shape, dtype in specs[first_output:]]
bound = kernel.bind([*inputs, *outputs])
for staged in bound.staging.copies:
    staged.by_copy_engine = not spec.get("staging_kernel", False)
for stream in (None, Stream()):
    host = inputs_for(fusion)
    for buffer, value in zip(inputs, host):
        buffer.copy_from_host(value)
    for index, buffer in enumerate(outputs):
        buffer.fill_bytes(0xFF if first_output + index < first_workspace else 0)
    synchronize()
    bound.launch(stream)
    synchronize()
    want = reference(fusion, *host, accumulate=np.float64)
    errors = []
    for index, (buffer, w) in enumerate(zip(outputs, want)):
        errors.append(
            {"output": index, "dtype": fusion.outputs[index].dtype,
             "error": relative_error(buffer.to_host(), np.asarray(w))}
        )
    rounds.append(errors)
staged = [operand.arg for operand in kernel.plan.tensor_maps if operand.pitch]
print(json.dumps({"params": chosen.format(), "rounds": rounds, "staged": staged}), flush=True)
"""


def run_child(script: str, argument: str) -> dict[str, Any]:
    """Run `script` in a child Python with a timeout; its last stdout line as JSON."""
    try:
        result = subprocess.run(
            [sys.executable, "-c", script, argument],
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT_S,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the case did not finish in {CASE_TIMEOUT_S} s (a hang?)")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_fusion(
    fusion: Fusion, params: dict[str, Any], staged: bool = False, staging_kernel: bool = False
) -> None:
    """Both launches of the fusion match float64 within the output dtype's tolerance
    (`staging_kernel`: the staging copies made by the staging kernel, not cuMemcpy2DAsync)."""
    spec = {"ir": str(fusion), "params": params, "staging_kernel": staging_kernel}
    report = run_child(CHILD, json.dumps(spec))
    assert bool(report["staged"]) == staged, report
    for errors in report["rounds"]:
        for entry in errors:
            assert entry["error"] < TOLERANCE[entry["dtype"]], report


def fms(a_shape: list[int], b_shape: list[int], epilogue: str = "") -> Fusion:
    """fused_multiply_sum of a and b over the last axis; `epilogue` "silu_mul" multiplies
    silu of it by an operand t of the result's shape, "row" adds a [1, N] row."""
    f = Fusion("fms")
    a = f.input("a", a_shape, "bf16")
    b = f.input("b", b_shape, "bf16")
    y = f.fused_multiply_sum(a, b, [len(a_shape) - 1])
    shape = [max(x, z) for x, z in zip(a_shape[:-1], b_shape[:-1], strict=True)]
    if epilogue == "silu_mul":
        y = f.silu(y) * f.input("t", shape, "bf16")
    if epilogue == "row":
        y = y + f.input("row", [1, shape[-1]], "bf16")
    f.output(f.cast(y, "bf16"))
    return f


REG = {"epilogue": "registers", "split_k": 1}
TILE = {"tile": (128, 128, 64)}

M1 = cases.broadcast_inputs(1, 512, 256)
"""fused_multiply_sum of a[1, 1, K] and b[1, N, K]: a has no m axis, the output none."""

ABSENT_AXES: list[tuple[str, Fusion, dict[str, Any]]] = [
    ("m1_cooperative", M1, {**REG, **TILE}),
    ("m1_persistent_swizzle", M1, {**REG, "swizzle": 4}),
    ("m1_one_tile", M1, {**REG, "strategy": "one-tile-per-cta"}),
    ("m1_pingpong", M1, {**REG, "warp_specialization": "pingpong"}),
    ("m1_none", M1, {**REG, **TILE, "warp_specialization": "none"}),
    ("m1_smem", M1, {"epilogue": "smem", "split_k": 1}),
    ("m1_split_k", M1, {**TILE, "split_k": 2}),
    ("m1_cluster_1x2", M1, {**REG, **TILE, "cluster": (1, 2)}),
    ("m1_silu_mul", cases.broadcast_silu_mul(1, 512, 256), {}),
    ("m1_silu_mul_split_k", cases.broadcast_silu_mul(1, 512, 256), {**TILE, "split_k": 2}),
    ("m1_row", fms([1, 1, 256], [1, 300, 256], "row"), {}),
    ("n1", fms([300, 1, 256], [1, 1, 256]), {}),
    ("n1_pingpong", fms([300, 1, 256], [1, 1, 256]), {"warp_specialization": "pingpong"}),
    ("m1_n1", fms([1, 1, 256], [1, 1, 256]), {}),
    ("m1_batch", fms([3, 1, 1, 192], [3, 1, 264, 192], "silu_mul"), {}),
    ("linear_n1", cases.linear(300, 1, 256), {}),
]


@pytest.mark.parametrize(
    ("fusion", "params"),
    [pytest.param(f, p, id=name) for name, f, p in ABSENT_AXES],
)
def test_absent_axes_match_float64(fusion: Fusion, params: dict[str, Any]):
    check_fusion(fusion, params)


UNALIGNED: list[tuple[str, Fusion, dict[str, Any]]] = [
    ("k100", cases.linear(300, 264, 100), {}),
    ("k700_pingpong", cases.linear(300, 264, 700), {"warp_specialization": "pingpong"}),
    ("k1001_split_k", cases.linear(300, 264, 1001), {**TILE, "split_k": 3}),
    ("k100_none", cases.linear(300, 264, 100), {**REG, **TILE, "warp_specialization": "none"}),
    ("k100_cluster", cases.linear(1000, 1000, 100), {**REG, **TILE, "cluster": (2, 1)}),
    ("k100_f16", cases.linear(300, 264, 100, "f16"), {}),
    ("matmul_n7", cases.matmul(300, 7, 256), {}),
    ("matmul_odd", cases.matmul(301, 263, 255), {"epilogue": "smem", "split_k": 1}),
    ("matmul_odd_registers", cases.matmul(301, 263, 255), REG),
    ("batch_odd", cases.matmul(200, 263, 100, batch=2), {}),
    ("row_ops_odd", cases.row_ops(301, 263, 255), {}),
    ("gelu_bias_odd", cases.gelu_bias(300, 263, 1001), {"epilogue": "smem", "split_k": 1}),
    ("silu_mul_odd", cases.silu_mul(300, 263, 100), {}),
    ("horizontal_odd", cases.horizontal(300, 263, 100), {}),
]


@pytest.mark.parametrize(
    ("fusion", "params"),
    [pytest.param(f, p, id=name) for name, f, p in UNALIGNED],
)
def test_unaligned_rows_match_float64(fusion: Fusion, params: dict[str, Any]):
    check_fusion(fusion, params, staged=True)


@pytest.mark.parametrize(
    ("fusion", "params"),
    [
        pytest.param(cases.linear(300, 264, 1001), {}, id="k1001"),
        pytest.param(cases.matmul(200, 263, 100, batch=2), {}, id="batch_odd"),
        pytest.param(cases.linear(300, 300, 100), {"warp_specialization": "pingpong"}, id="same"),
    ],
)
def test_unaligned_rows_staged_by_the_staging_kernel(fusion: Fusion, params: dict[str, Any]):
    """The staging kernel (where the driver refuses a 2-D copy's pitches) stages right."""
    check_fusion(fusion, params, staged=True, staging_kernel=True)


PUBLIC = r"""
import json, sys
import numpy as np
import mmcomp
import cases
from cases import inputs_for, relative_error
from mmcomp.interp.reference import reference

fusion = mmcomp.parse(sys.argv[1])
kernel = mmcomp.compile(fusion)
errors = []
for _ in range(2):
    host = inputs_for(fusion)
    got = kernel(*host)
    want = reference(fusion, *host, accumulate=np.float64)
    errors += [relative_error(g, np.asarray(w)) for g, w in zip(got, want)]
print(json.dumps({"errors": errors}), flush=True)
"""


def test_unaligned_rows_through_the_public_call():
    """mmcomp.compile(f)(numpy arrays) with K = 100: the call path stages too."""
    report = run_child(PUBLIC, str(cases.linear(257, 300, 100)))
    assert max(report["errors"]) < TOLERANCE["bf16"], report


SHARED = r"""
import json, sys
import numpy as np
import mmcomp
from mmcomp.backend import build_cuda_kernel
from cases import inputs_for, relative_error
from mmcomp.pipeline import run_pipeline
from mmcomp.interp.reference import reference
from mmcomp.runtime import DeviceBuffer, synchronize

fusion = mmcomp.parse(sys.argv[1])
module, _, _ = run_pipeline(fusion.module, {})
kernel = build_cuda_kernel(module)
_, shape, dtype = kernel.argument_specs()[kernel.num_inputs]
bindings = []
for _ in range(3):
    host = inputs_for(fusion)
    out = DeviceBuffer(shape, dtype)
    out.fill_bytes(0xFF)
    bound = kernel.bind([*(DeviceBuffer.from_host(x) for x in host), out])
    bindings.append((host, out, bound))
synchronize()
for _, _, bound in bindings:
    bound.launch()
synchronize()
errors = [
    relative_error(out.to_host(), np.asarray(reference(fusion, *host, accumulate=np.float64)[0]))
    for host, out, _ in bindings
]
print(json.dumps({"errors": errors}), flush=True)
"""


def test_staged_bindings_share_copies_in_stream_order():
    """Three bindings of one kernel (A and W both staged, same shape: two slots) launched
    back to back on one stream share the pooled copies and still each get their own
    product."""
    report = run_child(SHARED, str(cases.linear(300, 300, 100)))
    assert max(report["errors"]) < TOLERANCE["bf16"], report


PADDED = r"""
import json, sys
import numpy as np
import mmcomp
from mmcomp.backend import build_cuda_kernel
from cases import inputs_for, relative_error
from mmcomp.pipeline import run_pipeline
from mmcomp.interp.reference import reference
from mmcomp.runtime import DeviceArray, DeviceBuffer, synchronize

fusion = mmcomp.parse(sys.argv[1])
module, _, _ = run_pipeline(fusion.module, {})
kernel = build_cuda_kernel(module)
host = inputs_for(fusion)
a = host[0]
rows, k = a.shape
pitch = -(-k // 8) * 8
padded = np.zeros((rows, pitch), a.dtype)
padded[:, :k] = a
storage = DeviceBuffer.from_host(padded)
view = DeviceArray(storage.ptr, a.shape, a.dtype, (pitch * a.dtype.itemsize, a.dtype.itemsize))
_, shape, dtype = kernel.argument_specs()[kernel.num_inputs]
out = DeviceBuffer(shape, dtype)
out.fill_bytes(0xFF)
bound = kernel.bind([view, *(DeviceBuffer.from_host(x) for x in host[1:]), out])
staged = [copy.arg for copy in bound.staging.copies]
bound.launch()
synchronize()
want = np.asarray(reference(fusion, *host, accumulate=np.float64)[0])
print(json.dumps({"error": relative_error(out.to_host(), want), "staged": staged}), flush=True)
"""


def test_a_padded_view_is_read_in_place():
    """A[300, 100] handed over as a view of rows of 104 elements: TMA reads it in place
    (only W, C-contiguous with rows of 200 bytes, is staged)."""
    report = run_child(PADDED, str(cases.linear(300, 264, 100)))
    assert report["staged"] == [1], report
    assert report["error"] < TOLERANCE["bf16"], report


LARGE = r"""
import json, sys
import numpy as np
import ml_dtypes
import mmcomp
import cases
from mmcomp.backend import build_cuda_kernel
from mmcomp.pipeline import run_pipeline
from mmcomp.runtime import DeviceBuffer, synchronize
from mmcomp.runtime.driver import check, driver_api

m, n, k = 32768, 152064, 512
fusion = cases.linear(m, n, k)
module, chosen, _ = run_pipeline(fusion.module, {"epilogue": "registers", "split_k": 1})
kernel = build_cuda_kernel(module)
rng = np.random.default_rng()
a = rng.standard_normal((m, k)).astype(np.float32).astype(ml_dtypes.bfloat16)
w = rng.standard_normal((n, k)).astype(np.float32).astype(ml_dtypes.bfloat16)
out = DeviceBuffer((m, n), ml_dtypes.bfloat16)
out.fill_bytes(0xFF)
bound = kernel.bind([DeviceBuffer.from_host(a), DeviceBuffer.from_host(w), out])
bound.launch()
synchronize()
driver = driver_api()
# Rows on both sides of the 2^32-element boundary (row 28244), the last rows, and others.
boundary = (1 << 32) // n
rows = sorted({0, 1, boundary - 1, boundary, boundary + 1, m - 2, m - 1,
               *rng.integers(0, m, 57).tolist()})
got_rows = np.empty((len(rows), n), ml_dtypes.bfloat16)
for index, row in enumerate(rows):
    check(driver.cuMemcpyDtoH(got_rows[index].ctypes.data, out.ptr + row * n * 2, n * 2), "row")
columns = sorted({0, n - 1, *rng.integers(0, n, 6).tolist()})
got_columns = np.empty((len(columns), m), ml_dtypes.bfloat16)
for index, column in enumerate(columns):
    request = driver.CUDA_MEMCPY2D()
    request.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
    request.srcDevice = out.ptr + column * 2
    request.srcPitch = n * 2
    request.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
    request.dstHost = got_columns[index].ctypes.data
    request.dstPitch = 2
    request.WidthInBytes = 2
    request.Height = m
    check(driver.cuMemcpy2D(request), "column")
a64, w64 = a.astype(np.float64), w.astype(np.float64)
want_rows = a64[rows] @ w64.T
want_columns = (a64 @ w64[columns].T).T
def error(got, want):
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
print(json.dumps({"params": chosen.format(), "rows": error(got_rows, want_rows),
                  "columns": error(got_columns, want_columns)}), flush=True)
"""


def test_output_past_2_32_elements_sampled():
    """linear(A[32768, 512], W[152064, 512]) in bf16 through the registers epilogue: 4.98e9
    output elements; sampled rows (both sides of element 2^32) and columns against float64."""
    report = run_child(LARGE, "")
    assert report["rows"] < TOLERANCE["bf16"], report
    assert report["columns"] < TOLERANCE["bf16"], report
