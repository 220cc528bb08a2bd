"""The on-disk kernel cache: a hit skips compilation, corrupt entries are rebuilt, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mmcomp.runtime import cache as cache_module
from mmcomp.runtime.cache import KernelCache, cache_key, default_cache_dir
from mmcomp.runtime.module import LoadOptions, build_cubin

PTX = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n"


class CountingCompiler:
    """A stand-in for ptxas / the driver JIT that counts its calls."""

    def __init__(self, cubin: bytes = b"\x7fELF fake cubin"):
        self.cubin = cubin
        self.calls = 0

    def __call__(self) -> tuple[bytes, str]:
        self.calls += 1
        return self.cubin, "fake compiler"


def build(cache: KernelCache | None, compiler: CountingCompiler, **overrides: Any):
    """build_cubin for PTX on a fake sm_90a device with driver 13.0."""
    return build_cubin(
        overrides.get("ptx", PTX),
        overrides.get("options", LoadOptions()),
        arch=overrides.get("arch", "sm_90a"),
        driver_version=overrides.get("driver_version", 13000),
        compile=compiler,
        cache=cache,
    )


def test_a_hit_skips_compilation(tmp_path):
    cache, compiler = KernelCache(tmp_path), CountingCompiler()
    first = build(cache, compiler)
    second = build(cache, compiler)
    assert compiler.calls == 1
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert second.cubin == first.cubin == compiler.cubin
    assert first.compiler == "fake compiler"
    assert second.key == first.key


def test_without_a_cache_every_build_compiles():
    compiler = CountingCompiler()
    build(None, compiler)
    build(None, compiler)
    assert compiler.calls == 2


@pytest.mark.parametrize(
    "change",
    [
        dict(ptx=PTX.replace("k()", "k2()")),
        dict(options=LoadOptions(opt_level=1)),
        dict(options=LoadOptions(max_registers=168)),
        dict(arch="sm_100a"),
        dict(driver_version=13010),
    ],
)
def test_the_key_covers_ptx_options_arch_and_driver(tmp_path, change):
    cache, compiler = KernelCache(tmp_path), CountingCompiler()
    build(cache, compiler)
    rebuilt = build(cache, compiler, **change)
    assert compiler.calls == 2
    assert not rebuilt.cache_hit
    assert len(list(tmp_path.glob("*.cubin"))) == 2


def test_compiler_choice_is_not_part_of_the_key():
    text = LoadOptions(compiler="driver").cache_text()
    assert text == LoadOptions(compiler="ptxas").cache_text()


def test_key_is_unambiguous():
    assert cache_key("ab", "c", "sm_90a", 1) != cache_key("a", "bc", "sm_90a", 1)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-3],  # truncated
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one bit flipped in the payload
        lambda data: b"garbage" + data,  # bad header
        lambda data: b"",  # empty file
    ],
)
def test_a_corrupt_entry_is_rebuilt(tmp_path, damage):
    cache, compiler = KernelCache(tmp_path), CountingCompiler()
    first = build(cache, compiler)
    path = cache.path(first.key)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.warns(UserWarning, match="corrupt entry"):
        rebuilt = build(cache, compiler)
    assert compiler.calls == 2
    assert not rebuilt.cache_hit
    assert rebuilt.cubin == compiler.cubin
    assert build(cache, compiler).cache_hit  # the rebuilt entry is good again
    assert compiler.calls == 2


def test_mmcomp_cache_dir_overrides_the_location(tmp_path, monkeypatch):
    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path / "override"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "override"
    cache, compiler = KernelCache(), CountingCompiler()
    result = build(cache, compiler)
    assert (tmp_path / "override" / f"{result.key}.cubin").is_file()
    assert not (tmp_path / "xdg").exists()


def test_default_location_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv("MMCOMP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "mmcomp"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "mmcomp"


def test_write_is_atomic_temp_file_then_rename(tmp_path, monkeypatch):
    cache = KernelCache(tmp_path)
    key = cache_key(PTX, "", "sm_90a", 13000)
    assert cache.store(key, b"old")
    renames: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def failing_replace(source, target):
        renames.append((Path(source), Path(target)))
        assert Path(source).parent == tmp_path  # the temp file lives beside the entry
        assert Path(source).read_bytes().endswith(b"new")  # and is complete before the rename
        raise OSError("disk vanished")

    monkeypatch.setattr(cache_module.os, "replace", failing_replace)
    with pytest.warns(UserWarning, match="cannot write"):
        assert not cache.store(key, b"new")
    assert renames and renames[0][1] == cache.path(key)
    assert cache.load(key) == b"old"  # the old entry is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{key}.cubin"]  # no temp left
    monkeypatch.setattr(cache_module.os, "replace", real_replace)
    assert cache.store(key, b"new")
    assert cache.load(key) == b"new"


def test_an_unwritable_cache_is_not_fatal(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache, compiler = KernelCache(blocker / "cache"), CountingCompiler()
    with pytest.warns(UserWarning, match="cannot write"):
        result = build(cache, compiler)
    assert result.cubin == compiler.cubin


def test_keys_must_be_hex(tmp_path):
    with pytest.raises(ValueError, match="lowercase hex digest"):
        KernelCache(tmp_path).path("../escape")


def test_clear(tmp_path):
    cache, compiler = KernelCache(tmp_path), CountingCompiler()
    build(cache, compiler)
    assert cache.clear() == 1
    assert not build(cache, compiler).cache_hit
