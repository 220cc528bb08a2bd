"""The autotune entries on disk: one checksummed JSON entry per fusion, shape, pins,
device and driver, next to the compile cache (`$MMCOMP_CACHE_DIR`)."""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from mmcomp.runtime import KernelCache

from mmcomp.cache import AUTOTUNE_SUFFIX
from mmcomp.tuning.report import AutotuneReport

FORMAT = "mmcomp-autotune-1"
"""The entry format; part of every key."""

SUFFIX = AUTOTUNE_SUFFIX
"""File suffix of an autotune entry in the cache directory."""


def store() -> KernelCache:
    """The autotune entries: in the compile cache's directory, read at each use."""
    from mmcomp.runtime import KernelCache

    return KernelCache(suffix=SUFFIX)


def tuning_key(fusion_text: str, shape: str, pins: str, device: str) -> str:
    """The hex SHA-256 naming an autotune entry (see the module docstring)."""
    digest = hashlib.sha256()
    for part in (FORMAT, fusion_text, shape, pins, device):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


def json_value(value: object) -> object:
    """A keyword's value as JSON (tuples as lists)."""
    return list(cast("tuple[int, ...]", value)) if isinstance(value, tuple) else value


def load_entry(key: str) -> AutotuneReport | None:
    """The report stored under `key`, or None; an entry that does not decode is removed
    with a warning (and so tuned and written again)."""
    entries = store()
    payload = entries.load(key)  # a wrong header or checksum: removed, with a warning
    if payload is None:
        return None
    try:
        data = json.loads(payload.decode())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
        report = AutotuneReport.from_json(data["report"])
        keywords_of(report)
    except Exception as error:  # noqa: BLE001 - any damage: a miss
        path = entries.path(key)
        warnings.warn(
            f"mmcomp autotune: entry {path} does not decode ({error}); it is discarded and "
            "tuned again",
            stacklevel=3,
        )
        path.unlink(missing_ok=True)
        return None
    return report


def store_entry(key: str, report: AutotuneReport) -> bool:
    """Write the report under `key` (atomically); False where it cannot be written."""
    payload = json.dumps({"format": FORMAT, "report": report.to_json()}, sort_keys=True)
    return store().store(key, payload.encode())


def keywords_of(report: AutotuneReport) -> dict[str, Any]:
    """The chosen schedule's compile keywords (checked; tuples for the shapes)."""
    from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides

    values = dict(report.keywords)
    schedule_m = check_schedule_m(values.pop("schedule_m", None))
    keywords: dict[str, Any] = normalize_overrides(values)
    return keywords if schedule_m is None else {**keywords, "schedule_m": schedule_m}
