"""The main window: composes the docks and asks each run's presenter for its tabs; it knows no worker kind."""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import ConfigError
from gym_gui.core.records import RunRecord
from gym_gui.play.reenact import Reenacted, reenact
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.comparison import runs_of_comparison
from gym_gui.storage.home import Home
from gym_gui.ui.arena.view import ArenaView
from gym_gui.ui.background import Background
from gym_gui.ui.capabilities import offers_trained_model
from gym_gui.ui.compare import CompareView
from gym_gui.ui.control_panel import AGENT, HUMAN, ControlPanel
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.datasets_view import DatasetBrowser
from gym_gui.ui.forms.base import RunForm
from gym_gui.ui.forms.model import FollowUp
from gym_gui.ui.human_play import HumanPlayWidget
from gym_gui.ui.model_browser import ModelBrowser
from gym_gui.ui.presenters import tabs_for_run
from gym_gui.ui.replay_together.model import MAX_RUNS, MIN_RUNS
from gym_gui.ui.replay_together.view import ReplayTogetherView
from gym_gui.ui.runs.cells import WARNING_COLOUR
from gym_gui.ui.runs.log_drawer import LogDrawer
from gym_gui.ui.runs.table import RunsTable
from gym_gui.ui.settings import Settings
from gym_gui.ui.study.attach import AttachStudyDialog, StudyDock
from gym_gui.ui.study.view import StudyWidget
from gym_gui.ui.sweep_form.view import SweepDialog
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.tabs.replay import ReplayTab

log = logging.getLogger(__name__)

SHORTCUTS = (
    ("Ctrl+Return", "Start a run from the selected worker's form"),
    ("Ctrl+Shift+Return", "Start a sweep (the sweep form)"),
    ("Ctrl+Shift+A", "The Arena: operators side by side on shared seeds, evaluation batches"),
    ("N", "Arena: one step for every pane"),
    ("Ctrl+.", "Cancel the selected run"),
    ("Ctrl+1 … Ctrl+9", "Switch to tab 1 … 9 of the selected run"),
    ("Ctrl+H", "Human play"),
    ("Ctrl+M", "Saved models (the checkpoint browser)"),
    ("Ctrl+Shift+D", "Datasets (the offline datasets browser)"),
    ("Space / Left / Right", "Replay: play-pause / step back / step forward"),
    ("Arrow keys, W A S D …", "Human play: the environment's key map (see Game Info)"),
    ("T", "Hybrid play: take control from the operator / give it back"),
)


class RunView(QWidget):
    """The selected run's tabs, as its worker's presenter decided."""

    follow_run = Signal(str)  # a tab started a new run (an evaluation) to switch to
    run_requested = Signal(str)  # a tab asks for a run to be selected in the runs table (a trial's)
    train_requested = Signal(object)  # a tab asks for the training form filled (a study's FollowUp)

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.title = QLabel("No run selected.")
        self.title.setObjectName("runTitle")
        self.tabs = QTabWidget()
        self.tabs.setObjectName("runTabs")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.tabs, 1)
        self.run: RunRecord | None = None
        self._tabs: list[RunTab] = []

    def show_run(self, run: RunRecord) -> None:
        self.clear()
        self.run = run
        self.title.setText(f"{run.run_id} — {run.worker} on {run.env_id} ({run.lane} lane): {run.state}")
        self._tabs = tabs_for_run(run, self.link)
        for tab in self._tabs:
            self.tabs.addTab(tab, tab.title)
            for name, signal in (
                ("evaluation_started", self.follow_run),
                ("run_requested", self.run_requested),
                ("train_requested", self.train_requested),
            ):
                emitted = getattr(tab, name, None)
                if emitted is not None:
                    emitted.connect(signal)
            tab.attach(run)

    def run_changed(self, run: RunRecord) -> None:
        if self.run is not None and run.run_id == self.run.run_id:
            self.run = run
            self.title.setText(f"{run.run_id} — {run.worker} on {run.env_id} ({run.lane} lane): {run.state}")
            for tab in self._tabs:
                tab.run_changed(run)

    def clear(self) -> None:
        for tab in self._tabs:
            tab.detach()
        self.tabs.clear()
        for tab in self._tabs:
            tab.deleteLater()
        self._tabs = []
        self.run = None

    def tab_list(self) -> list[RunTab]:
        return list(self._tabs)


FIRST_ENV = "FrozenLake-v1"
# The left dock's width on a first start: a run's form is the main thing there, so it starts wide; the
# user widens or narrows it, and the next window opens as it was left (Settings: the window's state).
CONTROL_WIDTH = 480
ARENA_WIDTH = 900  # the Arena's dock on first showing: room for its panes side by side


class MainWindow(QMainWindow):
    """Left, the whole height: what to play or train (the run's form). Centre: human play or the selected
    run's tabs. Bottom: the runs. Docks keep the size the user gives them across starts."""

    def __init__(self, link: DaemonLink, settings: Settings) -> None:
        super().__init__()
        self.link = link
        self.settings = settings
        self.setWindowTitle("gym_gui — RL research cockpit")
        self.resize(1400, 900)

        self.control = ControlPanel(link)
        left = QDockWidget("Control", self)
        left.setObjectName("controlDock")
        left.setWidget(self.control)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, left)
        self.control_dock = left
        # The left dock runs down to the status bar: the runs dock sits under the centre only.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)

        self.human_play = HumanPlayWidget(link)
        self.run_view = RunView(link)
        self.centre = QStackedWidget()
        self.centre.addWidget(self.human_play)
        self.centre.addWidget(self.run_view)
        self.setCentralWidget(self.centre)

        self.runs = RunsTable(link)
        self.logs = LogDrawer()
        bottom_split = QSplitter(Qt.Orientation.Horizontal)
        bottom_split.setObjectName("bottomSplit")
        bottom_split.addWidget(self.runs)
        bottom_split.addWidget(self.logs)
        bottom_split.setStretchFactor(0, 3)
        bottom_split.setStretchFactor(1, 2)
        self.bottom_split = bottom_split
        bottom = QDockWidget("Runs", self)
        bottom.setObjectName("runsDock")
        bottom.setWidget(bottom_split)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, bottom)
        self.runs_dock = bottom

        self.connection = QLabel("connecting to the daemon…")
        self.reconnect_button = QPushButton("Start daemon")
        self.reconnect_button.setVisible(False)
        # The daemon's live warning (disk low …), shown while a live run has one.
        self.warning = QLabel()
        self.warning.setObjectName("runsWarning")
        self.warning.setStyleSheet(f"color: {WARNING_COLOUR}; font-weight: bold;")
        self.warning.setVisible(False)
        self.statusBar().addPermanentWidget(self.warning)
        self.statusBar().addPermanentWidget(self.connection)
        self.statusBar().addPermanentWidget(self.reconnect_button)

        self.compare = CompareView()
        self.compare_dock = self._side_dock("Compare", "compareDock", self.compare)
        # The checkpoint browser: a dock beside the runs it reads, like Compare, shown from View.
        self.models = ModelBrowser(link, self._all_runs)
        self.models_dock = self._side_dock("Saved models", "modelsDock", self.models)
        # The Arena: operators side by side and evaluation batches, a wide dock shown from Run.
        self.arena = ArenaView(link)
        self.arena_dock = self._side_dock("Arena", "arenaDock", self.arena)
        # Several runs replayed side by side: as wide as the Arena, a tab beside it.
        self.replay_together = ReplayTogetherView()
        self.replay_together_dock = self._side_dock(
            "Replay together", "replayTogetherDock", self.replay_together
        )
        self.tabifyDockWidget(self.arena_dock, self.replay_together_dock)
        # The home's offline datasets: a dock beside the saved models, shown from View.
        self.datasets = DatasetBrowser(Home(link.home))
        self.datasets_dock = self._side_dock("Datasets", "datasetsDock", self.datasets)
        self.runs.together_counts = range(MIN_RUNS, MAX_RUNS + 1)
        self._reads = Background(self, workers=1, name="window-reads")

        self._pending_select: tuple[str, Callable[[str], None]] | None = None
        self.attach_dialog: AttachStudyDialog | None = None
        self.sweep_dialog: SweepDialog | None = None
        self.study_docks: list[StudyDock] = []
        self._wire()
        self._menus()
        self._restore()

    def _side_dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        """A dock at the window's right for ``widget``, hidden until asked for."""
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        dock.hide()
        return dock

    # ------------------------------------------------------------ wiring

    def _wire(self) -> None:
        link = self.link
        link.connection_changed.connect(self._connection)
        # The runs table holds every run (stream and re-listing alike): the window follows it.
        self.runs.run_updated.connect(self._run_updated)
        self.runs.run_removed.connect(self._run_removed)
        self.runs.warning_changed.connect(self._warning)
        link.error.connect(lambda message: self.statusBar().showMessage(message, 10_000))
        self.reconnect_button.clicked.connect(link.reconnect)
        self.control.mode_changed.connect(self._mode)
        self.control.env_changed.connect(self.human_play.set_env)
        self.control.trained.evaluate_requested.connect(self.evaluate)
        self.runs.run_selected.connect(self.select_run)
        self.runs.run_selected.connect(self._show_logs)
        self.runs.selection_changed.connect(self._compare)
        self.run_view.follow_run.connect(self._follow_new_run)
        self.models.evaluation_started.connect(self._follow_new_run)
        self.models.train_requested.connect(self.train_with)
        self.runs.run_updated.connect(self.models.run_changed)
        self.models_dock.visibilityChanged.connect(lambda shown: self.models.refresh() if shown else None)
        self.datasets_dock.visibilityChanged.connect(lambda shown: self.datasets.refresh() if shown else None)
        self.datasets.replay_requested.connect(self.replay_episode)
        self.datasets.reenact_requested.connect(self.reenact_episode)
        self.run_view.run_requested.connect(self.show_run_in_table)
        self.run_view.train_requested.connect(self.train_with)
        self.human_play.episode_finished.connect(lambda run_id, _total, _steps: self.runs.refresh())
        self.arena.comparison_requested.connect(self.open_comparison)
        self.runs.comparison_requested.connect(self.open_comparison)
        self.runs.replay_together_requested.connect(self.replay_runs_together)

    def _menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        attach = QAction("Attach Optuna study…", self)
        attach.triggered.connect(self.attach_study)
        file_menu.addAction(attach)
        run_menu = self.menuBar().addMenu("&Run")
        start = QAction("Start run", self)
        start.setShortcut(QKeySequence("Ctrl+Return"))
        start.triggered.connect(self.start_run)
        cancel = QAction("Cancel selected run", self)
        cancel.setShortcut(QKeySequence("Ctrl+."))
        cancel.triggered.connect(self.cancel_selected)
        human = QAction("Human play", self)
        human.setShortcut(QKeySequence("Ctrl+H"))
        human.triggered.connect(lambda: self.control.set_mode(HUMAN))
        sweep = QAction("Start sweep…", self)
        sweep.setShortcut(QKeySequence("Ctrl+Shift+Return"))
        sweep.triggered.connect(self.start_sweep)
        arena = QAction("Arena…", self)
        arena.setShortcut(QKeySequence("Ctrl+Shift+A"))
        arena.triggered.connect(self.show_arena)
        prune = QAction("Prune runs…", self)
        prune.setToolTip(
            "Delete ended runs by age, state, or all but each sweep's best (the runs table's Prune…)"
        )
        prune.triggered.connect(lambda: self.runs.prune())
        for action in (start, sweep, cancel, human, arena, prune):
            run_menu.addAction(action)
        view_menu = self.menuBar().addMenu("&View")
        for index in range(9):
            action = QAction(f"Tab {index + 1}", self)
            action.setShortcut(QKeySequence(f"Ctrl+{index + 1}"))
            action.triggered.connect(lambda _=False, i=index: self.run_view.tabs.setCurrentIndex(i))
            view_menu.addAction(action)
        view_menu.addSeparator()
        for dock in (
            self.control_dock,
            self.runs_dock,
            self.compare_dock,
            self.models_dock,
            self.arena_dock,
            self.replay_together_dock,
            self.datasets_dock,
        ):
            view_menu.addAction(dock.toggleViewAction())  # a closed dock comes back from here
        self.models_action = QAction("Browse saved models", self)
        self.models_action.setShortcut(QKeySequence("Ctrl+M"))
        self.models_action.triggered.connect(self.show_models)
        view_menu.insertAction(view_menu.actions()[0], self.models_action)
        self.datasets_action = QAction("Browse datasets", self)
        self.datasets_action.setShortcut(QKeySequence("Ctrl+Shift+D"))
        self.datasets_action.triggered.connect(self.show_datasets)
        view_menu.insertAction(view_menu.actions()[1], self.datasets_action)
        view_menu.insertSeparator(view_menu.actions()[1])
        help_menu = self.menuBar().addMenu("&Help")
        shortcuts = QAction("Keyboard shortcuts", self)
        shortcuts.triggered.connect(self.show_shortcuts)
        help_menu.addAction(shortcuts)

    def show_shortcuts(self) -> None:
        text = "\n".join(f"{keys}\t{what}" for keys, what in SHORTCUTS)
        QMessageBox.information(self, "Keyboard shortcuts", text)

    # ------------------------------------------------------------ daemon

    def _connection(self, connected: bool, message: str) -> None:
        if connected:
            self.connection.setText(f"daemon at {message}")
            self.reconnect_button.setVisible(False)
        else:
            # Keep everything shown; say so, and offer to start a daemon again.
            self.connection.setText(f"daemon unreachable: {message}")
            self.reconnect_button.setVisible(True)

    def _warning(self, text: str) -> None:
        self.warning.setText(f"⚠ {text}" if text else "")
        self.warning.setToolTip(text)
        self.warning.setVisible(bool(text))

    def _run_updated(self, run: RunRecord) -> None:
        self.run_view.run_changed(run)
        if run.run_id not in self.control.trained.offered() and offers_trained_model(run):
            self.control.trained.offer(run.run_id)

    def _run_removed(self, run_id: str) -> None:
        self.control.trained.withdraw(run_id)
        if self.run_view.run is not None and self.run_view.run.run_id == run_id:
            self.run_view.clear()
            self.run_view.title.setText(f"Run {run_id} was deleted.")

    # ------------------------------------------------------------ actions

    def _mode(self, mode: str) -> None:
        self.centre.setCurrentWidget(self.human_play if mode == HUMAN else self.run_view)
        if mode == HUMAN:
            self.human_play.set_env(self.control.env_picker.env_id)

    def select_run(self, run_id: str) -> None:
        run = self.runs.info(run_id)
        if run is None:
            return
        if self.run_view.run is None or self.run_view.run.run_id != run_id:
            self.run_view.show_run(run)
        self.control.set_mode(AGENT)
        self.centre.setCurrentWidget(self.run_view)

    def show_datasets(self) -> DatasetBrowser:
        """View ▸ Browse datasets: the Datasets dock in front, listing the home's datasets as they are now."""
        if self.datasets_dock.isVisible():
            self.datasets.refresh()
        self.datasets_dock.show()
        self.datasets_dock.raise_()
        return self.datasets

    def replay_episode(self, run_id: str, episode: int) -> None:
        """Open ``run_id``'s Replay tab at ``episode`` (a dataset's episode, in the run it came from)."""
        self.runs.fetch(run_id, lambda _run_id: self._replay_episode(run_id, episode), self._no_run)

    def _no_run(self, message: str) -> None:
        self.statusBar().showMessage(message, 10_000)

    def _replay_episode(self, run_id: str, episode: int) -> None:
        self.runs.select(run_id)
        self.select_run(run_id)
        for tab in self.run_view.tab_list():
            if isinstance(tab, ReplayTab):
                self.run_view.tabs.setCurrentWidget(tab)
                try:
                    tab.select_episode(episode)
                except ValueError as exc:
                    self.statusBar().showMessage(str(exc), 10_000)
                return
        self.statusBar().showMessage(f"run {run_id} has no Replay tab", 10_000)

    def reenact_episode(self, dataset: str, episode: int) -> None:
        """Play ``episode`` of ``dataset`` (made outside gym_gui) again as a run, then replay that run."""
        store = self.datasets.store
        self.statusBar().showMessage(f"playing dataset {dataset!r} episode {episode} again…")

        def done(reenacted: Reenacted) -> None:
            self.statusBar().showMessage(reenacted.summary(dataset, episode), 20_000)
            self._follow_new_run(reenacted.run_id, lambda run_id: self.replay_episode(run_id, 0))

        self.link.call(
            lambda client: reenact(client, store, dataset, episode),
            done,
            lambda message: self.statusBar().showMessage(message, 20_000),
        )

    def show_models(self) -> None:
        """Show the checkpoint browser (its dock) in front, listing the models as they are now."""
        if self.models_dock.isVisible():
            self.models.refresh()
        self.models_dock.show()
        self.models_dock.raise_()

    def show_arena(self) -> ArenaView:
        """Run ▸ Arena…: the Arena's dock in front, wide enough for its panes."""
        self._show_wide(self.arena_dock)
        return self.arena

    def _show_wide(self, dock: QDockWidget) -> None:
        """``dock`` in front, as wide as the Arena's panes want when it was hidden."""
        first = not dock.isVisible()
        dock.show()
        dock.raise_()
        if first:
            self.resizeDocks([dock], [ARENA_WIDTH], Qt.Orientation.Horizontal)

    def replay_runs_together(self, run_ids: list[str], what: str = "the selection") -> None:
        """Replay ``run_ids`` side by side in the Replay together dock; ``what`` names them in the
        one line said when they are too few or too many."""
        runs = [run for run in map(self.runs.info, run_ids) if run is not None]
        try:
            self.replay_together.show_runs(runs, what)
        except ConfigError as exc:
            self.statusBar().showMessage(str(exc), 10_000)
            return
        self._show_wide(self.replay_together_dock)

    def open_comparison(self, comparison: str) -> None:
        """Select every run of ``comparison`` (an arena session, a batch) in the runs table: Compare
        overlays them, Replay together plays them side by side, the first one's Replay tab opens."""
        if not comparison:
            return
        runs = self._all_runs()

        def found(members: list[RunRecord]) -> None:
            if not members:
                self.statusBar().showMessage(
                    f"no run of comparison {comparison} is in the runs table", 10_000
                )
                return
            self.runs.select([run.run_id for run in members])
            self.select_run(members[0].run_id)
            tabs = self.run_view.tabs
            replay = next((i for i in range(tabs.count()) if tabs.tabText(i) == "Replay"), -1)
            if replay >= 0:
                tabs.setCurrentIndex(replay)
            self.statusBar().showMessage(f"comparison {comparison}: {len(members)} runs", 10_000)
            self.replay_runs_together([run.run_id for run in members], f"comparison {comparison}")

        self._reads.run(
            lambda: runs_of_comparison(runs, comparison),
            found,
            lambda message: self.statusBar().showMessage(f"comparison {comparison}: {message}", 10_000),
            name="comparison runs",
        )

    def _all_runs(self) -> list[RunRecord]:
        """Every run the runs table holds (the window's one store of runs)."""
        model = self.runs.model
        return [run for run in map(model.info, model.run_ids()) if run is not None]

    def _compare(self, run_ids: list[str]) -> None:
        """Several runs selected: overlay a chosen metric of them (mean ± std across seeds)."""
        runs = [run for run in map(self.runs.info, run_ids) if run is not None]
        if len(runs) >= 2:
            self.compare.set_runs(runs)
            self.compare_dock.show()

    def _show_logs(self, run_id: str) -> None:
        run = self.runs.info(run_id)
        if run is not None:
            self.logs.show_run(run)

    def start_run(self) -> None:
        form = self.control.forms.currentWidget()
        submit = getattr(form, "submit", None)
        if callable(submit):
            submit()

    def cancel_selected(self) -> None:
        run = self.run_view.run
        if run is not None and not run.state.terminal:
            self.link.call(lambda client: client.cancel(run.run_id))

    def evaluate(self, run_id: str, episodes: int) -> None:
        """Start an evaluation of a trained run and switch to its Live tab once it exists."""
        if self.runs.info(run_id) is None:
            return

        def submit(client: DaemonClient) -> str:
            config = client.evaluation_config(run_id, episodes, real_time=True)  # to be watched
            record, _ = client.submit(config)
            return record.run_id

        self.link.call(submit, on_done=self._follow_new_run)

    def _follow_new_run(self, run_id: str, then: Callable[[str], None] | None = None) -> None:
        """Select a run (or do ``then`` with it) as soon as its row arrives (the watch stream may lag
        the submit)."""
        act = then or self.select_run
        if self.runs.info(run_id) is not None:
            act(run_id)
            return
        self._pending_select = (run_id, act)
        self.runs.run_updated.connect(self._select_when_known)

    def _select_when_known(self, run: RunRecord) -> None:
        if self._pending_select is not None and run.run_id == self._pending_select[0]:
            self.runs.run_updated.disconnect(self._select_when_known)
            act = self._pending_select[1]
            self._pending_select = None
            act(run.run_id)

    def start_sweep(self) -> SweepDialog:
        """Run ▸ Start sweep…: the sweep form, its base run of the worker chosen in the roster (one
        dialog, kept with what was typed, for the window's life)."""
        if self.sweep_dialog is None:
            self.sweep_dialog = SweepDialog(self.link, self.settings, self.control.roster.kind(), self)
            self.sweep_dialog.sweep_started.connect(
                lambda record: self.statusBar().showMessage(f"sweep {record.sweep_id} started", 10_000)
            )
        self.sweep_dialog.show()
        self.sweep_dialog.raise_()
        return self.sweep_dialog

    # ------------------------------------------------------------ studies

    def show_run_in_table(self, run_id: str) -> None:
        """Select ``run_id`` in the runs table (its tabs follow; a run older than the pages listed is
        fetched first), or say the daemon has none."""
        self.runs.fetch(run_id, self._show_run_in_table, self._no_run)

    def _show_run_in_table(self, run_id: str) -> None:
        self.runs.select(run_id)

    def train_with(self, follow: FollowUp) -> None:
        """Fill the training form for a study's follow-up run: the sweep's worker and base config,
        else the form of the worker chosen now; then the trial's parameters."""
        kind = str(follow.config.get("worker") or "") if follow.config else self.control.roster.kind()
        if not kind:
            self.statusBar().showMessage(
                "Choose a worker (and script) whose form takes the parameters", 10_000
            )
            return
        form = self.control.show_form(kind)
        if not isinstance(form, RunForm):
            self.statusBar().showMessage(f"{kind} has no training form to fill", 10_000)
            return
        form.prefill(follow.config, follow.params, follow.origin)

    def attach_study(self) -> AttachStudyDialog:
        """File ▸ Attach Optuna study…: name a storage and a study; it opens in a dock, read-only."""
        dialog = AttachStudyDialog(self)
        dialog.accepted.connect(lambda: self._attached(dialog))
        self.attach_dialog = dialog
        dialog.open()
        return dialog

    def _attached(self, dialog: AttachStudyDialog) -> None:
        url = dialog.url()
        if url is not None and dialog.study():
            self.open_study(url, dialog.study())

    def open_study(self, url: str, name: str) -> StudyDock:
        """Show study ``name`` of ``url`` in a dock beside the runs (tabbed with other attached ones)."""
        study = StudyWidget(Home(self.link.home))
        study.run_requested.connect(self.show_run_in_table)
        study.train_requested.connect(self.train_with)
        dock = StudyDock(study, name, self)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        if self.study_docks:
            self.tabifyDockWidget(self.study_docks[-1], dock)
        self.study_docks.append(dock)
        dock.destroyed.connect(lambda _obj=None, dock=dock: self._forget_dock(dock))
        dock.show()
        dock.raise_()
        study.show_study(url, name)
        return dock

    def _forget_dock(self, dock: StudyDock) -> None:
        if dock in self.study_docks:
            self.study_docks.remove(dock)

    # ------------------------------------------------------------ state across starts

    def _restore(self) -> None:
        # Nothing saved yet: the control dock gets its first width once the window is shown.
        self._first_start = not self.settings.restore_window(self)
        sizes = self.settings.splitter_sizes("bottom")
        if sizes:
            self.bottom_split.setSizes(sizes)
        # A first start opens on FrozenLake, the game the README's first steps play.
        self.control.env_picker.set_env(self.settings.last_env() or FIRST_ENV)
        worker = self.settings.last_worker()
        if worker:
            self.control.roster.select(worker)
        mode = self.settings.last_mode()
        if mode:
            self.control.set_mode(mode)
        self._mode(self.control.mode)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._first_start:  # a dock size given before the window is shown does not hold
            self._first_start = False
            self.resizeDocks([self.control_dock], [CONTROL_WIDTH], Qt.Orientation.Horizontal)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closing the window leaves the daemon and its runs going; the next window re-attaches."""
        self.settings.save_window(self)
        self.settings.set_splitter_sizes("bottom", self.bottom_split.sizes())
        self.settings.set_last_env(self.control.env_picker.env_id)
        self.settings.set_last_worker(self.control.roster.kind())
        self.settings.set_last_mode(self.control.mode)
        self.settings.sync()  # on disk now, not whenever Qt gets to it
        self.run_view.clear()
        for dock in list(self.study_docks):
            dock.study.stop()
        self.human_play.close_session()
        self.arena.stop()
        self.link.close()
        super().closeEvent(event)
