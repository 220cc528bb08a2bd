"""The GPU that mmcomp runs on: driver start-up, the primary context of device 0, its facts.

Nothing here runs at import time. The first runtime call (module load, allocation, tensor
map, launch) calls `ensure_context()`, which initializes the driver, retains the primary
context of device 0 (the one torch and cupy use, so pointers interoperate) and checks that
the device is a Hopper GPU (compute capability 9.0, for sm_90a). When there is no driver,
no GPU, or another architecture, it raises one clear `LaunchError`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from mmcomp.arch.limits import COMPUTE_CAPABILITY
from mmcomp.errors import CudaError, LaunchError
from mmcomp.runtime.driver import check, driver_api, error_name

REQUIRED_COMPUTE_CAPABILITY: tuple[int, int] = COMPUTE_CAPABILITY
"""mmcomp emits sm_90a code: wgmma, TMA and setmaxnreg exist on compute capability 9.0 only."""


@dataclass(frozen=True)
class DeviceInfo:
    """Facts about the GPU that the runtime and the compiler's heuristics read."""

    ordinal: int
    """Device index in the driver's numbering."""
    name: str
    """The device's marketing name, e.g. 'NVIDIA H200'."""
    compute_capability: tuple[int, int]
    """(major, minor), (9, 0) for Hopper."""
    sm_count: int
    """Number of streaming multiprocessors."""
    max_dynamic_shared_bytes: int
    """Shared memory per block after opting in (232448 on H100/H200)."""
    driver_version: int
    """cuDriverGetVersion: 1000 * major + 10 * minor (13000 for CUDA 13.0)."""

    @property
    def arch(self) -> str:
        """The PTX target for this device, e.g. 'sm_90a'."""
        major, minor = self.compute_capability
        suffix = "a" if (major, minor) == (9, 0) else ""
        return f"sm_{major}{minor}{suffix}"

    @property
    def driver_release(self) -> tuple[int, int]:
        """The CUDA release the driver supports, (major, minor)."""
        return self.driver_version // 1000, (self.driver_version % 1000) // 10


@dataclass(frozen=True)
class Context:
    """The retained primary context of one device."""

    device: Any
    """The driver's CUdevice handle."""
    handle: Any
    """The driver's CUcontext handle."""
    info: DeviceInfo
    """Facts about the device."""


_lock = threading.Lock()
_context: Context | None = None
_current = threading.local()


def _init_driver() -> Any:
    """cuInit(0), with a LaunchError when no driver library or no GPU is present."""
    driver = driver_api()
    try:
        (result,) = driver.cuInit(0)
    except RuntimeError as error:  # cuda-python raises when libcuda.so cannot be loaded
        raise LaunchError(
            f"cannot launch: no NVIDIA driver found (libcuda could not be loaded): {error}"
        ) from error
    if result == driver.CUresult.CUDA_ERROR_NO_DEVICE:
        raise LaunchError("cannot launch: the NVIDIA driver reports no CUDA device")
    if result != driver.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"cannot launch: cuInit failed with {error_name(result)}")
    return driver


def _device_info(driver: Any, device: Any, ordinal: int) -> DeviceInfo:
    """Query the facts of `device` from the driver."""
    attribute = driver.CUdevice_attribute

    def query(attr: Any, name: str) -> int:
        return int(
            check(driver.cuDeviceGetAttribute(attr, device), f"querying the device's {name}")
        )

    raw_name = check(driver.cuDeviceGetName(256, device), "querying the device's name")
    name = raw_name.split(b"\0", 1)[0].decode() if isinstance(raw_name, bytes) else raw_name
    major = query(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability")
    minor = query(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability")
    sms = query(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count")
    smem = query(
        attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        "opt-in shared memory per block",
    )
    version = int(check(driver.cuDriverGetVersion(), "querying the driver version"))
    return DeviceInfo(ordinal, str(name), (major, minor), sms, smem, version)


DEVICE = 0
"""The CUDA device mmcomp runs on: the runtime retains device 0's primary context (the one
torch and cupy use, so their pointers are valid in mmcomp's launches)."""


def _create_context(ordinal: int = DEVICE) -> Context:
    """Initialize the driver and retain the primary context of device `ordinal`."""
    driver = _init_driver()
    count = int(check(driver.cuDeviceGetCount(), "counting CUDA devices"))
    if count == 0:
        raise LaunchError("cannot launch: the NVIDIA driver reports no CUDA device")
    device = check(driver.cuDeviceGet(ordinal), f"opening CUDA device {ordinal}")
    info = _device_info(driver, device, ordinal)
    if info.compute_capability != REQUIRED_COMPUTE_CAPABILITY:
        major, minor = info.compute_capability
        raise LaunchError(
            f"cannot launch: device {ordinal} ({info.name}) is compute capability "
            f"{major}.{minor}; mmcomp kernels need 9.0 (Hopper, sm_90a)"
        )
    handle = check(
        driver.cuDevicePrimaryCtxRetain(device), f"retaining the primary context of {info.name}"
    )
    return Context(device, handle, info)


def ensure_context() -> Context:
    """The runtime's context, created on first use and made current in the calling thread."""
    global _context
    context = _context
    if context is None:
        with _lock:
            if _context is None:
                _context = _create_context()
            context = _context
    if getattr(_current, "handle", None) is not context.handle:
        driver = driver_api()
        check(driver.cuCtxSetCurrent(context.handle), "making the primary context current")
        _current.handle = context.handle
    return context


def device_info() -> DeviceInfo:
    """Facts about the GPU (initializing the runtime if needed)."""
    return ensure_context().info


def gpu_unavailable_reason() -> str | None:
    """None when an sm_90 GPU can run mmcomp kernels here; otherwise the reason why not."""
    try:
        ensure_context()
    except (LaunchError, CudaError) as error:
        return str(error)
    return None


def synchronize() -> None:
    """Wait for all work on the device (cuCtxSynchronize)."""
    ensure_context()
    check(driver_api().cuCtxSynchronize(), "waiting for the device to finish (cuCtxSynchronize)")
