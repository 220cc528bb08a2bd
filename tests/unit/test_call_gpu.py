"""The public call on the GPU with torch (and cupy) arrays: every fusion family, values
against float64, no host synchronization, the current stream, out= and stream=, weights that
require grad, host inputs, CUDA-graph capture, cached launches, and the misuse errors.

Values are checked in debug mode (`check=True`: outputs poisoned, the stream synchronized).
Skipped without torch, and (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import cases  # noqa: E402

import mmcomp  # noqa: E402
import mmcomp.torch as mt  # noqa: E402
from mmcomp.errors import LaunchError  # noqa: E402
from mmcomp.interp.reference import reference  # noqa: E402

pytestmark = pytest.mark.gpu

FAMILIES = [
    "linear_bias",
    "linear_f16",
    "matmul_batch",
    "gelu_bias",
    "gelu_erf",
    "silu_mul",
    "horizontal",
    "row_ops",
    "broadcast_inputs",
    "split_k_linear",
    "smem_ragged",
    "cluster_linear",
    "pingpong_linear",
    "default_smem",
]
"""Cases of tests/unit/cases.py run through the public call with torch tensors."""


def on_gpu(arrays: list[np.ndarray]) -> list:
    return [mt.ARRAYS.from_numpy(array, None).cuda() for array in arrays]


def to_numpy(tensor) -> np.ndarray:
    return mt.ARRAYS.to_numpy(tensor.detach().cpu())


def check_outputs(fusion, host_inputs, outputs) -> None:
    """Each output against the float64 reference, within its dtype's tolerance."""
    want = reference(fusion, *host_inputs, accumulate=np.float64)
    assert len(outputs) == len(want)
    for index, (got, expected) in enumerate(zip(outputs, want, strict=True)):
        dtype = fusion.outputs[index].dtype
        error = cases.relative_error(to_numpy(got), np.asarray(expected))
        assert error < cases.TOLERANCE[dtype], (index, dtype, error)


def compiled(name: str):
    selected = cases.case(name)
    fusion = selected.fusion()
    return fusion, mmcomp.compile(fusion, **selected.params)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_takes_torch_tensors_and_gives_torch_tensors(name: str):
    fusion, kernel = compiled(name)
    host = cases.inputs_for(fusion)
    outputs = kernel(*on_gpu(host), check=True)
    for value, output in zip(fusion.outputs, outputs, strict=True):
        assert isinstance(output, torch.Tensor) and output.is_cuda
        assert tuple(output.shape) == value.shape and not output.requires_grad
        assert mt.TORCH_DTYPES[output.dtype] == value.numpy_dtype
    check_outputs(fusion, host, outputs)
    again = kernel(*on_gpu(cases.inputs_for(fusion)), check=True)  # fresh inputs, same kernel
    assert len(again) == len(outputs)


def test_the_call_queues_on_the_current_stream_without_synchronizing():
    fusion, kernel = compiled("linear_1000")
    first, second = cases.inputs_for(fusion), cases.inputs_for(fusion)
    a, w = on_gpu(first)
    (warm,) = kernel(a, w)  # module loaded, launch prepared
    new_a = on_gpu(second[:1])[0]
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(1_000_000_000)  # about half a second of GPU time on this stream
        a.copy_(new_a)  # runs after the sleep, on the side stream
        start = time.perf_counter()
        (y,) = kernel(a, w)
        elapsed = time.perf_counter() - start
        done = torch.cuda.Event()
        done.record(side)
    assert not done.query(), "the call waited for the stream"
    assert elapsed < 0.05, elapsed
    side.synchronize()
    check_outputs(fusion, [second[0], first[1]], [y])  # it ran after the copy: same stream
    del warm


def test_out_is_written_in_place_and_returned():
    fusion, kernel = compiled("silu_mul")
    host = cases.inputs_for(fusion)
    inputs = on_gpu(host)
    shapes = [(value.shape, mt.NUMPY_DTYPES[value.numpy_dtype]) for value in fusion.outputs]
    targets = [torch.full(shape, 7.0, dtype=dtype, device="cuda") for shape, dtype in shapes]
    for out in (tuple(targets), list(targets), {"out0": targets[0], 1: targets[1]}):
        returned = kernel(*inputs, out=out, check=True)
        assert all(got is want for got, want in zip(returned, targets, strict=True))
        check_outputs(fusion, host, targets)
    partial = kernel(*inputs, out={"out1": targets[1]}, check=True)
    assert partial[1] is targets[1] and partial[0] is not targets[0]
    check_outputs(fusion, host, partial)


def test_out_may_be_a_strided_view_the_kernel_can_write():
    fusion, kernel = compiled("smem_ragged")  # outputs stored by TMA: 16-byte rows suffice
    host = cases.inputs_for(fusion)
    (shape, dtype) = fusion.outputs[0].shape, mt.NUMPY_DTYPES[fusion.outputs[0].numpy_dtype]
    wide = torch.zeros(shape[0], shape[1] + 8, dtype=dtype, device="cuda")
    view = wide[:, : shape[1]]
    (got,) = kernel(*on_gpu(host), out=[view], check=True)
    assert got is view
    check_outputs(fusion, host, [view])
    assert bool((wide[:, shape[1] :] == 0).all()), "the call wrote past the view"


def test_stream_argument_takes_torch_raw_and_mmcomp_streams():
    from mmcomp.runtime import Stream

    fusion, kernel = compiled("linear_bias")
    host = cases.inputs_for(fusion)
    inputs = on_gpu(host)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    own = Stream()
    for stream in (side, side.cuda_stream, own):
        (y,) = kernel(*inputs, stream=stream)
        if stream is own:
            own.synchronize()
        else:
            side.synchronize()
        check_outputs(fusion, host, [y])
    with pytest.raises(LaunchError, match=r"argument 'stream': expected a torch.cuda.Stream"):
        kernel(*inputs, stream="side")
    with pytest.raises(LaunchError, match=r"argument 'stream': expected a torch.cuda.Stream"):
        kernel(*inputs, stream=torch.zeros(1))


def test_weights_that_require_grad_are_read_through_a_detached_view():
    fusion, kernel = compiled("linear_bias")
    host = cases.inputs_for(fusion)
    n, k = fusion.inputs[1].shape
    linear = torch.nn.Linear(k, n, dtype=torch.bfloat16, device="cuda")
    a, w, b = on_gpu(host)
    with torch.no_grad():
        linear.weight.copy_(w)
        linear.bias.copy_(b)
    assert linear.weight.requires_grad
    (y,) = kernel(a, linear.weight, linear.bias, check=True)
    assert not y.requires_grad
    check_outputs(fusion, host, [y])


def test_host_inputs_give_host_outputs_of_their_kind():
    fusion, kernel = compiled("gelu_bias")
    host = cases.inputs_for(fusion)
    (array,) = kernel(*host)
    assert isinstance(array, np.ndarray)
    cpu = [mt.ARRAYS.from_numpy(x, None) for x in host]
    (tensor,) = kernel(*cpu)
    assert isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu"
    target = torch.empty_like(tensor)
    (written,) = kernel(*cpu, out=[target])
    assert written is target
    for got in (array, tensor, target):
        got = got if isinstance(got, np.ndarray) else mt.ARRAYS.to_numpy(got)
        error = cases.relative_error(
            got, np.asarray(reference(fusion, *host, accumulate=np.float64)[0])
        )
        assert error < cases.TOLERANCE["bf16"]


def test_misuse_is_refused_naming_the_argument():
    fusion, kernel = compiled("row_ops")
    a, b, row, col, other = on_gpu(cases.inputs_for(fusion))
    shape = fusion.outputs[0].shape
    with pytest.raises(
        LaunchError,
        match=r"inputs mix host and device arrays: input 'b' is a CPU torch tensor, input 'a' "
        r"a CUDA torch tensor",
    ):
        kernel(a, b.cpu(), row, col, other)
    wrong = {
        r"'out\[0\]': expected shape": torch.empty(
            shape[0], shape[1] + 1, dtype=torch.bfloat16, device="cuda"
        ),
        r"'out\[0\]': expected dtype bfloat16, found float32": torch.empty(shape, device="cuda"),
        r"'out\[0\]': expected a C-contiguous array": torch.empty(
            shape[1], shape[0], dtype=torch.bfloat16, device="cuda"
        ).t(),
        r"out\[0\]: expected an array on CUDA device 0 \(where the inputs are\), found a CPU "
        r"torch tensor": torch.empty(shape, dtype=torch.bfloat16),
        r"out\[0\] shares memory with input 'other'": other,
    }
    for message, out in wrong.items():
        with pytest.raises(LaunchError, match=message):
            kernel(a, b, row, col, other, out=[out])
    with pytest.raises(LaunchError, match=r"kernel @row_ops: argument 'a': expected shape"):
        kernel(a[:-1], b, row, col, other)


def test_repeated_calls_reuse_the_prepared_launch():
    fusion, kernel = compiled("linear_bias")
    inputs = on_gpu(cases.inputs_for(fusion))
    state = kernel.device_kernel.call_state()
    (y,) = kernel(*inputs)
    count = len(state.launches)
    for _ in range(20):
        kernel(*inputs, out=[y])
    assert len(state.launches) == count  # out=[y] is the first call's key: every call hits
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(200):
        kernel(*inputs, out=[y])
    per_call = (time.perf_counter() - start) / 200
    torch.cuda.synchronize()
    assert per_call < 200e-6, per_call


FAST_PATH = {
    "linear_bias": "cuLaunchKernel",
    "cluster_linear": "cuLaunchKernelEx with a cluster",
    "split_k_linear": "tile counters zeroed before the launch",
    "staged": "staging copies before the launch",
}
"""Cases whose relaunch differs, and how."""


def fast_path_case(name: str):
    """The fusion and kernel of a FAST_PATH case ("staged": K = 255, rows of 510 bytes,
    which TMA cannot address)."""
    if name == "staged":
        fusion = cases.linear(256, 256, 255)
        return fusion, mmcomp.compile(fusion)
    return compiled(name)


@pytest.mark.parametrize("name", list(FAST_PATH))
def test_the_fast_path_gives_the_checked_calls_values(name: str):
    """After a checked call and a first plain one, plain calls take the fast path (the freed
    outputs' memory, poisoned, is what the next call's outputs reuse) and give the same
    values."""
    fusion, kernel = fast_path_case(name)
    host = cases.inputs_for(fusion)
    inputs = on_gpu(host)
    outputs = kernel(*inputs, check=True)
    check_outputs(fusion, host, outputs)
    for tensor in outputs:
        tensor.fill_(float("nan"))
    del outputs
    outputs = kernel(*inputs)  # the first plain call keeps its launch (new output pointers)
    torch.cuda.synchronize()
    check_outputs(fusion, host, outputs)
    state = kernel.device_kernel.call_state()
    hot = state.hot
    assert hot is not None
    hits: list[bool] = []

    def counted(arrays):
        found = hot(arrays)
        hits.append(found is not None)
        return found

    state.hot = counted
    try:
        for _ in range(3):
            for tensor in outputs:
                tensor.fill_(float("nan"))
            del outputs
            outputs = kernel(*inputs)
            torch.cuda.synchronize()
            check_outputs(fusion, host, outputs)
    finally:
        state.hot = hot
    assert hits == [True, True, True]


@pytest.mark.parametrize("name", list(FAST_PATH))
def test_the_out_fast_path_writes_the_checked_calls_values(name: str):
    """After a checked call and a first plain one with `out=`, plain calls with the same
    entries take the out fast path and write the same values."""
    fusion, kernel = fast_path_case(name)
    host = cases.inputs_for(fusion)
    inputs = on_gpu(host)
    targets = list(kernel(*inputs, check=True))
    check_outputs(fusion, host, targets)
    kernel(*inputs, out=targets)  # keeps its launch for the out fast path
    state = kernel.device_kernel.call_state()
    hot = state.hot_out
    assert hot is not None
    hits: list[bool] = []

    def counted(arrays, out):
        found = hot(arrays, out)
        hits.append(found is not None)
        return found

    state.hot_out = counted
    try:
        for out in (tuple(targets), list(targets), tuple(targets)):
            for tensor in targets:
                tensor.fill_(float("nan"))
            returned = kernel(*inputs, out=out)
            assert all(got is want for got, want in zip(returned, targets, strict=True))
            torch.cuda.synchronize()
            check_outputs(fusion, host, targets)
    finally:
        state.hot_out = hot
    assert hits == [True, True, True]


def test_a_thread_new_to_cuda_relaunches_after_making_the_context_current():
    """A kept launch relaunched from a thread that has made no CUDA call (no context
    current there) runs: the driver takes it, or refuses it until the relaunch has made
    mmcomp's context current and launched again."""
    import threading

    fusion, kernel = compiled("linear_bias")
    host = cases.inputs_for(fusion)
    inputs = on_gpu(host)
    (y,) = kernel(*inputs, check=True)
    kept = kernel.device_kernel.call_state().fast_launches
    relaunch = kept[next(key for key in kept if key[-1] == y.data_ptr())]
    y.fill_(float("nan"))
    torch.cuda.synchronize()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            relaunch()
        except BaseException as error:  # noqa: BLE001  (reported by the test below)
            failures.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not failures, failures
    torch.cuda.synchronize()
    check_outputs(fusion, host, [y])


def test_split_k_workspaces_are_per_stream_and_reset():
    fusion, kernel = compiled("split_k_silu_mul")
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for _ in range(3):
        for stream in streams:
            host = cases.inputs_for(fusion)
            with torch.cuda.stream(stream):
                outputs = kernel(*on_gpu(host), check=True)
            check_outputs(fusion, host, outputs)
    assert len(kernel.device_kernel.call_state().workspaces) == 2


def test_back_to_back_kernels_see_each_others_writes():
    """Kernels launched back to back on one stream, each reading the output of the one
    before and overwriting a buffer the one before reads: with programmatic dependent
    launch, no kernel touches global memory before the previous one has completed."""
    fusion, kernel = compiled("linear_1000")
    assert kernel.device_kernel.plan.programmatic
    host_w1, host_w2 = cases.inputs_for(fusion)[1], cases.inputs_for(fusion)[1]
    w1, w2 = on_gpu([host_w1, host_w2])
    activations = [cases.inputs_for(fusion)[0] for _ in range(4)]
    on_device = on_gpu(activations)
    (y1,) = kernel(on_device[0], w1, check=True)
    torch.cuda.synchronize()
    second: list = []
    for a in on_device:
        kernel(a, w1, out=(y1,))  # overwrites what the launch before read
        second.append(kernel(y1, w2)[0])  # reads what the launch before wrote
    torch.cuda.synchronize()
    for array, got in zip(activations, second, strict=True):
        (first,) = reference(fusion, array, host_w1, accumulate=np.float64)
        check_outputs(fusion, [np.asarray(first), host_w2], [got])


def test_cuda_graph_capture_and_replay_of_a_plain_call():
    fusion, kernel = compiled("gelu_bias")
    host = cases.inputs_for(fusion)
    inputs = on_gpu(host)
    kernel(*inputs)  # warm-up outside the capture: module loaded
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (y,) = kernel(*inputs)
    for _ in range(2):
        fresh = cases.inputs_for(fusion)
        for tensor, array in zip(inputs, on_gpu(fresh), strict=True):
            tensor.copy_(array)
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check_outputs(fusion, fresh, [y])


def test_cupy_arrays_give_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    fusion, kernel = compiled("linear_f16")
    host = cases.inputs_for(fusion)
    (y,) = kernel(*(cupy.asarray(x) for x in host), check=True)
    assert isinstance(y, cupy.ndarray) and y.dtype == np.float16
    error = cases.relative_error(
        cupy.asnumpy(y), np.asarray(reference(fusion, *host, accumulate=np.float64)[0])
    )
    assert error < cases.TOLERANCE["f16"]
