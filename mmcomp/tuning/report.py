"""What an autotune tried and chose: the candidates, their times, the tuned kernel."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

from mmcomp.backend.compiled import Kernel

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class Candidate:
    """One candidate schedule and what became of it."""

    label: str
    """What it changes in the heuristic's schedule ("heuristic" for the heuristic's own)."""
    schedule: str
    """Its whole schedule (`ScheduleParams.format()`), or the keywords where it did not build."""
    status: str
    """"timed", "wrong" (failed the check), "failed" (did not compile), "duplicate" (the
    schedule of an earlier candidate) or "skipped" (the budget ran out before it)."""
    detail: str = ""
    """Why it was not timed."""
    median_ms: float | None = None
    """The median over the rounds of its milliseconds per launch."""
    round_ms: tuple[float, ...] = ()
    """Its milliseconds per launch in each round."""


@dataclass(frozen=True)
class AutotuneReport:
    """What an autotune tried and chose (`TunedKernel.autotune_report`)."""

    chosen: str
    """The schedule kept (`ScheduleParams.format()`)."""
    heuristic: str
    """The heuristic's schedule (under the pins)."""
    candidates: tuple[Candidate, ...]
    """Every candidate, the heuristic's first."""
    keywords: dict[str, Any]
    """The compile keywords of the chosen schedule (JSON values)."""
    device: str
    """The device and driver it was timed on."""
    rounds: int
    """Timing rounds run."""
    budget_s: float
    """The budget it ran under."""
    elapsed_s: float
    """Seconds the autotune took."""
    cached: bool = False
    """True when read from disk (this process timed nothing)."""
    confirmation_ms: tuple[float, float] | None = None
    """The head-to-head medians (heuristic's, winner's) of the fastest candidate against
    the heuristic's kernel; None where the heuristic's was the fastest."""

    @property
    def speedup(self) -> float:
        """The heuristic's median over the chosen one's: from their head-to-head rounds
        where those ran, else from the tuner's rounds (1.0 where either is missing)."""
        if self.confirmation_ms is not None:
            heuristic_ms, winner_ms = self.confirmation_ms
            return heuristic_ms / winner_ms if self.chosen != self.heuristic else 1.0
        times = {c.schedule: c.median_ms for c in self.candidates if c.median_ms is not None}
        heuristic, chosen = times.get(self.heuristic), times.get(self.chosen)
        if not heuristic or not chosen:
            return 1.0
        return heuristic / chosen

    def table(self) -> str:
        """The candidates as a markdown table."""
        lines = ["| candidate | status | median ms | schedule |", "| --- | --- | --- | --- |"]
        for c in self.candidates:
            mark = " (chosen)" if c.schedule == self.chosen and c.status == "timed" else ""
            timing = f"{c.median_ms:.4f}" if c.median_ms is not None else c.detail[:80]
            lines.append(f"| {c.label}{mark} | {c.status} | {timing} | {c.schedule} |")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON values."""
        return asdict(self)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> AutotuneReport:
        """The report of `to_json`'s values; KeyError or TypeError where they do not fit."""
        candidates = tuple(
            Candidate(
                label=str(entry["label"]),
                schedule=str(entry["schedule"]),
                status=str(entry["status"]),
                detail=str(entry["detail"]),
                median_ms=None if entry["median_ms"] is None else float(entry["median_ms"]),
                round_ms=tuple(float(ms) for ms in entry["round_ms"]),
            )
            for entry in data["candidates"]
        )
        keywords = data["keywords"]
        if not isinstance(keywords, dict):
            raise TypeError(f"keywords: expected a mapping, found {type(keywords).__name__}")
        return AutotuneReport(
            chosen=str(data["chosen"]),
            heuristic=str(data["heuristic"]),
            candidates=candidates,
            keywords=cast("dict[str, Any]", keywords),
            device=str(data["device"]),
            rounds=int(data["rounds"]),
            budget_s=float(data["budget_s"]),
            elapsed_s=float(data["elapsed_s"]),
            cached=bool(data["cached"]),
            confirmation_ms=_pair(data.get("confirmation_ms")),
        )


def _pair(value: Any) -> tuple[float, float] | None:
    """Two milliseconds from JSON (a list of two numbers), or None."""
    if value is None:
        return None
    heuristic, winner = value
    return float(heuristic), float(winner)


class TunedKernel(Kernel):
    """A Kernel whose schedule an autotune chose: `params` is it, `autotune_report` how."""

    autotune_report: AutotuneReport
    """The candidates, their times and the choice."""

    @staticmethod
    def of(kernel: Kernel, report: AutotuneReport) -> TunedKernel:
        """`kernel` (its artifact shared) with the report."""
        tuned = TunedKernel.__new__(TunedKernel)
        tuned.__dict__.update(kernel.__dict__)
        tuned.autotune_report = report
        return tuned
