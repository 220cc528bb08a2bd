"""Streams and event timing: where launches are queued, and how long kernels take.

A stream argument anywhere in the runtime may be None (the legacy default stream), a
`Stream`, a `torch.cuda.Stream` or anything with an integer `cuda_stream` / `ptr`, or a raw
`CUstream`/int handle. `time_launches(run, repeat, warmup)` times a launching callable with
CUDA events and returns per-launch milliseconds, for benchmarks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from typing import Any, cast

import numpy as np

from mmcomp.errors import LaunchError
from mmcomp.runtime.device import DEVICE, ensure_context
from mmcomp.runtime.driver import check, driver_api


class Stream:
    """A CUDA stream created by mmcomp (non-blocking with respect to the default stream)."""

    def __init__(self):
        """Create the stream on the runtime's context."""
        ensure_context()
        driver = driver_api()
        self.handle = check(
            driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING),
            "creating a stream (cuStreamCreate)",
        )
        """The driver's CUstream."""

    def synchronize(self) -> None:
        """Wait until all work queued on the stream is done."""
        check(driver_api().cuStreamSynchronize(self.handle), "waiting for a stream")

    def destroy(self) -> None:
        """Destroy the stream now (work already queued still completes)."""
        handle, self.handle = self.handle, None
        if handle is not None:
            check(driver_api().cuStreamDestroy(handle), "destroying a stream")

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is None:
            return
        self.handle = None
        with contextlib.suppress(Exception):  # interpreter shutdown
            driver_api().cuStreamDestroy(handle)


def stream_handle(stream: Any) -> Any:
    """The driver CUstream for any accepted stream value (see the module docstring)."""
    driver = driver_api()
    if stream is None:
        return driver.CUstream(0)
    if isinstance(stream, Stream):
        if stream.handle is None:
            raise LaunchError("stream: the Stream was destroyed")
        return stream.handle
    if isinstance(stream, driver.CUstream):
        return stream
    for attribute in ("cuda_stream", "ptr", "handle"):
        raw = getattr(stream, attribute, None)
        if isinstance(raw, int):
            return driver.CUstream(raw)
    if isinstance(stream, int) and not isinstance(stream, bool):
        return driver.CUstream(stream)
    raise LaunchError(
        "stream: expected None, an mmcomp Stream, a torch.cuda.Stream, a CUstream or an int "
        f"handle, found {type(stream).__name__}"
    )


class Event:
    """A CUDA event, for timing work on a stream."""

    def __init__(self):
        """Create an event that records timing."""
        ensure_context()
        driver = driver_api()
        self.handle = check(
            driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DEFAULT),
            "creating an event (cuEventCreate)",
        )
        """The driver's CUevent."""

    def record(self, stream: Any = None) -> None:
        """Record the event on `stream`."""
        check(driver_api().cuEventRecord(self.handle, stream_handle(stream)), "recording an event")

    def synchronize(self) -> None:
        """Wait until the event has completed."""
        check(driver_api().cuEventSynchronize(self.handle), "waiting for an event")

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds between this event and `end` (both recorded and complete)."""
        return float(
            check(
                driver_api().cuEventElapsedTime(self.handle, end.handle),
                "reading the time between two events",
            )
        )

    def __del__(self):
        handle = getattr(self, "handle", None)
        if handle is None:
            return
        self.handle = None
        with contextlib.suppress(Exception):  # interpreter shutdown
            driver_api().cuEventDestroy(handle)


def time_launches(
    run: Callable[[], Any], repeat: int = 20, warmup: int = 3, stream: Any = None
) -> list[float]:
    """Milliseconds of each of `repeat` calls of `run` (which launches on `stream`)."""
    if repeat < 1 or warmup < 0:
        raise ValueError(
            f"time_launches: expected repeat >= 1, warmup >= 0, found {repeat}, {warmup}"
        )
    for _ in range(warmup):
        run()
    events = [Event() for _ in range(repeat + 1)]
    events[0].record(stream)
    for index in range(repeat):
        run()
        events[index + 1].record(stream)
    events[-1].synchronize()
    return [events[i].elapsed_ms(events[i + 1]) for i in range(repeat)]


def stream_value(stream: Any, where: str) -> int:
    """The raw handle of a `stream=` argument; LaunchError for anything else.

    Accepted: a torch.cuda.Stream (its device must be mmcomp's), a cupy Stream, an mmcomp
    Stream, a CUstream, or an int handle (0 is the legacy default stream).
    """
    if isinstance(stream, bool):
        raise LaunchError(
            f"{where}: argument 'stream': expected a stream (torch.cuda.Stream, cupy Stream, "
            "mmcomp Stream, CUstream or int handle), found bool"
        )
    if isinstance(stream, int | np.integer):
        if stream < 0:
            raise LaunchError(f"{where}: argument 'stream': a negative handle {stream}")
        return int(cast("int | np.integer[Any]", stream))
    if isinstance(stream, Stream):
        if stream.handle is None:
            raise LaunchError(f"{where}: argument 'stream': the Stream was destroyed")
        return int(stream.handle)
    if isinstance(stream, driver_api().CUstream):
        return int(stream)
    raw = getattr(stream, "cuda_stream", None)
    if isinstance(raw, int):  # torch.cuda.Stream
        device = getattr(stream, "device", None)
        index = getattr(device, "index", None)
        ordinal = DEVICE
        if getattr(device, "type", "cuda") != "cuda" or (index is not None and index != ordinal):
            raise LaunchError(
                f"{where}: argument 'stream': expected a stream of CUDA device {ordinal}, "
                f"found one of {device}"
            )
        return raw
    raw = getattr(stream, "ptr", None)
    if isinstance(raw, int) and type(stream).__module__.split(".", 1)[0] == "cupy":
        return raw
    raise LaunchError(
        f"{where}: argument 'stream': expected a torch.cuda.Stream, a cupy Stream, an mmcomp "
        f"Stream, a CUstream or an int handle, found {type(stream).__name__}"
    )


def is_capturing(handle: Any) -> bool:
    """True while `handle` (a CUstream) is being captured into a CUDA graph."""
    driver = driver_api()
    status = check(driver.cuStreamIsCapturing(handle), "asking whether a stream captures")
    return status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


@contextlib.contextmanager
def relaxed_capture() -> Generator[None]:
    """Let this thread allocate and load modules while a stream captures a CUDA graph.

    Under the default (global) capture mode, cuMemAlloc and cuModuleLoadData are refused
    while any stream captures; neither touches the captured stream, so relaxed mode is safe.
    """
    driver = driver_api()
    relaxed = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
    previous = check(
        driver.cuThreadExchangeStreamCaptureMode(relaxed), "setting the stream capture mode"
    )
    try:
        yield
    finally:
        driver.cuThreadExchangeStreamCaptureMode(previous)
