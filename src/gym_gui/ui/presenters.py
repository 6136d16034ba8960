"""Worker presenters: what each worker kind shows — its lane's tabs and its training form — decided in one place."""

from __future__ import annotations

from gym_gui_sdk import trainer_pb2 as pb
from PySide6.QtWidgets import QWidget

from gym_gui.core.workers import WORKERS, Lane, WorkerSpec, lane_of, worker_spec
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tabs.base import RunTab

ANALYTICS_BANNER = "This worker streams metrics, not steps: its curves are in the Charts tab."


def bootstrap_live_tabs(link: DaemonLink) -> list[RunTab]:
    """Telemetry lane: every step is streamed and stored, so the run gets Live and Replay."""
    from gym_gui.ui.tabs.live import LiveTab
    from gym_gui.ui.tabs.replay import ReplayTab

    return [LiveTab(link), ReplayTab(link)]


def bootstrap_analytics_tabs(link: DaemonLink) -> list[RunTab]:
    """Analytics lane: lifecycle, metrics and artifacts; the Live tab says why it has no steps.

    No steps are stored, so the Replay tab replays what the run filmed (capture-video).
    """
    from gym_gui.ui.tabs.charts import ChartsTab
    from gym_gui.ui.tabs.checkpoints import CheckpointsTab
    from gym_gui.ui.tabs.live import LiveTab
    from gym_gui.ui.tabs.replay import ReplayTab
    from gym_gui.ui.tabs.tensorboard import TensorBoardTab
    from gym_gui.ui.tabs.wandb import WandbTab

    live = LiveTab(link)
    live.set_banner(ANALYTICS_BANNER)
    return [
        live,
        ChartsTab(link),
        TensorBoardTab(link),
        WandbTab(link),
        CheckpointsTab(link),
        ReplayTab(link),
    ]


class WorkerPresenter:
    """Presents one worker kind: its roster entry, its run tabs and its training form."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec

    @property
    def kind(self) -> str:
        return self.spec.kind

    def lane(self, run: pb.RunInfo) -> Lane:
        """The lane of a run of this kind (an evaluation streams every step whatever the kind)."""
        return Lane(run.lane) if run.lane else lane_of(self.spec.kind, "train")

    def tabs(self, run: pb.RunInfo, link: DaemonLink) -> list[RunTab]:
        """The lane decision: which tabs a run of this kind gets."""
        if self.lane(run) is Lane.ANALYTICS:
            return bootstrap_analytics_tabs(link)
        return bootstrap_live_tabs(link)

    def form(self, link: DaemonLink) -> QWidget | None:
        """The "Train new" form of this kind, generated from what the daemon says about it."""
        if not self.spec.available:
            return None
        from gym_gui.ui.forms import form_for

        return form_for(self.spec.kind, link)


_PRESENTERS: dict[str, WorkerPresenter] = {kind: WorkerPresenter(spec) for kind, spec in WORKERS.items()}


def presenter_for(kind: str) -> WorkerPresenter:
    """The presenter of ``kind`` (KeyError naming the known kinds for an unknown one)."""
    worker_spec(kind)
    return _PRESENTERS[kind]
