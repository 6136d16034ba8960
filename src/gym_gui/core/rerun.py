"""Re-runs: how a package set differs from the one a run recorded, and whether two runs' episodic returns match."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# The kind of the event a re-run gets when it ends: whether its returns match the original's.
RERUN_EVENT = "rerun"
# Shown for a package one set has and the other has not.
ABSENT = "—"

_NAME_SEPARATORS = re.compile(r"[-_.]+")


def _canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503: case and ``-_.`` runs do not count)."""
    return _NAME_SEPARATORS.sub("-", name).lower()


def _entries(packages: Sequence[str]) -> dict[str, str]:
    """``pip freeze`` lines by package: ``name==1.0`` → ``{name: 1.0}``, ``name @ url`` → ``{name: @ url}``,
    ``-e path`` → ``{path: editable}``; comments and blank lines are skipped."""
    entries: dict[str, str] = {}
    for raw in packages:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-e ", "--editable ")):
            entries[line.split(None, 1)[1]] = "editable"
            continue
        for separator in ("===", "==", " @ "):
            if separator in line:
                name, version = line.split(separator, 1)
                entries[_canonical(name.strip())] = version.strip() if separator != " @ " else f"@ {version}"
                break
        else:
            entries[_canonical(line)] = ""
    return entries


@dataclass(frozen=True)
class PackageChange:
    """One package whose version differs between the recorded set (``old``) and today's (``new``);
    :data:`ABSENT` on the side that lacks it."""

    name: str
    old: str
    new: str

    def text(self) -> str:
        return f"{self.name} {self.old} → {self.new}"


def package_changes(recorded: Sequence[str], now: Sequence[str]) -> list[PackageChange]:
    """How ``now`` differs from ``recorded`` (both ``pip freeze`` lines), by package name, sorted."""
    old, new = _entries(recorded), _entries(now)
    return [
        PackageChange(name, old.get(name, ABSENT), new.get(name, ABSENT))
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    ]


@dataclass(frozen=True)
class ReturnsComparison:
    """Whether a re-run's episodic returns are those of the run it re-runs, episode by episode.

    ``first_difference`` is the index (from 0) of the first episode whose returns differ, or where
    one run has no more episodes; None when they are identical.
    """

    original: tuple[float, ...]
    rerun: tuple[float, ...]
    first_difference: int | None

    @property
    def identical(self) -> bool:
        return self.first_difference is None

    def text(self) -> str:
        """One line: ``identical: 12 episodic returns match`` or where they first differ (original vs re-run)."""
        if self.identical:
            return f"identical: {len(self.rerun)} episodic returns match"
        at = self.first_difference
        assert at is not None
        if at >= len(self.rerun) or at >= len(self.original):
            return (
                f"differ: the re-run has {len(self.rerun)} episodic returns, the original "
                f"{len(self.original)} (the first {at} match)"
            )
        return f"differ: first at episode {at}: {_shown(self.original[at])} vs {_shown(self.rerun[at])}"


def _shown(value: float) -> str:
    return repr(float(value))


def _same(a: float, b: float) -> bool:
    # Exact equality is the test of a deterministic re-run; NaN (a diverged return) matches NaN.
    return a == b or (math.isnan(a) and math.isnan(b))


def compare_returns(original: Sequence[float], rerun: Sequence[float]) -> ReturnsComparison:
    """Compare a re-run's episodic returns with the original's, in episode order: identical only when
    both have the same number of episodes and every return is exactly equal."""
    first: int | None = None
    for index, (a, b) in enumerate(zip(original, rerun, strict=False)):
        if not _same(float(a), float(b)):
            first = index
            break
    if first is None and len(original) != len(rerun):
        first = min(len(original), len(rerun))
    return ReturnsComparison(tuple(map(float, original)), tuple(map(float, rerun)), first)
