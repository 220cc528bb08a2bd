"""Assemble PTX with ptxas, read its resource report, and look at the SASS with nvdisasm.

    from mmcomp.arch.ptxas import assemble, check_no_spills, sass_has
    result = assemble(ptx_text)              # sm_90a, -v
    check_no_spills(result)                  # raises PtxasError naming the entry
    result.resources["gemm"].registers       # per-entry ResourceReport
    sass_has(result.cubin, "HGMMA")          # needs nvdisasm

ptxas is found on PATH, then under $CUDA_HOME/bin, then in the nvidia-cuda-nvcc wheel
(site-packages/nvidia/cu13/bin/ptxas); nvdisasm likewise (nvidia-cuda-nvdisasm wheel).
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mmcomp.arch.tools import find_tool


class PtxasError(RuntimeError):
    """ptxas (or nvdisasm) is missing, failed, or reported something a check forbids."""


@dataclass(frozen=True)
class ResourceReport:
    """What `ptxas -v` reports for one entry."""

    entry: str
    """The entry (kernel) name."""
    registers: int = 0
    """Registers per thread."""
    spill_stores: int = 0
    """Bytes of spill stores."""
    spill_loads: int = 0
    """Bytes of spill loads."""
    stack_frame: int = 0
    """Bytes of stack frame."""
    shared_memory: int = 0
    """Bytes of static shared memory (dynamic shared memory is sized at launch)."""
    barriers: int = 0
    """Named barriers used."""

    @property
    def spills(self) -> int:
        """Spill stores plus spill loads, in bytes."""
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True)
class Assembled:
    """The result of assembling a PTX module."""

    cubin: bytes
    """The cubin (ELF) ptxas wrote."""
    resources: dict[str, ResourceReport] = field(default_factory=dict[str, ResourceReport])
    """Resource report per entry name."""
    log: str = ""
    """ptxas's verbose output (stderr and stdout)."""
    arch: str = "sm_90a"
    """The architecture assembled for."""


def _require_tool(name: str, wheel: str) -> Path:
    path = find_tool(name)
    if path is None:
        raise PtxasError(
            f"{name} not found: looked on PATH, in $CUDA_HOME/bin and in the {wheel} wheel "
            f"(pip install {wheel})"
        )
    return path


def find_ptxas() -> Path:
    """The ptxas to use; raises PtxasError if there is none."""
    return _require_tool("ptxas", "nvidia-cuda-nvcc")


def find_nvdisasm() -> Path:
    """The nvdisasm to use; raises PtxasError if there is none."""
    return _require_tool("nvdisasm", "nvidia-cuda-nvdisasm")


@functools.cache
def ptxas_version(path: str | None = None) -> tuple[int, int]:
    """The (major, minor) CUDA release of ptxas, e.g. (13, 0)."""
    import subprocess

    tool = path or str(find_ptxas())
    output = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"release (\d+)\.(\d+)", output)
    if match is None:
        raise PtxasError(f"cannot read the version of {tool}: {output.strip()!r}")
    return int(match.group(1)), int(match.group(2))


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FUNCTION = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_resource_report(log: str) -> dict[str, ResourceReport]:
    """Parse `ptxas -v` output into a ResourceReport per entry."""
    fields: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in log.splitlines():
        if match := _ENTRY.search(line) or _FUNCTION.search(line):
            current = str(match.group(1))
            fields.setdefault(current, {})
            continue
        if current is None:
            continue
        entry = fields[current]
        if match := _FRAME.search(line):
            entry["stack_frame"] = int(match.group(1))
            entry["spill_stores"] = int(match.group(2))
            entry["spill_loads"] = int(match.group(3))
        if match := _USED.search(line):
            entry["registers"] = int(match.group(1))
            if barriers := _BARRIERS.search(line):
                entry["barriers"] = int(barriers.group(1))
            if smem := _SMEM.search(line):
                entry["shared_memory"] = int(smem.group(1))
    return {name: ResourceReport(name, **values) for name, values in fields.items()}


def _error_context(message: str, ptx: str) -> str:
    """ptxas's message plus the PTX lines it names."""
    lines = ptx.splitlines()
    shown: list[str] = []
    for match in re.finditer(r"line (\d+)", message):
        number = int(match.group(1))
        if 1 <= number <= len(lines):
            shown.append(f"  line {number}: {lines[number - 1].strip()}")
    return message.strip() + ("\n" + "\n".join(dict.fromkeys(shown)) if shown else "")


def assemble(ptx: str, arch: str = "sm_90a", extra: Sequence[str] = ()) -> Assembled:
    """Assemble PTX text with `ptxas -arch=ARCH -v`; return the cubin and resource report.

    Raises PtxasError with ptxas's message and the offending PTX line when assembly fails.
    """
    import subprocess
    import tempfile

    tool = find_ptxas()
    with tempfile.TemporaryDirectory(prefix="mmcomp-ptxas-") as tmp:
        source = Path(tmp) / "kernel.ptx"
        target = Path(tmp) / "kernel.cubin"
        source.write_text(ptx)
        command = [str(tool), f"-arch={arch}", "-v", *extra, str(source), "-o", str(target)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        log = result.stderr + result.stdout
        if result.returncode != 0:
            raise PtxasError(
                f"ptxas -arch={arch} failed (exit {result.returncode}):\n"
                + _error_context(log, ptx)
            )
        cubin = target.read_bytes()
    return Assembled(cubin=cubin, resources=parse_resource_report(log), log=log, arch=arch)


def spill_message(report: ResourceReport) -> str | None:
    """What an entry spills ("entry 'e' spills: ..."), or None for an entry that does not
    spill and has no stack frame."""
    if not report.spills and not report.stack_frame:
        return None
    return (
        f"entry '{report.entry}' spills: {report.spill_stores} bytes spill stores, "
        f"{report.spill_loads} bytes spill loads, {report.stack_frame} bytes stack "
        f"frame ({report.registers} registers)"
    )


def check_no_spills(assembled: Assembled, max_registers: int | None = None) -> None:
    """Raise PtxasError if any entry spills, uses a stack frame, or exceeds `max_registers`."""
    if not assembled.resources:
        raise PtxasError("ptxas reported no entries: nothing to check\n" + assembled.log)
    for report in assembled.resources.values():
        message = spill_message(report)
        if message is not None:
            raise PtxasError(message)
        if max_registers is not None and report.registers > max_registers:
            raise PtxasError(
                f"entry '{report.entry}' uses {report.registers} registers, more than the "
                f"budget of {max_registers}"
            )


def assemble_checked(
    ptx: str, arch: str = "sm_90a", extra: Sequence[str] = (), max_registers: int | None = None
) -> Assembled:
    """Assemble and require 0 spill bytes (and at most `max_registers`): what tests call."""
    assembled = assemble(ptx, arch, extra)
    check_no_spills(assembled, max_registers)
    return assembled


def disassemble(cubin: bytes) -> str:
    """The SASS of a cubin, by nvdisasm."""
    import subprocess
    import tempfile

    tool = find_nvdisasm()
    with tempfile.TemporaryDirectory(prefix="mmcomp-nvdisasm-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        result = subprocess.run(
            [str(tool), "-c", str(path)], capture_output=True, text=True, timeout=600
        )
    if result.returncode != 0:
        raise PtxasError(f"nvdisasm failed (exit {result.returncode}): {result.stderr.strip()}")
    return result.stdout


def sass_has(cubin: bytes, pattern: str) -> bool:
    """Whether the SASS contains an instruction matching `pattern` (a regex, e.g. HGMMA)."""
    return re.search(pattern, disassemble(cubin)) is not None


def sass_count(cubin: bytes, pattern: str) -> int:
    """How many SASS lines match `pattern`."""
    regex = re.compile(pattern)
    return sum(1 for line in disassemble(cubin).splitlines() if regex.search(line))


LOCAL_MEMORY = r"\b(LDL|STL)\b"
"""SASS pattern of local-memory accesses (spills, stack arrays)."""


def check_sass(cubin: bytes, present: Sequence[str] = (), absent: Sequence[str] = ()) -> str:
    """Raise PtxasError unless each `present` pattern is in the SASS and no `absent` one is.

    Returns the SASS.
    """
    sass = disassemble(cubin)
    for pattern in present:
        if re.search(pattern, sass) is None:
            raise PtxasError(f"SASS check: expected /{pattern}/ in the SASS, not found")
    for pattern in absent:
        match = re.search(pattern, sass)
        if match is not None:
            line = sass[: match.start()].count("\n") + 1
            raise PtxasError(
                f"SASS check: /{pattern}/ must not be in the SASS, found at line {line}: "
                f"{sass.splitlines()[line - 1].strip()}"
            )
    return sass


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m mmcomp.arch.ptxas FILE.ptx|-`: assemble, print the report, fail on spills."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mmcomp.arch.ptxas",
        description="Assemble PTX with ptxas, print the resource report per entry, and fail "
        "if any entry spills (or misses a required SASS instruction).",
    )
    parser.add_argument("file", help="PTX file, or - for standard input")
    parser.add_argument("--arch", default="sm_90a", help="target architecture (sm_90a)")
    parser.add_argument("--max-registers", type=int, default=None, help="register budget")
    parser.add_argument(
        "--sass", action="append", default=[], help="regex that must be in the SASS (HGMMA)"
    )
    parser.add_argument(
        "--no-sass", action="append", default=[], help="regex that must not be in the SASS"
    )
    args = parser.parse_args(argv)
    try:
        ptx = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    except OSError as error:
        parser.error(f"cannot read {args.file}: {error.strerror}")
    try:
        assembled = assemble(ptx, args.arch)
        for report in assembled.resources.values():
            print(
                f"{report.entry}: {report.registers} registers, {report.spill_stores} bytes "
                f"spill stores, {report.spill_loads} bytes spill loads, {report.stack_frame} "
                f"bytes stack, {report.shared_memory} bytes smem, {report.barriers} barriers"
            )
        check_no_spills(assembled, args.max_registers)
        if args.sass or args.no_sass:
            check_sass(assembled.cubin, args.sass, args.no_sass)
    except PtxasError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
