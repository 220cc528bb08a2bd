"""The compile caches: a fusion compiled before is not compiled again.

`mmcomp.compile` asks `compile_cached` before it runs the pipeline:

- In memory: a compile whose fusion structure, schedule keywords and back end equal an
  earlier one's returns a new `Kernel` that shares the earlier kernel's artifact (PTX,
  launch plan, IR per stage, loaded module and launch caches) and its copy of the fusion. The
  key is `structure_key(fusion)` (every op's name, operands, result types and names,
  properties and attributes, in order, with the function's name, argument types and
  names: whatever the printed IR says, without printing it), every keyword after
  `normalize_overrides` (so `tile=[128, 128, 64]` and `tile=(128, 128, 64)` are one
  entry, and two schedules never share one) and the back end.
- On disk (cuda back end): the whole artifact, one file per key in the kernel cache
  directory (`$MMCOMP_CACHE_DIR`, else `$XDG_CACHE_HOME/mmcomp`, else `~/.cache/mmcomp`),
  beside load_module's cubins. The key adds a hash of mmcomp's own source, the ptxas that
  assembled the kernel (path, size and modification time: any other ptxas is another key),
  the target device (`sm_90a`, and mmcomp.arch.limits's model of the H200 through the source
  hash: all that compile reads of a device; the cubin the driver loads is cached by
  load_module under the device's architecture and driver version), and the xDSL and Python
  versions. A hit in a new process runs no pass and no ptxas; `kernel.stage_ir` holds the
  entry's texts (those of the hopper and ptx stages are printed again when first asked for,
  from the keywords the entry keeps: mmcomp.backend.compiled.StageTexts), and `kernel.module` is
  parsed from the materialized stage's text when first asked for.
- Entries are checksummed and written atomically (a temporary file, then a rename), so two
  processes filling one entry at once leave one whole entry; a truncated or damaged entry
  (or one that does not unpickle) is removed and rebuilt, never used.

`python -m mmcomp.cache info` shows the directory and what it holds; `... clear` empties it.
The entries are pickles: the cache directory must be writable by its user only, as for
any cache of compiled code.
"""

from __future__ import annotations

import _thread
import functools
import hashlib
import os
import pickle
import sys
import warnings
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mmcomp.runtime.cache import KernelCache, default_cache_dir

if TYPE_CHECKING:
    from mmcomp.backend.compiled import Kernel, PrintAgain
    from mmcomp.backend.kernel import CudaKernel
    from mmcomp.dialects.sched.params import ScheduleParams
    from mmcomp.frontend.builder import Fusion
    from mmcomp.ir.structure import StructureKey

FORMAT = "mmcomp-compiled-kernel-4"
"""The entry format; part of every key."""

ARTIFACT_SUFFIX = ".kernel"
"""File suffix of a compiled-kernel entry (load_module's cubins are `.cubin`)."""
SOURCE_SUFFIX = ".source"
"""File suffix of a source entry: the name of the kernel entry compiled from an IR text as
written (`compile_source_cached`)."""
AUTOTUNE_SUFFIX = ".autotune"
"""File suffix of an autotune choice (mmcomp.tuning.store)."""

TARGET = "sm_90a"
"""The architecture every cuda kernel is compiled for."""

MEMORY_ENTRIES = 512
"""Kernels kept in memory (the oldest dropped first)."""

DISK_BACKENDS = ("cuda",)
"""Back ends whose artifacts go to disk (the interp back end's is its materialized IR,
which is no cheaper to parse than to build)."""

MemoryKey = tuple[str, str, "StructureKey"]
"""(back end, keywords' text, fusion structure): the key of a kernel in memory."""

_memory: dict[MemoryKey, Kernel] = {}
_memory_by_source: dict[tuple[str, str, str], Kernel] = {}
"""Kernels by (back end, keywords' text, IR text as written): compiles given IR text."""
_lock = _thread.allocate_lock()  # threading's Lock, without importing threading
_stats = {"memory_hits": 0, "disk_hits": 0, "builds": 0}


def stats() -> dict[str, int]:
    """How compiles were served in this process: memory_hits, disk_hits, builds."""
    return dict(_stats)


def clear_memory() -> None:
    """Forget the kernels cached in memory (the disk entries stay)."""
    with _lock:
        _memory.clear()
        _memory_by_source.clear()


def artifact_store() -> KernelCache:
    """The on-disk store of compiled kernels (in the kernel cache directory, read at each use)."""
    return KernelCache(suffix=ARTIFACT_SUFFIX)


@functools.cache
def source_digest() -> str:
    """SHA-256 over the path and bytes of every Python file of the mmcomp package."""
    root = str(Path(__file__).resolve().parent)
    files: list[tuple[str, str]] = []
    folders = [root]
    while folders:  # os.scandir: a fifth of pathlib's rglob's time, on a disk hit's path
        with os.scandir(folders.pop()) as found:
            for entry in found:
                if entry.is_dir():
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    relative = entry.path[len(root) + 1 :].replace(os.sep, "/")
                    files.append((relative, entry.path))
    digest = hashlib.sha256()
    for relative, path in sorted(files, key=lambda item: item[0].split("/")):  # as Paths sort
        with open(path, "rb") as file:
            data = file.read()
        name = relative.encode()
        digest.update(len(name).to_bytes(8, "little") + name)
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def ptxas_identity() -> str:
    """The ptxas that `mmcomp.arch.ptxas` would use (`find_tool`): path, size, modification
    time; or 'none'."""
    from mmcomp.arch.tools import find_tool

    path = find_tool("ptxas")
    if path is None:
        return "none"
    try:
        info = path.stat()
    except OSError:
        return f"{path}:unreadable"
    return f"{path}:{info.st_size}:{info.st_mtime_ns}"


def _xdsl_identity() -> str:
    """The installed xDSL: the name of its distribution's metadata folder beside the package
    (`xdsl-0.75.0.dist-info`), else the package's path. `xdsl.__version__` would ask
    importlib.metadata, which costs about 25 ms, half of a disk hit's budget."""
    import xdsl

    package = Path(xdsl.__file__ or ".").resolve().parent
    try:
        names = os.listdir(package.parent)  # a glob would compile a pattern: 2 ms more
    except OSError:
        names = []
    found = sorted(n for n in names if n.startswith("xdsl-") and n.endswith(".dist-info"))
    return ",".join(found) or str(package)


def _toolchain() -> str:
    """xDSL's and Python's versions and the target (mmcomp.arch.limits, the target's model, is
    in the source digest)."""
    python = ".".join(str(part) for part in sys.version_info[:2])
    return f"xdsl {_xdsl_identity()}; python {python}; {TARGET}"


def parameters_key(params: Mapping[str, object]) -> str:
    """Every compile keyword, normalized, in a canonical text."""
    if not params:
        return "[]"  # what the normalization below gives, without importing it
    from mmcomp.schedule.heuristics import normalize_overrides

    rest = dict(params)
    schedule_m = rest.pop("schedule_m", None)
    normalized = normalize_overrides(rest)
    if schedule_m is not None:
        normalized["schedule_m"] = schedule_m
    return repr(sorted(normalized.items()))


def _keywords_key(params: Mapping[str, object]) -> str:
    """`parameters_key` of the keywords as mmcomp.pipeline.compile_untuned keys them (with
    `schedule_m` checked), without importing the checks where there is no keyword."""
    if not params:
        return parameters_key(params)
    from mmcomp.schedule.heuristics import check_schedule_m

    rest = dict(params)
    schedule_m = check_schedule_m(rest.pop("schedule_m", None))
    return parameters_key(rest if schedule_m is None else {**rest, "schedule_m": schedule_m})


def _given_keywords_key(params: Mapping[str, object]) -> str | None:
    """The keywords as given, in a canonical text, where every value is of a builtin type
    whose repr says all of it (int, bool, str, None, or a tuple or list of ints), so that a
    compile by IR text finds its kernel without importing the schedule's checks; else None.
    Keywords spelled differently (a list for a tuple) are other source entries of one
    kernel entry."""
    if not params:
        return parameters_key(params)
    for value in params.values():
        if type(value) in (tuple, list):
            items = cast("tuple[object, ...] | list[object]", value)
            if not all(type(item) is int for item in items):
                return None
        elif type(value) not in (int, bool, str, type(None)):
            return None
    return "given " + repr(sorted(params.items()))


def disk_key(text: str, backend: str, params: str) -> str:
    """The hex SHA-256 naming a compiled kernel on disk (see the module docstring)."""
    digest = hashlib.sha256()
    for part in (FORMAT, backend, text, params, source_digest(), ptxas_identity(), _toolchain()):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


def structure_key(fusion: Fusion) -> StructureKey:
    """The fusion's structure (`Fusion.structure_key`: equal exactly when the printed IR is;
    kept on the Fusion while only its own methods change it)."""
    return fusion.structure_key()


def source_key(text: str, backend: str, params: str) -> str:
    """The hex SHA-256 naming the source entry of an IR text as written: the disk key's parts
    with the text in place of the printed fusion."""
    return disk_key("source:" + text, backend, params)


def source_store() -> KernelCache:
    """The on-disk store of source entries (in the kernel cache directory)."""
    return KernelCache(suffix=SOURCE_SUFFIX)


def _share(kernel: Kernel) -> Kernel:
    """A Kernel sharing `kernel`'s artifact and its copy of the fusion (a shallow copy)."""
    shared = object.__new__(type(kernel))
    shared.__dict__.update(kernel.__dict__)
    return shared


def _remember(key: MemoryKey, kernel: Kernel) -> None:
    with _lock:
        if len(_memory) >= MEMORY_ENTRIES:
            _memory.pop(next(iter(_memory)))
        _memory[key] = kernel


def memory_hit(fusion: Fusion, backend: str, params: Mapping[str, object]) -> Kernel | None:
    """The kernel of `fusion` under `params` on `backend` if one is in memory, else None.

    A kernel is kept under keywords without `schedule_m` only for a fusion whose M is
    static, and with it only for one whose M is dynamic (equal structures agree), so a hit
    needs no look at the fusion's roles."""
    cached = _memory.get((backend, parameters_key(params), fusion.structure_key()))
    if cached is None:
        return None
    _stats["memory_hits"] += 1
    return _share(cached)


def compile_cached(
    fusion: Fusion,
    backend: str,
    params: Mapping[str, object],
    build: Callable[[], Kernel],
    print_again: PrintAgain | None = None,
) -> Kernel:
    """The kernel of `fusion` under `params` on `backend`: from memory, from disk, or built.
    A kernel from disk prints the texts its entry lacks with `print_again`."""
    params_text = parameters_key(params)
    key = (backend, params_text, fusion.structure_key())
    cached = _memory.get(key)
    if cached is not None:
        _stats["memory_hits"] += 1
        return _share(cached)
    on_disk = backend in DISK_BACKENDS
    name = disk_key(str(fusion), backend, params_text) if on_disk else ""
    if on_disk:
        loaded = load_artifact(name, fusion, print_again)
        if loaded is not None:
            _stats["disk_hits"] += 1
            _remember(key, loaded)
            return loaded
    kernel = build()
    _stats["builds"] += 1
    _remember(key, kernel)
    if on_disk:
        store_artifact(name, kernel)
    return kernel


def compile_source_cached(
    text: str,
    backend: str,
    params: Mapping[str, object],
    compile_fusion: Callable[[], Kernel],
    print_again: PrintAgain,
) -> Kernel:
    """The kernel of the fusion in the IR text `text` (as written) under `params` on
    `backend`, before parsing it: from memory by the text, else (cuda) from the kernel entry
    its source entry names, a Kernel whose fusion is parsed from the entry's when first asked
    for; else `compile_fusion()` (which parses the text and compiles the fusion, from the
    caches where they hold it), whose entry the text's source entry then names."""
    given = _given_keywords_key(params)
    lookup = given if given is not None else _keywords_key(params)
    key = (backend, lookup, text)
    cached = _memory_by_source.get(key)
    if cached is not None:
        _stats["memory_hits"] += 1
        return _share(cached)
    on_disk = backend in DISK_BACKENDS
    source = source_key(text, backend, lookup) if on_disk else ""
    if on_disk:
        named = source_store().load(source)
        entry = named.decode("ascii", "replace") if named is not None else ""
        if len(entry) == 64 and all(c in "0123456789abcdef" for c in entry):
            loaded = load_artifact(entry, None, print_again)
            if loaded is not None:
                _stats["disk_hits"] += 1
                _remember_source(key, loaded)
                return loaded
    params_text = _keywords_key(params)  # the keywords checked, as compile checks them
    kernel = compile_fusion()
    from mmcomp.backend.compiled import Kernel as Single

    if type(kernel) is not Single:  # a BucketedKernel (dynamic M): compiled per bucket
        return kernel
    _remember_source(key, kernel)
    if on_disk:
        fusion_text = kernel.stage_ir["fusion"]
        source_store().store(source, disk_key(fusion_text, backend, params_text).encode())
    return kernel


def _remember_source(key: tuple[str, str, str], kernel: Kernel) -> None:
    with _lock:
        if len(_memory_by_source) >= MEMORY_ENTRIES:
            _memory_by_source.pop(next(iter(_memory_by_source)))
        _memory_by_source[key] = kernel


def store_artifact(name: str, kernel: Kernel) -> bool:
    """Write the artifact of a cuda kernel under `name` (atomically); False if it cannot."""
    device = kernel.device_kernel
    artifact = {
        "format": FORMAT,
        "fusion": kernel.stage_ir.get("fusion", ""),
        "name": kernel.fusion.name,
        "backend": kernel.backend,
        "params": _pickled(kernel.params),
        "stage_ir": _printed(kernel.stage_ir),
        "stage_names": list(kernel.stage_ir),
        "recipe": _recipe(kernel.stage_ir),
        "ptx": device.ptx,
        "plan": _pickled(device.plan),
        "report": _pickled(device.report),
        "cubin": device.cubin,
        "num_inputs": device.num_inputs,
        "num_outputs": device.num_outputs,
        "launch": "" if device.launch_module is None else str(device.launch_module),
    }
    payload = zlib.compress(pickle.dumps(artifact, protocol=pickle.HIGHEST_PROTOCOL), 1)
    return artifact_store().store(name, payload)


def _pickled(value: object) -> bytes:
    """`value` pickled on its own: an artifact holds its classes' objects as such, unpickled
    when first used, so that loading an entry imports none of their modules."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _unpickled(artifact: Mapping[str, Any], key: str, types: tuple[type, ...]) -> Any:
    """The object pickled under `key` of an artifact, checked to be of `types`."""
    try:
        value = pickle.loads(artifact[key])
    except Exception as error:  # classes that moved, with mmcomp's source unchanged
        raise RuntimeError(
            f"mmcomp compile cache: the {key!r} of @{artifact['name']}'s entry does not "
            f"unpickle ({error}); empty the cache: python -m mmcomp.cache clear"
        ) from None
    if not isinstance(value, types):
        raise RuntimeError(
            f"mmcomp compile cache: the {key!r} of @{artifact['name']}'s entry is a "
            f"{type(value).__name__}; empty the cache: python -m mmcomp.cache clear"
        )
    return value


def _printed(stage_ir: Mapping[str, str]) -> dict[str, str]:
    """The stage texts printed so far (a StageTexts prints the lowering's when asked)."""
    from mmcomp.backend.compiled import StageTexts

    return stage_ir.printed() if isinstance(stage_ir, StageTexts) else dict(stage_ir)


def _recipe(stage_ir: Mapping[str, str]) -> dict[str, object] | None:
    """How to run the pipeline again for the texts not printed (None: all are)."""
    from mmcomp.backend.compiled import StageTexts

    recipe = stage_ir.recipe if isinstance(stage_ir, StageTexts) else None
    if recipe is None:
        return None
    return {"params": recipe.params, "schedule_m": recipe.schedule_m}


def read_artifact(path: Path) -> dict[str, Any] | None:
    """The artifact in an entry file, or None when it is missing or not a whole entry."""
    store = KernelCache(path.parent, suffix=ARTIFACT_SUFFIX)
    payload = store.load(path.name.removesuffix(ARTIFACT_SUFFIX))
    if payload is None:
        return None
    return _decode(payload)


def _required() -> dict[str, tuple[type, ...]]:
    """The keys of an artifact and the types their values may have (the params, plan and
    report are pickled on their own: `_unpickled` checks their classes when first used)."""
    return {
        "format": (str,),
        "fusion": (str,),
        "name": (str,),
        "backend": (str,),
        "params": (bytes,),
        "stage_ir": (dict,),
        "stage_names": (list,),
        "recipe": (dict, type(None)),
        "ptx": (str,),
        "plan": (bytes,),
        "report": (bytes,),
        "cubin": (bytes, type(None)),
        "num_inputs": (int,),
        "num_outputs": (int,),
        "launch": (str,),
    }


def _decode(payload: bytes) -> dict[str, Any] | None:
    """The artifact of an entry's payload; None unless it unpickles to a dict of this
    FORMAT with every key of `_required`, each of its type."""
    try:
        artifact = pickle.loads(zlib.decompress(payload))
    except Exception:  # damaged past the checksum, or classes that moved: a miss
        return None
    if not isinstance(artifact, dict):
        return None
    decoded = cast("dict[object, Any]", artifact)
    if decoded.get("format") != FORMAT:
        return None
    for key, types in _required().items():
        value = decoded.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            return None
    stage_ir = cast("dict[object, object]", decoded["stage_ir"])
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in stage_ir.items()):
        return None
    if decoded["backend"] not in DISK_BACKENDS:
        return None
    names = cast("list[object]", decoded["stage_names"])
    if not all(isinstance(name, str) for name in names):
        return None
    recipe = cast("dict[object, object] | None", decoded["recipe"])
    if recipe is not None and not (
        isinstance(recipe.get("params"), dict) and isinstance(recipe.get("schedule_m"), int | None)
    ):
        return None
    return cast("dict[str, Any]", decoded)


def load_artifact(
    name: str, fusion: Fusion | None, print_again: PrintAgain | None = None
) -> Kernel | None:
    """The Kernel stored under `name` for `fusion`, or None (a damaged entry is removed);
    `print_again` prints the stage texts the entry lacks (without it, asking for one is a
    KeyError). With no `fusion`, the kernel's is parsed from the entry's text when first
    asked for. The params, the cuda kernel (PTX, plan, report, cubin, launch module) are
    made when first used, so a load imports neither xDSL nor numpy."""
    store = artifact_store()
    payload = store.load(name)  # a wrong header or checksum: removed, with a warning
    if payload is None:
        return None
    artifact = _decode(payload)
    if artifact is None:
        path = store.path(name)
        warnings.warn(
            f"mmcomp compile cache: entry {path} does not decode; it is discarded and rebuilt",
            stacklevel=3,
        )
        path.unlink(missing_ok=True)
        return None
    from mmcomp.backend.compiled import CudaRunner, Kernel, Recipe, StageTexts

    recipe = artifact["recipe"]
    stage_ir = StageTexts(
        artifact["stage_ir"],
        artifact["stage_names"],
        None
        if recipe is None
        else Recipe(artifact["backend"], recipe["params"], recipe["schedule_m"]),
        print_again,
    )
    runner = CudaRunner(load=functools.partial(_cuda_kernel, artifact))
    if fusion is not None:
        return Kernel(fusion, artifact["backend"], _params(artifact), stage_ir, None, runner)
    return Kernel.loaded(
        functools.partial(_fusion, artifact),
        artifact["backend"],
        functools.partial(_params, artifact),
        stage_ir,
        runner,
    )


def _params(artifact: Mapping[str, Any]) -> ScheduleParams:
    """The schedule params of an artifact."""
    from mmcomp.dialects.sched.params import ScheduleParams

    return _unpickled(artifact, "params", (ScheduleParams,))


def _fusion(artifact: Mapping[str, Any]) -> Fusion:
    """The fusion of an artifact, parsed from its text."""
    from mmcomp.frontend.builder import parse

    return parse(artifact["fusion"])


def _cuda_kernel(artifact: Mapping[str, Any]) -> CudaKernel:
    """The cuda kernel of an artifact."""
    from xdsl.parser import Parser

    from mmcomp.arch.ptxas import ResourceReport
    from mmcomp.backend.kernel import CudaKernel
    from mmcomp.backend.plan import LaunchPlan
    from mmcomp.ir.registry import context

    launch = artifact.get("launch") or ""
    return CudaKernel(
        artifact["ptx"],
        _unpickled(artifact, "plan", (LaunchPlan,)),
        _unpickled(artifact, "report", (ResourceReport, type(None))),
        artifact["num_inputs"],
        artifact["num_outputs"],
        artifact["cubin"],
        launch_module=Parser(context(), launch).parse_module() if launch else None,
    )


# ----------------------------------------------------------------------------------------
# python -m mmcomp.cache info | clear
# ----------------------------------------------------------------------------------------


def _entries(directory: Path) -> dict[str, list[Path]]:
    """The files of the cache directory by kind."""
    kinds: dict[str, list[Path]] = {
        "kernels": [],
        "sources": [],
        "cubins": [],
        "autotune": [],
        "temporaries": [],
    }
    if not directory.is_dir():
        return kinds
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") and path.suffix == ".tmp":
            kinds["temporaries"].append(path)
        elif path.suffix == ARTIFACT_SUFFIX:
            kinds["kernels"].append(path)
        elif path.suffix == SOURCE_SUFFIX:
            kinds["sources"].append(path)
        elif path.suffix == ".cubin":
            kinds["cubins"].append(path)
        elif path.suffix == AUTOTUNE_SUFFIX:
            kinds["autotune"].append(path)
    return kinds


def _size(paths: list[Path]) -> str:
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return f"{total / 2**20:.1f} MiB"


def info(verbose: bool = False) -> str:
    """What the cache directory holds."""
    directory = default_cache_dir()
    kinds = _entries(directory)
    state = ""
    if directory.exists() and not directory.is_dir():
        state = " (not a directory: nothing is cached; point MMCOMP_CACHE_DIR at a directory)"
    elif not directory.is_dir():
        state = " (not created yet)"
    lines = [
        f"mmcomp cache: {directory}{state}",
        f"  compiled kernels: {len(kinds['kernels'])} ({_size(kinds['kernels'])})",
        f"  IR texts named:   {len(kinds['sources'])} ({_size(kinds['sources'])})",
        f"  cubins:           {len(kinds['cubins'])} ({_size(kinds['cubins'])})",
        f"  autotune choices: {len(kinds['autotune'])} ({_size(kinds['autotune'])})",
    ]
    if kinds["temporaries"]:
        lines.append(f"  temporaries:      {len(kinds['temporaries'])} (writes in progress)")
    if verbose:
        for path in kinds["kernels"]:
            artifact = read_artifact(path)
            if artifact is None:
                lines.append(f"    {path.name}: damaged (rebuilt at its next compile)")
                continue
            params = _params(artifact).format()
            lines.append(f"    {path.name}: @{artifact['name']} {params}")
    return "\n".join(lines)


def clear() -> int:
    """Remove every compiled kernel, cubin, autotune choice and stale temporary; how many
    files went."""
    removed = 0
    for paths in _entries(default_cache_dir()).values():
        for path in paths:
            path.unlink(missing_ok=True)
            removed += 1
    clear_memory()
    return removed


def main(argv: list[str] | None = None) -> int:
    """`python -m mmcomp.cache info [-v] | clear`."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mmcomp.cache", description="Show or empty mmcomp's kernel cache."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    shown = commands.add_parser("info", help="the directory, its kernels and cubins")
    shown.add_argument("-v", "--verbose", action="store_true", help="list every kernel")
    commands.add_parser("clear", help="remove every entry")
    args = parser.parse_args(argv)
    if args.command == "info":
        print(info(args.verbose))
        return 0
    directory = default_cache_dir()
    print(f"mmcomp cache: removed {clear()} files from {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
