"""What `prune` removes (its rules: age, ended states, each sweep's best kept) and what it gave back."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gym_gui.core.errors import ConfigError
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState

# The states a run may be pruned in: those it has ended in (a live run is never touched).
ENDED_STATES = tuple(state for state in RunState if state.terminal)

_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str, option: str = "--older-than") -> float:
    """Seconds of an age such as ``30d``, ``12h``, ``90m``, ``45s`` or ``2w``.

    Raises:
        ConfigError: naming ``option`` and the form an age takes.
    """
    match = _AGE.fullmatch(text.strip().lower())
    if match is None:
        raise ConfigError(
            f"{option}: {text!r} is not an age; give a number and a unit: s, m, h, d or w (e.g. 30d, 12h)"
        )
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


@dataclass(frozen=True)
class PruneRules:
    """Which ended runs `prune` removes: those matching every rule given.

    ``older_than``: ended at least this many seconds ago (None: any age). ``states``: in one of
    these ended states (none: any). ``keep_best`` with ``per_sweep``: only sweeps' trial runs, each
    sweep's ``keep_best`` best trials (by its first objective) kept. ``run_ids``: only these of the
    matching runs (what a person confirmed). ``dry_run``: say what would go and change nothing.
    """

    older_than: float | None = None
    states: tuple[RunState, ...] = ()
    keep_best: int = 0
    per_sweep: bool = False
    run_ids: tuple[str, ...] = ()
    dry_run: bool = False

    def __post_init__(self) -> None:
        live = [state.value for state in self.states if not state.terminal]
        if live:
            ended = ", ".join(state.value for state in ENDED_STATES)
            raise ConfigError(
                f"--state: {', '.join(live)} is not an ended state; prune removes only ended runs ({ended})"
            )
        if self.older_than is not None and self.older_than < 0:
            raise ConfigError(f"--older-than: {self.older_than} seconds is below 0")
        if self.keep_best < 0:
            raise ConfigError(f"--keep-best: {self.keep_best} is below 0")
        if bool(self.keep_best) != self.per_sweep:
            raise ConfigError("--keep-best N and --per-sweep go together: each sweep keeps its N best trials")
        if self.older_than is None and not self.states and not self.per_sweep:
            raise ConfigError("prune: say which runs go: --older-than, --state, or --keep-best N --per-sweep")


@dataclass(frozen=True)
class PrunedRun:
    """A run `prune` removed (or, in a dry run, would remove), and the disk its directory held."""

    record: RunRecord
    bytes: int


@dataclass(frozen=True)
class PruneResult:
    """What a prune removed, the disk it gave back, and the matching runs it left and why."""

    runs: list[PrunedRun]
    bytes: int
    dry_run: bool
    kept: list[str] = field(default_factory=list)  # among their sweep's best
    skipped: list[str] = field(default_factory=list)  # "RUN: why it stays"


def summary(result: PruneResult, size: str) -> str:
    """What a prune did (or, dry, would do) in one line; ``size`` is its bytes as a user reads them."""
    count = f"{len(result.runs):,} run{'' if len(result.runs) == 1 else 's'}"
    if not result.runs:
        said = "no run matches: nothing to prune"
    elif result.dry_run:
        said = f"{count} would be deleted, giving back {size} (--dry-run: nothing changed)"
    else:
        said = f"{count} deleted, {size} given back"
    if result.kept:
        said += f"; {len(result.kept):,} kept among their sweep's best"
    return said
