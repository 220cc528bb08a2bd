"""The on-disk kernel cache: compiled cubins keyed by PTX, options, GPU architecture and driver.

Location: `$MMCOMP_CACHE_DIR` when set, else `$XDG_CACHE_HOME/mmcomp`, else
`~/.cache/mmcomp`. Each entry is one file `<key>.cubin` holding a small header (a magic
string and the SHA-256 of the payload) followed by the payload. Writes go to a temporary
file in the same directory, which is then renamed over the entry (`os.replace`), so a
reader never sees half an entry. An entry whose header or checksum does not match is
treated as a miss, removed and rebuilt; a cache directory that cannot be written is not
fatal either (the artifact is then simply not stored).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path

CACHE_DIR_VARIABLE = "MMCOMP_CACHE_DIR"
"""The environment variable that overrides the cache directory."""

_MAGIC = b"MMCOMP-KERNEL-CACHE-1\n"
_DIGEST_SIZE = hashlib.sha256().digest_size


def default_cache_dir() -> Path:
    """The cache directory: $MMCOMP_CACHE_DIR, else $XDG_CACHE_HOME/mmcomp, else ~/.cache/mmcomp."""
    override = os.environ.get(CACHE_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "mmcomp"
    return Path.home() / ".cache" / "mmcomp"


def cache_key(ptx: str, options: str, arch: str, driver_version: int) -> str:
    """The hex SHA-256 that names a compiled kernel: PTX text, options, GPU arch, driver."""
    digest = hashlib.sha256()
    for part in (ptx, options, arch, str(driver_version)):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


class KernelCache:
    """A directory of compiled kernels, one checksummed file per key."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, suffix: str = ".cubin"):
        """A cache in `directory`, or in `default_cache_dir()` (read at each use) when None;
        its entries are `<key><suffix>` files."""
        self._directory = None if directory is None else Path(directory)
        self.suffix = suffix
        """The file suffix of the entries."""

    @property
    def directory(self) -> Path:
        """The directory that holds the entries."""
        return self._directory if self._directory is not None else default_cache_dir()

    def path(self, key: str) -> Path:
        """The file of the entry `key`."""
        if not key or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"kernel cache key must be a lowercase hex digest, found {key!r}")
        return self.directory / f"{key}{self.suffix}"

    def load(self, key: str) -> bytes | None:
        """The stored payload of `key`, or None on a miss; a corrupt entry is removed."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            warnings.warn(f"mmcomp kernel cache: cannot read {path}: {error}", stacklevel=2)
            return None
        payload = _unpack(data)
        if payload is None:
            warnings.warn(
                f"mmcomp kernel cache: corrupt entry {path} is discarded and rebuilt",
                stacklevel=2,
            )
            path.unlink(missing_ok=True)
        return payload

    def store(self, key: str, payload: bytes) -> bool:
        """Write `payload` under `key` atomically; False (with a warning) if it cannot."""
        import tempfile  # imported by a write only: a disk hit reads

        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(
                prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent
            )
        except OSError as error:
            warnings.warn(f"mmcomp kernel cache: cannot write {path}: {error}", stacklevel=2)
            return False
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(_pack(payload))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except OSError as error:
            Path(temporary).unlink(missing_ok=True)
            warnings.warn(f"mmcomp kernel cache: cannot write {path}: {error}", stacklevel=2)
            return False
        return True

    def get_or_build(self, key: str, build: Callable[[], bytes]) -> tuple[bytes, bool]:
        """(payload, hit): the stored payload of `key`, or `build()`'s, stored for next time."""
        payload = self.load(key)
        if payload is not None:
            return payload, True
        payload = build()
        self.store(key, payload)
        return payload, False

    def clear(self) -> int:
        """Remove every entry; returns how many were removed."""
        removed = 0
        for entry in self.directory.glob(f"*{self.suffix}"):
            entry.unlink(missing_ok=True)
            removed += 1
        return removed


def _pack(payload: bytes) -> bytes:
    """Header (magic, checksum) followed by the payload."""
    return _MAGIC + hashlib.sha256(payload).digest() + payload


def _unpack(data: bytes) -> bytes | None:
    """The payload of a packed entry, or None when the header or checksum is wrong."""
    header = len(_MAGIC) + _DIGEST_SIZE
    if len(data) <= header or not data.startswith(_MAGIC):
        return None
    digest, payload = data[len(_MAGIC) : header], data[header:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    return payload
