"""What a worker kind is: its lane, its capabilities and who drives its runs (the kinds themselves are plugins)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

# A worker kind is an identifier in configs, run ids and on the command line.
KIND_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
# The bundle name of workers that run in gym_gui's own environment.
APP_BUNDLE = "app"
# What a run's budget counts (RunConfig.budget's fields).
BUDGET_BOUNDS = ("episodes", "timesteps")


class Lane(StrEnum):
    """How a worker's output reaches the user."""

    TELEMETRY = "telemetry"  # every step streamed, stored, replayable
    ANALYTICS = "analytics"  # lifecycle, scalar metrics and artifacts only
    HYBRID = "hybrid"  # steps with prompts and replies, plus background metrics


class Launch(StrEnum):
    """Who drives the run's process."""

    DAEMON = "daemon"  # the supervisor spawns the worker process
    CLIENT = "client"  # the client steps the environment itself (human play) and publishes


@dataclass(frozen=True)
class Capabilities:
    """The controls a worker kind accepts while it runs, whether its models can be evaluated,
    whether a training run can start from another run's saved model (``RunConfig.warm_start``), and
    whether its worker plays a multi-agent env (a catalog entry with ``agents``), seating every agent."""

    pause: bool = False
    checkpoint: bool = False
    evaluation: bool = False
    warm_start: bool = False
    multi_agent: bool = False


@dataclass(frozen=True)
class WorkerSpec:
    """One worker kind.

    Attributes:
        kind: the id used in configs and on the command line.
        display_name: the roster name shown to users.
        lane: which lane its runs are on.
        capabilities: what control it accepts.
        bundle: the virtual environment it runs in (``app`` = gym_gui's own).
        launch: whether the daemon spawns it or the client drives it.
        unavailable_reason: empty when the kind can run; otherwise why it cannot yet.
        rank: its place in the roster (lower first; ties by name): the product's own kinds
            take 0–40, third-party kinds default to 50, baselines come last.
        description: one line for the roster's tooltip and ``gym-gui workers``.
        secrets: environment variables its runs take as secrets from whoever submits them (the
            CLI's environment, the form's password fields): handed to the worker only, never stored.
        default_budget: how long a run goes when its submitter says nothing, as ``(bound, count)``
            with bound ``episodes`` or ``timesteps`` (``gym-gui train`` without ``--episodes`` or
            ``--total-timesteps``, and the form's starting budget); None: the budget must be given.
        return_metric: the metric tag whose points are its runs' episodic returns (the charts'
            first curve, a re-run's comparison, a saved model's final return); empty: the total
            reward of each episode its runs store.
        reference_metrics: (curve tag, reference tag) pairs: the reference tag's latest value is drawn
            as a horizontal line on the curve's chart, the score the curve is read against (d3rlpy's
            dataset's own return beside its evaluation return).
    """

    kind: str
    display_name: str
    lane: Lane
    capabilities: Capabilities = Capabilities()
    bundle: str = APP_BUNDLE
    launch: Launch = Launch.DAEMON
    unavailable_reason: str = ""
    rank: int = 50
    description: str = ""
    secrets: tuple[str, ...] = ()
    default_budget: tuple[str, int] | None = None
    return_metric: str = ""
    reference_metrics: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not KIND_PATTERN.fullmatch(self.kind):
            raise ValueError(f"worker kind {self.kind!r} must match {KIND_PATTERN.pattern}")
        if self.default_budget is not None:
            bound, count = self.default_budget
            if bound not in BUDGET_BOUNDS or not isinstance(count, int) or count < 1:
                raise ValueError(
                    f"worker kind {self.kind!r}: default_budget {self.default_budget!r} must be "
                    f"(one of {', '.join(BUDGET_BOUNDS)}, a count of at least 1)"
                )

    @property
    def available(self) -> bool:
        return not self.unavailable_reason

    def lane_for(self, mode: str) -> Lane:
        """The lane of a run: the kind's, except that evaluating a trained model streams every step
        (telemetry lane) whatever lane the kind trains on."""
        return Lane.TELEMETRY if mode == "evaluate" else self.lane
