"""Plain records that storage keeps and the protocol carries: runs, transitions, episodes, steps, metrics, events."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from gym_gui.core.states import RunState

# Column order of a step row, as the writer inserts it and readers return it.
STEP_COLUMNS: tuple[str, ...] = (
    "episode",
    "step",
    "reward",
    "terminated",
    "truncated",
    "action",
    "observation",
    "info",
    "render",
    "wall_time",
)

StepRow = tuple[int, int, float, bool, bool, str, str, str, bytes | None, float]


@dataclass(frozen=True)
class RunRecord:
    """One row of the run registry."""

    run_id: str
    worker: str
    env_id: str
    lane: str
    state: RunState
    created_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    archived: bool = False
    pid: int | None = None  # the worker process, while one may exist


@dataclass(frozen=True)
class StateTransition:
    """One state change of a run, kept forever in the registry's history."""

    run_id: str
    from_state: RunState | None
    to_state: RunState
    time: float
    reason: str = ""


@dataclass(frozen=True)
class StepRecord:
    episode: int
    step: int
    reward: float
    terminated: bool
    truncated: bool
    action: str  # JSON
    observation: str  # JSON
    info: str  # JSON object
    render: bytes | None
    wall_time: float


@dataclass(frozen=True)
class EpisodeRecord:
    episode: int
    seed: int | None
    steps: int
    total_reward: float
    terminated: bool
    truncated: bool
    started_at: float
    ended_at: float
    info: str = "{}"  # JSON object


@dataclass(frozen=True)
class MetricPoint:
    tag: str
    step: int
    wall_time: float
    value: float


@dataclass(frozen=True)
class EventRecord:
    """Something that happened to a run: a lifecycle phase, a warning, a log line of note."""

    time: float
    kind: str
    level: str
    message: str
    data: str = "{}"  # JSON object


@dataclass(frozen=True)
class ArtifactRecord:
    kind: str
    path: str  # relative to the run directory
    step: int
    meta: str = "{}"  # JSON object


@dataclass(frozen=True)
class WorkerDescription:
    """What the daemon says of a worker kind: its roster entry, its bundle, and what its plugin offers.

    ``details`` is the plugin's own answer (for CleanRL: the scripts present, whether torch sees
    a GPU, and one script's arguments when asked), empty while its bundle is not installed.
    """

    kind: str
    display_name: str
    lane: str
    available: bool
    unavailable_reason: str
    bundle: str
    bundle_installed: bool
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchPreview:
    """What the daemon executes for a run, resolved by the worker kind's launcher and shown safely.

    ``argv`` is exact; ``env`` is the worker's whole environment with secrets and tokens shown as
    ``***``; ``display`` is the command as a user would type it (bundle interpreters named by their
    bundle, see docs/architecture.md); ``script_argv`` is the program the worker runs in turn
    (CleanRL: the script with its flags), empty when it runs none.
    """

    run_id: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    display: str
    script_argv: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BundleProgress:
    """How a worker bundle's install goes: what ``BundleDirectory.install`` reports to its caller and
    the daemon sends to the runs waiting for the bundle, as the fields of a ``bundle`` event's data.

    ``phase`` is one of :data:`BUNDLE_PHASES`: ``waiting`` (step 0: another process holds the
    install lock), ``installing`` (step ``step`` of ``total`` begins), ``installed`` (all ``total``
    steps done), ``failed`` (``message`` says why).
    """

    bundle: str
    step: int
    total: int
    phase: str
    message: str

    def text(self) -> str:
        """One line for people: ``3/6 installing pinned requirements``, or the message alone."""
        return f"{self.step}/{self.total} {self.message}" if self.phase == "installing" else self.message

    def data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: str | dict[str, Any]) -> BundleProgress | None:
        """The progress an event's data carries, or None when it carries none (any other event)."""
        if isinstance(data, str):
            try:
                data = json.loads(data or "{}")
            except ValueError:
                return None
        if not isinstance(data, dict) or data.get("phase") not in BUNDLE_PHASES:
            return None
        try:
            return cls(
                bundle=str(data["bundle"]),
                step=int(data["step"]),
                total=int(data["total"]),
                phase=str(data["phase"]),
                message=str(data["message"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


BUNDLE_PHASES = ("waiting", "installing", "installed", "failed")
