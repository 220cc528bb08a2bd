"""Loading PTX as a GPU module: compile to a cubin (ptxas or the driver's JIT), cache, load.

`load_module(ptx, options)` compiles the PTX to a cubin, through the ptxas that mmcomp finds
(`mmcomp.arch.ptxas`) when that ptxas is not newer than the driver (a newer one emits cubins the
driver may reject), otherwise through the driver's own JIT (cuLink*, which also yields a
cubin). The cubin is kept in the on-disk kernel cache, keyed by the PTX, the options, the
GPU architecture and the driver version, so that a second load skips compilation. The
cubin is then loaded with cuModuleLoadData and its kernels are reached by
`Module.function(name)`.
"""

from __future__ import annotations

import ctypes
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from mmcomp.errors import CudaError, LaunchError
from mmcomp.runtime.cache import KernelCache, cache_key
from mmcomp.runtime.device import DeviceInfo, ensure_context
from mmcomp.runtime.driver import check, driver_api, error_name

Compiler = Literal["auto", "ptxas", "driver"]
"""Which compiler turns PTX into a cubin: ptxas, the driver's JIT, or the best available."""

_COMPILERS = ("auto", "ptxas", "driver")
_JIT_LOG_BYTES = 1 << 16


@dataclass(frozen=True)
class LoadOptions:
    """How PTX is compiled to a cubin; part of the kernel-cache key."""

    compiler: Compiler = "auto"
    """'ptxas', 'driver' (JIT), or 'auto': ptxas when it is not newer than the driver."""
    opt_level: int = 3
    """Optimization level of the PTX-to-SASS compiler, 0 to 4."""
    max_registers: int | None = None
    """A register cap per thread (ptxas --maxrregcount), or None for the PTX's own."""

    def __post_init__(self):
        if self.compiler not in _COMPILERS:
            raise ValueError(
                f"LoadOptions.compiler: expected one of {_COMPILERS}, found {self.compiler!r}"
            )
        if not 0 <= self.opt_level <= 4:
            raise ValueError(f"LoadOptions.opt_level: expected 0 to 4, found {self.opt_level}")
        if self.max_registers is not None and not 16 <= self.max_registers <= 255:
            raise ValueError(
                f"LoadOptions.max_registers: expected 16 to 255, found {self.max_registers}"
            )

    def cache_text(self) -> str:
        """The options as text for the cache key (the compiler choice is resolved first)."""
        return f"opt_level={self.opt_level};max_registers={self.max_registers}"


@dataclass(frozen=True)
class CompiledKernel:
    """A cubin and where it came from."""

    cubin: bytes
    """The compiled image, as loaded by cuModuleLoadData."""
    compiler: str
    """Who compiled it, e.g. 'ptxas 13.0' or 'driver JIT 13.0'."""
    cache_hit: bool
    """True when it was read from the kernel cache rather than compiled now."""
    key: str
    """The kernel-cache key."""


@dataclass(frozen=True)
class PtxasTool:
    """A ptxas that can compile for the driver, and its CUDA release."""

    path: str
    """The ptxas executable."""
    release: tuple[int, int]
    """Its CUDA release, (major, minor)."""


def find_compatible_ptxas(driver_release: tuple[int, int]) -> PtxasTool | None:
    """The ptxas that mmcomp.arch.ptxas finds, when it is not newer than the driver; else None."""
    try:
        ptxas = importlib.import_module("mmcomp.arch.ptxas")
        path = str(ptxas.find_ptxas())
        release = tuple(ptxas.ptxas_version(path))
    except Exception:  # no ptxas, or one that cannot run: the driver's JIT compiles instead
        return None
    major, minor = int(release[0]), int(release[1])
    if (major, minor) > driver_release:
        return None
    return PtxasTool(path, (major, minor))


def compile_with_ptxas(ptx: str, options: LoadOptions, arch: str, tool: PtxasTool) -> bytes:
    """Assemble `ptx` for `arch` with mmcomp.arch.ptxas.assemble; a failure is a LaunchError."""
    ptxas = importlib.import_module("mmcomp.arch.ptxas")
    extra: list[str] = [f"-O{options.opt_level}"]
    if options.max_registers is not None:
        extra.append(f"--maxrregcount={options.max_registers}")
    try:
        assembled = ptxas.assemble(ptx, arch=arch, extra=extra)
    except Exception as error:
        raise LaunchError(f"ptxas ({tool.path}) failed to assemble the kernel: {error}") from error
    return bytes(assembled.cubin)


def compile_with_driver(ptx: str, options: LoadOptions) -> bytes:
    """Compile `ptx` to a cubin with the driver's JIT (cuLinkCreate/AddData/Complete)."""
    driver = driver_api()
    ensure_context()
    error_log = bytearray(_JIT_LOG_BYTES)
    jit = driver.CUjit_option
    keys = [
        jit.CU_JIT_ERROR_LOG_BUFFER,
        jit.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        jit.CU_JIT_OPTIMIZATION_LEVEL,
    ]
    values: list[Any] = [error_log, len(error_log), options.opt_level]
    if options.max_registers is not None:
        keys.append(jit.CU_JIT_MAX_REGISTERS)
        values.append(options.max_registers)
    state = check(
        driver.cuLinkCreate(len(keys), keys, values), "creating a JIT link (cuLinkCreate)"
    )
    try:
        image = ptx.encode() + b"\0"
        result = driver.cuLinkAddData(
            state,
            driver.CUjitInputType.CU_JIT_INPUT_PTX,
            image,
            len(image),
            b"mmcomp.ptx",
            0,
            None,
            None,
        )
        _check_jit(result, "JIT-compiling PTX (cuLinkAddData)", error_log)
        returned = driver.cuLinkComplete(state)
        _check_jit(returned[0], "JIT-linking the kernel (cuLinkComplete)", error_log)
        pointer, size = returned[1], returned[2]
        return ctypes.string_at(int(pointer), int(size))
    finally:
        driver.cuLinkDestroy(state)


def _check_jit(result: Any, what: str, error_log: bytearray) -> None:
    """CudaError with the JIT's error log when a cuLink call failed."""
    if isinstance(result, tuple):
        result = cast("tuple[Any, ...]", result)[0]
    if result == driver_api().CUresult.CUDA_SUCCESS:
        return
    log = bytes(error_log).split(b"\0", 1)[0].decode(errors="replace").strip()
    raise CudaError(what, error_name(result), log)


def compile_ptx(ptx: str, options: LoadOptions, info: DeviceInfo) -> tuple[bytes, str]:
    """(cubin, compiler description) for `ptx` on the device `info` describes."""
    if options.compiler != "driver":
        tool = find_compatible_ptxas(info.driver_release)
        if tool is not None:
            major, minor = tool.release
            return compile_with_ptxas(ptx, options, info.arch, tool), f"ptxas {major}.{minor}"
        if options.compiler == "ptxas":
            major, minor = info.driver_release
            raise LaunchError(
                f"LoadOptions.compiler='ptxas': no ptxas of CUDA {major}.{minor} or older was "
                "found (a newer ptxas emits cubins this driver may reject); use 'auto'"
            )
    major, minor = info.driver_release
    return compile_with_driver(ptx, options), f"driver JIT {major}.{minor}"


def build_cubin(
    ptx: str,
    options: LoadOptions,
    *,
    arch: str,
    driver_version: int,
    compile: Callable[[], tuple[bytes, str]],
    cache: KernelCache | None,
) -> CompiledKernel:
    """The cubin for `ptx`: from `cache` when present there, else from `compile()` (stored)."""
    key = cache_key(ptx, options.cache_text(), arch, driver_version)
    if cache is not None:
        stored = cache.load(key)
        if stored is not None:
            return CompiledKernel(stored, "kernel cache", True, key)
    cubin, compiler = compile()
    if cache is not None:
        cache.store(key, cubin)
    return CompiledKernel(cubin, compiler, False, key)


_DEFAULT_CACHE = KernelCache()


@dataclass(eq=False)
class Function:
    """A kernel of a loaded module."""

    module: Module
    """The module that holds the kernel (kept alive by the function)."""
    name: str
    """The kernel's `.entry` name."""
    handle: Any
    """The driver's CUfunction."""
    max_dynamic_shared_bytes: int = 0
    """The dynamic shared memory limit set so far (see `set_max_dynamic_shared_bytes`)."""
    parameter_sizes: list[int] | None = None
    """Bytes of each parameter, from the PTX's `.entry` declaration (None: not known)."""

    def attribute(self, attribute: Any) -> int:
        """cuFuncGetAttribute for a CUfunction_attribute."""
        return int(
            check(
                driver_api().cuFuncGetAttribute(attribute, self.handle),
                f"reading attribute {getattr(attribute, 'name', attribute)} of kernel {self.name}",
            )
        )

    @property
    def num_registers(self) -> int:
        """Registers per thread of the compiled kernel."""
        return self.attribute(driver_api().CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS)

    @property
    def local_bytes(self) -> int:
        """Local memory per thread (spills and stack)."""
        return self.attribute(driver_api().CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    def set_max_dynamic_shared_bytes(self, nbytes: int) -> None:
        """Raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to `nbytes`."""
        limit = self.module.device.max_dynamic_shared_bytes
        if not 0 <= nbytes <= limit:
            raise LaunchError(
                f"kernel {self.name}: {nbytes} bytes of dynamic shared memory requested, "
                f"the device allows at most {limit}"
            )
        if nbytes == self.max_dynamic_shared_bytes:
            return
        driver = driver_api()
        check(
            driver.cuFuncSetAttribute(
                self.handle,
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                nbytes,
            ),
            f"raising the dynamic shared memory limit of kernel {self.name} to {nbytes} bytes",
        )
        self.max_dynamic_shared_bytes = nbytes


@dataclass(eq=False)
class Module:
    """A loaded GPU module (cuModuleLoadData of a cubin)."""

    handle: Any
    """The driver's CUmodule."""
    compiled: CompiledKernel
    """The cubin and where it came from."""
    device: DeviceInfo
    """The device it is loaded on."""
    parameters: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    """Each `.entry`'s parameter sizes in bytes, read from the PTX."""
    _functions: dict[str, Function] = field(default_factory=dict[str, Function])

    def function(self, name: str) -> Function:
        """The kernel `name` (an `.entry` of the PTX)."""
        found = self._functions.get(name)
        if found is not None:
            return found
        driver = driver_api()
        result, handle = driver.cuModuleGetFunction(self.handle, name.encode())
        if result == driver.CUresult.CUDA_ERROR_NOT_FOUND:
            raise LaunchError(f"the module has no kernel named {name!r}")
        check((result,), f"looking up kernel {name!r} (cuModuleGetFunction)")
        function = Function(self, name, handle, parameter_sizes=self.parameters.get(name))
        self._functions[name] = function
        return function

    def unload(self) -> None:
        """Unload the module; its functions must not be launched afterwards."""
        if self.handle is None:
            return
        check(driver_api().cuModuleUnload(self.handle), "unloading a module (cuModuleUnload)")
        self.handle = None
        self._functions.clear()


def load_module(
    ptx: str, options: LoadOptions | None = None, *, cache: KernelCache | None = _DEFAULT_CACHE
) -> Module:
    """Compile (or fetch from the kernel cache) and load `ptx`; `cache=None` disables caching."""
    if not isinstance(ptx, str) or ".entry" not in ptx:
        raise LaunchError("load_module: expected PTX text with at least one .entry kernel")
    options = options or LoadOptions()
    context = ensure_context()
    info = context.info
    compiled = build_cubin(
        ptx,
        options,
        arch=info.arch,
        driver_version=info.driver_version,
        compile=lambda: compile_ptx(ptx, options, info),
        cache=cache,
    )
    driver = driver_api()
    result, handle = driver.cuModuleLoadData(compiled.cubin)
    if result != driver.CUresult.CUDA_SUCCESS and compiled.cache_hit and cache is not None:
        # A stale or damaged cubin that passed the checksum: rebuild it once.
        cache.path(compiled.key).unlink(missing_ok=True)
        return load_module(ptx, options, cache=cache)
    check((result,), f"loading a {compiled.compiler} cubin (cuModuleLoadData)")
    return Module(handle, compiled, info, entry_parameter_sizes(ptx))


_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)")
"""A kernel's `.entry NAME( ... )` declaration in PTX text."""
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.([a-z]\d+)\s+[\w$%]+(?:\[(\d+)\])?")
"""One `.param [.align N] .TYPE NAME[COUNT]` declaration."""


def entry_parameter_sizes(ptx: str) -> dict[str, list[int]]:
    """The byte size of each parameter of each `.entry` in PTX text (the driver of some
    versions cannot say, and asking it past the last one is a failed call)."""
    sizes: dict[str, list[int]] = {}
    for entry in _ENTRY.finditer(ptx):
        params: list[int] = []
        for param in _PARAM.finditer(entry.group(2)):
            bits = int(param.group(1)[1:])
            params.append(bits // 8 * int(param.group(2) or 1))
        sizes[entry.group(1)] = params
    return sizes
