"""The design docs describe the system as it is; device-run records live in docs/results/.

A design doc (docs/*.md) holds no dated line (a YYYY-MM-DD date) and no commit hash used as
narrative; docs/performance.md opens with its method and current tables; every file that a
doc links in docs/results/ exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
DESIGN_DOCS = sorted(DOCS.glob("*.md"))

DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
# A hex token of 7 to 40 characters with a digit and a letter, as `git log --oneline` prints
# a commit; a float's exponent ("4.471500e-02") and a PTX float literal ("0f3F800000") are
# not hashes.
HEX = re.compile(r"(?<![\w.])[0-9a-f]{7,40}(?![\w+-])")
PTX_FLOAT = re.compile(r"0[fd][0-9a-fA-F]{8}(?:[0-9a-fA-F]{8})?")
RESULT_LINK = re.compile(r"results/[\w.-]+\.md")


def hash_like(token: str) -> bool:
    """Whether `token` reads as a commit hash (a hex word with letters and digits)."""
    has_digit = any(c.isdigit() for c in token)
    has_letter = any(c.isalpha() for c in token)
    return has_digit and has_letter and not PTX_FLOAT.fullmatch(token)


def dated_lines(text: str, *, table_dates: bool = False) -> list[str]:
    """The lines of `text` that carry a date or a commit hash (links to a record aside).

    With `table_dates`, a table's "- date:" entry (docs/performance.md's current tables
    say when each was measured) is not counted.
    """
    found: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = RESULT_LINK.sub("", raw)
        if table_dates and line.startswith("- date: "):
            continue
        tokens = [m.group(0) for m in HEX.finditer(line)]
        if DATE.search(line) or any(hash_like(t) for t in tokens):
            found.append(f"{number}: {line.strip()}")
    return found


def test_the_checks_find_dates_and_hashes() -> None:
    assert dated_lines("Measured on 2026-12-01 09:11 UTC.") != []
    assert dated_lines("on 3dab042 (the full-wave rule)") != []
    assert dated_lines("the previous release (cf464ae, as `mmcomp_base`)") != []
    assert dated_lines("`mov.f32 %f1, 0f00000000;` and 4.471500e-02") == []
    assert dated_lines("a 2147483648-element array, 0xFF bytes, deadbeef") == []
    assert dated_lines("records: docs/results/2026-12-02-h200-rows.md") == []
    assert dated_lines("- date: 2026-12-02 03:58 UTC") != []
    assert dated_lines("- date: 2026-12-02 03:58 UTC", table_dates=True) == []


@pytest.mark.parametrize("doc", DESIGN_DOCS, ids=[p.name for p in DESIGN_DOCS])
def test_design_doc_has_no_dated_lines(doc: Path) -> None:
    found = dated_lines(doc.read_text(), table_dates=doc.name == "performance.md")
    assert found == [], (
        f"{doc.relative_to(ROOT)} has dated lines (device-run records belong in "
        "docs/results/):\n" + "\n".join(found)
    )


def test_performance_opens_with_method_and_current_tables() -> None:
    headings = [
        line
        for line in (DOCS / "performance.md").read_text().splitlines()
        if line.startswith("## ")
    ]
    assert headings[:2] == ["## Method", "## Current tables"]


def test_every_linked_result_exists() -> None:
    link = re.compile(r"docs/results/([\w.-]+\.md)|\(results/([\w.-]+\.md)\)")
    sources = [*(ROOT / "mmcomp").rglob("*.py"), *(ROOT / "tools").glob("*.py")]
    for doc in [*DESIGN_DOCS, ROOT / "README.md", *sources]:
        for match in link.finditer(doc.read_text()):
            name = match.group(1) or match.group(2)
            assert (RESULTS / name).is_file(), f"{doc.relative_to(ROOT)} cites docs/results/{name}"


def test_every_result_is_indexed_by_performance() -> None:
    text = (DOCS / "performance.md").read_text()
    for record in sorted(RESULTS.glob("*.md")):
        assert f"results/{record.name}" in text, f"docs/performance.md omits {record.name}"
