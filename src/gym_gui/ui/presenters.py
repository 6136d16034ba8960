"""Worker presenters: what each worker kind shows — its lane's tabs and its training form — from its plugin."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord
from gym_gui.core.workers import Capabilities, Lane
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.kinds import form_for
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.tabs.charts import ChartsTab
from gym_gui.ui.tabs.checkpoints import CheckpointsTab
from gym_gui.ui.tabs.live import LiveTab
from gym_gui.ui.tabs.optuna import OptunaTab, trial_manifest
from gym_gui.ui.tabs.replay import ReplayTab
from gym_gui.ui.tabs.tensorboard import TensorBoardTab
from gym_gui.ui.tabs.wandb import WandbTab
from gym_gui.workers import LANE_TABS, WorkerPlugin, worker_catalog

ANALYTICS_BANNER = "This worker streams metrics, not steps: its curves are in the Charts tab."


# The tab each name a plugin may list (``workers.api.TABS``) builds.
TAB_FACTORIES: dict[str, Callable[[DaemonLink], RunTab]] = {
    "live": LiveTab,
    "charts": ChartsTab,
    "tensorboard": TensorBoardTab,
    "wandb": WandbTab,
    "checkpoints": CheckpointsTab,
    "replay": ReplayTab,
}


def build_tabs(names: tuple[str, ...], lane: Lane, link: DaemonLink) -> list[RunTab]:
    """The tabs called ``names``, in that order; on the analytics lane the Live tab says why it
    shows no steps (the Replay tab then replays what the run filmed)."""
    tabs = [TAB_FACTORIES[name](link) for name in names]
    if lane is Lane.ANALYTICS:
        for tab in tabs:
            if isinstance(tab, LiveTab):
                tab.set_banner(ANALYTICS_BANNER)
    return tabs


class WorkerPresenter:
    """Presents one worker kind: its roster entry, its run tabs and its training form."""

    def __init__(self, plugin: WorkerPlugin) -> None:
        self.plugin = plugin
        self.spec = plugin.spec

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def capabilities(self) -> Capabilities:
        return self.spec.capabilities

    def lane(self, run: RunRecord) -> Lane:
        """The lane of a run of this kind (an evaluation streams every step whatever the kind)."""
        return Lane(run.lane) if run.lane else self.spec.lane

    def tabs(self, run: RunRecord, link: DaemonLink) -> list[RunTab]:
        """The tabs a run of this kind gets, as its plugin names them for the run's lane."""
        lane = self.lane(run)
        return build_tabs(self.plugin.tabs(lane), lane, link)

    def form(self, link: DaemonLink) -> QWidget | None:
        """The "Train new" form of this kind, generated from what the daemon says about it."""
        if not self.spec.available:
            return None
        return form_for(self.spec.kind, link)


_PRESENTERS: dict[str, WorkerPresenter] = {}


def presenter_for(kind: str) -> WorkerPresenter:
    """The presenter of ``kind``.

    Raises:
        ConfigError: for a kind no installed plugin declares, naming the installed ones.
    """
    if kind not in _PRESENTERS:
        _PRESENTERS[kind] = WorkerPresenter(worker_catalog().plugin(kind))
    return _PRESENTERS[kind]


def tabs_for_run(run: RunRecord, link: DaemonLink) -> list[RunTab]:
    """The tabs of ``run``; a run whose worker plugin is no longer installed still opens, with its
    lane's tabs, so what it stored stays readable. A run whose episodes and metrics were exported as
    event files gets the TensorBoard tab, whatever its kind. A sweep's trial run (its manifest names a study)
    gets the Optuna tab after the metrics instruments, whatever its kind."""
    try:
        tabs = presenter_for(run.worker).tabs(run, link)
    except GymGuiError:
        lane = Lane(run.lane) if run.lane else Lane.TELEMETRY
        tabs = build_tabs(LANE_TABS[lane], lane, link)
    if RunDir(run.run_dir).exported_event_files.is_dir() and not any(
        isinstance(tab, TensorBoardTab) for tab in tabs
    ):
        # Its episodes and metrics were exported as event files (`gym-gui export-tensorboard`).
        tabs.append(TensorBoardTab(link))
    if trial_manifest(run) is not None:
        instruments = [i for i, tab in enumerate(tabs) if tab.title in ("Charts", "TensorBoard", "W&B")]
        tabs.insert(instruments[-1] + 1 if instruments else len(tabs), OptunaTab(link))
    return tabs
