"""Plain records that storage keeps and the protocol carries: runs, transitions, episodes, steps, metrics, events."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from gym_gui_sdk.contract import FormSpec

from gym_gui.core.rerun import PackageChange
from gym_gui.core.states import RunState, SweepState

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

# Who acted at a step and what the operator proposed where a person overrode it (see StepRecord):
# the columns after STEP_COLUMNS of a step that says.
ACTOR_COLUMNS: tuple[str, ...] = ("actor", "proposed_action")

# The agent a step is of, in a multi-agent env (a PettingZoo seat): the column after ACTOR_COLUMNS
# of a step of a run whose steps name their agents. "" is a single-agent run's one implicit agent.
AGENT_COLUMNS: tuple[str, ...] = ("agent",)

# A step row: its STEP_COLUMNS, then its ACTOR_COLUMNS when the step says who acted, then its
# AGENT_COLUMNS when it names its agent (actor columns included, "" when they say nothing). Most
# runs' steps do neither, and their rows carry nothing for them on the wire or to storage.
StepRow = (
    tuple[int, int, float, bool, bool, str, str, str, bytes | None, float]
    | tuple[int, int, float, bool, bool, str, str, str, bytes | None, float, str, str]
    | tuple[int, int, float, bool, bool, str, str, str, bytes | None, float, str, str, str]
)


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
    # Where the run's files are, as the daemon tells its clients (empty in the registry's own rows).
    run_dir: str = ""
    # What the daemon warns of for this live run now (disk low …), as it tells its clients.
    warning: str = ""
    # A sweep's trial run: the sweep and the trial number it plays ("" and None for any other run).
    sweep_id: str = ""
    trial: int | None = None


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
    observation: str  # JSON; a large array compact (read it with gym_gui_sdk.encoding.loads_observation)
    info: str  # JSON object
    render: bytes | None
    wall_time: float
    # Who chose the action, where the worker says (an operator a person may take over from): one of
    # gym_gui_sdk's ACTORS, "operator" or "human", or "" when the step does not say.
    actor: str = ""
    proposed_action: str = ""  # JSON: the operator's action where the person overrode it, else ""
    # The agent the step is of in a multi-agent env ("player_0"); "" for a single-agent run's steps
    # (its one implicit agent) and every step stored before agents were.
    agent: str = ""


@dataclass(frozen=True)
class EpisodeInterventions:
    """How often a person took over from the operator in one episode, counted over its steps that
    say who acted."""

    episode: int
    steps: int  # the episode's steps that say who acted
    human: int  # of those, the steps a person acted
    interventions: int  # the times a person took over: runs of consecutive human steps

    @property
    def rate(self) -> float:
        """The share of the steps that a person acted, in [0, 1]."""
        return self.human / self.steps if self.steps else 0.0


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
    # Each agent's return in a multi-agent episode, in the env's agent order; empty for a single
    # agent's (its return is total_reward, which for a multi-agent episode is these returns' sum).
    agent_returns: tuple[tuple[str, float], ...] = ()


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
class SweepRecord:
    """One row of the registry's sweeps: a study whose trials the daemon plays as runs.

    ``storage`` the study's storage URL as shown (any
    password as ***); ``spec`` the sweep spec (JSON form, its storage URL shown likewise).
    """

    sweep_id: str
    name: str
    state: SweepState
    directory: str
    storage: str
    study: str
    spec: str  # JSON
    created_at: float
    ended_at: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class SweepDetail:
    """A sweep and its study as the daemon read it (``study``: ``StudyView`` data, see sweeps/study.py)."""

    record: SweepRecord
    study: dict[str, Any]


@dataclass(frozen=True)
class WorkerDescription:
    """What the daemon says of a worker kind: its roster entry, its bundle, and what its plugin offers.

    ``form`` is the plugin's answer, typed by the SDK's contract: what its run form offers (for
    CleanRL: the scripts present, whether torch sees a GPU, and one script's arguments when asked).
    """

    kind: str
    display_name: str
    lane: str
    available: bool
    unavailable_reason: str
    bundle: str
    bundle_installed: bool
    form: FormSpec = field(default_factory=FormSpec)


# ------------------------------------------------------------------ what a client of the daemon sees


@dataclass(frozen=True)
class RunProgress:
    """How far a run has got, from what storage holds."""

    episodes: int = 0
    steps: int = 0
    metrics: int = 0
    last_wall_time: float = 0.0
    global_step: int = 0  # the largest metric step: how far an analytics-lane run has trained


@dataclass(frozen=True)
class RunDetail:
    """Everything the daemon tells about one run: its row, its state history, its config, its progress."""

    record: RunRecord
    history: list[StateTransition]
    config_json: str  # the validated RunConfig, secrets redacted
    progress: RunProgress


@dataclass(frozen=True)
class DaemonHealth:
    version: str
    pid: int
    address: str
    started_at: float
    runs_by_state: dict[str, int]
    home: str
    log_path: str
    max_concurrent: int


@dataclass(frozen=True)
class RunUpdated:
    """A run's row as it is now: first one per matching run (``snapshot``), then after every change."""

    record: RunRecord
    snapshot: bool = False


@dataclass(frozen=True)
class RunRemoved:
    """A run was deleted."""

    run_id: str


# What watching the runs yields, in the order it happened.
RunEvent = RunUpdated | StateTransition | RunRemoved


@dataclass(frozen=True)
class StepBatch:
    """Steps as a viewer receives them: the latest batch when the view fell behind (lossy)."""

    rows: list[StepRow]


@dataclass(frozen=True)
class MetricBatch:
    points: list[MetricPoint]


@dataclass(frozen=True)
class Lifecycle:
    """A phase the worker reported: STARTED, PAUSED, RESUMED, COMPLETED, FAILED or CANCELLED."""

    phase: str
    message: str = ""
    render_kind: str = ""  # with STARTED: grid, pixels or none
    spaces: str = ""  # with STARTED: JSON description of the observation and action spaces


@dataclass(frozen=True)
class Starved:
    """The daemon began coalescing step batches for a viewer without credit."""

    coalesced: int


@dataclass(frozen=True)
class Resumed:
    """Credit came back; ``coalesced`` step batches were replaced meanwhile."""

    coalesced: int


# What a viewer's subscription yields. A worker's message (or a bundle install's progress) is an
# EventRecord of kind "worker".
TelemetryEvent = (
    StepBatch | EpisodeRecord | MetricBatch | StateTransition | Lifecycle | EventRecord | Starved | Resumed
)


@dataclass(frozen=True)
class LaunchPreview:
    """What the daemon executes for a run, resolved by the worker kind's launcher and shown safely.

    ``argv`` is exact; ``env`` is the worker's whole environment with secrets and tokens shown as
    ``***``; ``display`` is the command as a user would type it (bundle interpreters named by their
    bundle, see gym_gui.daemon.preview); ``script_argv`` is the program the worker runs in turn
    (CleanRL: the script with its flags), empty when it runs none.
    """

    run_id: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    display: str
    script_argv: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The package set the worker would run with (``pip freeze`` form), and for a re-run how it
    # differs from the set the original recorded in its manifest (empty: the same, or not a re-run).
    packages: list[str] = field(default_factory=list)
    package_changes: list[PackageChange] = field(default_factory=list)


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
