"""Lint (ruff), type-check (pyright) and check the import layers (import-linter) of the code
base, as xDSL's CI does; and count the import cycles among mmcomp's modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    # This checkout's mmcomp, whatever the environment has installed (lint-imports imports it).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize(
    "command",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff(command: tuple[str, ...]):
    result = _run(str(BIN / command[0]), *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyright():
    result = _run(str(BIN / "pyright"))
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]


def test_import_layers():
    """The layer contract of pyproject.toml ([tool.importlinter]) holds: no module imports a
    layer above its own (docs/architecture.md, "Layers")."""
    result = _run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]


def import_cycles(package: str) -> list[list[str]]:
    """The import cycles among the modules of `package`: each strongly connected component
    of its import graph with more than one module (or a module importing itself), every
    import counted (function-level and TYPE_CHECKING ones too), sorted."""
    import grimp  # import-linter's graph library, in the dev extra (not on the GPU hosts)

    graph = grimp.build_graph(package, cache_dir=None)
    imports = {
        module: sorted(graph.find_modules_directly_imported_by(module))
        for module in sorted(graph.modules)
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in imports:
        if root in index:
            continue
        work = [(root, 0)]
        while work:  # Tarjan's algorithm, iteratively
            module, position = work.pop()
            if position == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            targets = imports[module]
            while position < len(targets) and targets[position] in index:
                target = targets[position]
                if target in on_stack:
                    low[module] = min(low[module], index[target])
                position += 1
            if position < len(targets):
                work.append((module, position + 1))
                work.append((targets[position], 0))
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1 or module in imports[module]:
                    cycles.append(sorted(component))
    return sorted(cycles)


def test_import_cycles_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The count sees a cycle held by a function-level import, and one held by a
    TYPE_CHECKING import; modules that import only downward are no cycle."""
    package = tmp_path / "cycles_example"
    package.mkdir()
    modules = {
        "__init__": "",
        "low": "VALUE = 1\n",
        "high": "from cycles_example.low import VALUE\n",
        "a": "from cycles_example import b\n",
        "b": "def f():\n    from cycles_example import a\n",
        "c": "from cycles_example.d import D\n",
        "d": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from cycles_example.c import C\n"
            "class D: ...\n"
        ),
    }
    for name, text in modules.items():
        (package / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cycles_example") == [
        ["cycles_example.a", "cycles_example.b"],
        ["cycles_example.c", "cycles_example.d"],
    ]


def test_no_import_cycles():
    """No import cycles among mmcomp's modules (function-level and TYPE_CHECKING imports
    included): a shared piece lives below the modules that use it."""
    assert import_cycles("mmcomp") == []


def test_root_modules_and_module_sizes():
    """At most 8 modules at the root of mmcomp/; a module of more than 800 lines is named,
    with its reason, in docs/architecture.md ("Module sizes")."""
    package = ROOT / "mmcomp"
    assert len(list(package.glob("*.py"))) <= 8, sorted(p.name for p in package.glob("*.py"))
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    sizes = architecture[architecture.index("## Module sizes") :]
    long = [
        str(path.relative_to(ROOT))
        for path in sorted([*package.rglob("*.py"), *(ROOT / "tools").glob("*.py")])
        if len(path.read_text().splitlines()) > 800
    ]
    assert [path for path in long if path not in sizes] == []
