"""The runs table: the home's runs in a sortable view (state badges, progress, SPS, interventions), newest
first a page at a time, kept current from the daemon, with the row actions of :class:`RunActions` above it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QItemSelection, QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunDetail, RunRecord
from gym_gui.core.run_query import RunPage, RunQuery
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import RUNS_PAGE, DaemonLink
from gym_gui.ui.runs.actions import RunActions
from gym_gui.ui.runs.cells import RunCellDelegate
from gym_gui.ui.runs.model import (
    COLUMNS,
    ELAPSED,
    ENV,
    ID,
    INTERVENTIONS,
    PROGRESS,
    REFRESH_MS,
    RUN_ID_ROLE,
    SPS,
    STATE,
    WORKER,
    ArchivedFilter,
    RunRow,
    RunsModel,
)

SPS_TAG = "charts/SPS"
FINAL_FETCHES_PER_TICK = 4  # ended runs whose last figures are still unknown, fetched a few at a time


T = TypeVar("T")


def _read_telemetry(path: Path, read: Callable[[TelemetryReader], T | None]) -> T | None:
    """What ``read`` reads of the run's telemetry at ``path``; None when it stored none or cannot be read."""
    if not path.exists():
        return None
    try:
        reader = TelemetryReader(path)
    except GymGuiError:
        return None
    try:
        return read(reader)
    except GymGuiError:
        return None
    finally:
        reader.close()


def _latest_metric(path: Path, tag: str, since_step: int | None) -> tuple[int, float] | None:
    """The newest point of ``tag`` after ``since_step`` (an index range scan), or None."""
    points = _read_telemetry(path, lambda reader: reader.metrics(tag, since_step=since_step))
    return (points[-1].step, points[-1].value) if points else None


def _comparison(config_json: str) -> str:
    """The comparison id a run's config (as GetRun gives it) names, "" for none."""
    try:
        config = json.loads(config_json or "{}")
    except ValueError:
        return ""
    comparison = config.get("comparison") if isinstance(config, dict) else None
    return comparison if isinstance(comparison, str) else ""


# What one fetch brings back: the run's detail, its latest SPS point, and, the first time it is
# seen ended, its intervention rate (read: whether it was).
_Figures = tuple[RunDetail, tuple[int, float] | None, tuple[bool, float | None]]


class RunsTable(RunActions):
    """The home's runs, newest first, current through the link's WatchRuns stream.

    The newest :data:`RUNS_PAGE` are listed first; older pages are listed when the view is scrolled
    to its end (``count_label`` says how many of the home's runs are held meanwhile).

    Progress (episodes or steps against the budget) and SPS are fetched with GetRun for active runs
    once a second; an ended run is fetched once more for its final figures. SPS is steps per
    second of wall time for telemetry-lane runs and the latest ``charts/SPS`` metric for
    analytics-lane runs. Interventions, the share of steps a person acted where the steps say
    who acted, is read from storage by the fetch that first finds the run ended, and kept. Actions work on the selected rows; Delete asks first unless
    ``confirm_delete`` is False or ``delete(..., confirm=False)`` is called.
    """

    selection_changed = Signal(list)  # run ids of the selected rows
    run_selected = Signal(str)  # the current row's run id
    # The table is the window's one store of runs: these fire once it holds (or dropped) a run,
    # whether the watch stream, a re-listing or an action told it.
    run_updated = Signal(object)  # RunRecord
    run_removed = Signal(str)  # run id
    warning_changed = Signal(str)  # the newest live run's warning (disk low …), "" once none has one

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, RunsModel(), parent)
        self.proxy = ArchivedFilter(self)
        self.proxy.setSourceModel(self.model)
        self._in_flight: set[str] = set()
        self._warning = ""
        self._comparisons: dict[str, str] = {}  # run id → its config's comparison id, from GetRun
        # The runs are listed a page at a time, newest first: the cursor of the next older page ("" once
        # every run is held), the home's count of runs, and when the newest page was last asked for.
        self._next = ""
        self.total = 0
        self._asked_at = float("inf")
        self._fetching_more = False
        self.model.fetch_more = self._fetch_more

        self.view = QTableView()
        self.view.setObjectName("runsTable")
        self.view.setModel(self.proxy)
        self.view.setItemDelegate(RunCellDelegate(self.view))
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(ID, Qt.SortOrder.DescendingOrder)  # newest first
        self.view.verticalHeader().hide()
        self.view.setAlternatingRowColors(True)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(ID, QHeaderView.ResizeMode.Stretch)
        for column in (WORKER, ENV, STATE, PROGRESS, ELAPSED, SPS, INTERVENTIONS):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(PROGRESS, 170)

        # Short, as the buttons are: every one of them fits beside a form at the default 1400 px.
        self.show_archived_check = QCheckBox("Archived")
        self.show_archived_check.setToolTip("Show archived runs too")
        self.count_label = QLabel()
        self.count_label.setObjectName("runsCount")
        self.count_label.setToolTip("Older runs are listed as the table is scrolled to its end")
        self.count_label.hide()
        buttons = QHBoxLayout()
        buttons.addWidget(self.button_bar)
        buttons.addWidget(self.message_label, 1)
        buttons.addWidget(self.count_label)
        buttons.addWidget(self.show_archived_check)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.view, 1)

        self.show_archived_check.toggled.connect(self.set_show_archived)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.selectionModel().selectionChanged.connect(self._selection)
        self.view.selectionModel().currentRowChanged.connect(self._current)
        link.run_updated.connect(self._run_updated)
        link.run_removed.connect(self._run_removed)
        link.connection_changed.connect(self._connection)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._tick)
        self._timer.start()
        self._update_buttons()
        if link.connected:
            # Runs the link announced before this table existed come from a listing.
            self.refresh()

    # -------------------------------------------------------- feeding

    def _connection(self, connected: bool, _message: str) -> None:
        if connected:
            self.refresh()

    def refresh(self) -> None:
        """Re-list the newest page of runs from the daemon (adds what is missing, drops what was deleted
        meanwhile among the runs the page spans); older pages come as the view is scrolled."""
        asked_at = time.time()
        self._asked_at = asked_at
        newest = RunQuery(include_archived=True, descending=True, limit=RUNS_PAGE)

        def listed(page: RunPage) -> None:
            present = {run.run_id for run in page.runs}
            for run in page.runs:
                self._run_updated(run)
            # The page spans the runs created from its oldest one on (all of them when it is the last).
            oldest = page.runs[-1].created_at if page.next and page.runs else float("-inf")
            for run_id in self.model.run_ids():
                info = self.model.info(run_id)
                # A run created after the listing was asked for may legitimately be missing from it.
                if run_id not in present and info is not None and oldest <= info.created_at < asked_at:
                    self._run_removed(run_id)
            # Pages older than this one already listed (a reconnect's refresh): their cursor stands.
            held_older = any(
                info is not None and info.created_at < oldest
                for info in map(self.model.info, self.model.run_ids())
            )
            self._paged(page, keep_cursor=held_older)

        self.link.call(lambda client: client.list_page(newest), listed, self._error)

    def fetch(self, run_id: str, then: Callable[[str], None], missing: Callable[[str], None]) -> None:
        """``then(run_id)`` once the table holds the run: at once when it does, else after asking the
        daemon for it (a run older than the pages listed so far); ``missing(message)`` when it has none."""
        if self.model.row(run_id) is not None:
            then(run_id)
            return

        def found(detail: RunDetail) -> None:
            self._run_updated(detail.record)
            then(run_id)

        self.link.call(lambda client: client.get_run(run_id), found, missing)

    def _fetch_more(self) -> None:
        """The page of runs older than those listed (the view was scrolled to its end)."""
        after = self._next
        if not after or self._fetching_more:
            return
        self._fetching_more = True
        older = RunQuery(include_archived=True, descending=True, limit=RUNS_PAGE, after=after)

        def listed(page: RunPage) -> None:
            self._fetching_more = False
            for run in page.runs:
                self._run_updated(run)
            self._paged(page)

        def failed(message: str) -> None:
            self._fetching_more = False
            self._error(message)

        self.link.call(lambda client: client.list_page(older), listed, failed)

    def _paged(self, page: RunPage, keep_cursor: bool = False) -> None:
        if not keep_cursor:
            self._next = page.next
        self.total = page.total
        self.model.more = bool(self._next)
        self._update_count()

    def _update_count(self) -> None:
        """How many of the home's runs the table holds, while it holds only some."""
        held = self.model.rowCount()
        self.count_label.setText(f"{held:,} of {max(self.total, held):,} runs" if self._next else "")
        self.count_label.setVisible(bool(self._next))

    def _run_updated(self, info: RunRecord) -> None:
        if self.model.row(info.run_id) is None and info.created_at >= self._asked_at:
            self.total += 1  # a run the daemon's count did not know yet
        self.model.upsert(info)
        self._update_count()
        self._update_buttons()
        self._update_warning()
        self.run_updated.emit(info)

    def _run_removed(self, run_id: str) -> None:
        self._comparisons.pop(run_id, None)
        if self.model.row(run_id) is not None:
            self.total = max(0, self.total - 1)
        self.model.remove(run_id)
        self._update_count()
        self._update_buttons()
        self._update_warning()
        self.run_removed.emit(run_id)

    @property
    def warning(self) -> str:
        """What the table warns of now (the newest live run's warning, and how many runs have one)."""
        return self._warning

    def _update_warning(self) -> None:
        warnings = self.model.warnings()
        text = warnings[0] if warnings else ""
        if len(warnings) > 1:
            text += f" ({len(warnings)} runs warned)"
        if text != self._warning:
            self._warning = text
            self.warning_changed.emit(text)

    def _tick(self) -> None:
        self.model.tick()
        if not self.link.connected:
            return
        finals = 0
        for run_id in self.model.run_ids():
            row = self.model.row(run_id)
            if row is None or run_id in self._in_flight:
                continue
            if row.info.state.active:
                self._fetch(row)
            elif row.info.state.terminal and not row.final_fetched and finals < FINAL_FETCHES_PER_TICK:
                finals += 1
                self._fetch(row)

    def _fetch(self, row: RunRow) -> None:
        run_id, lane, cursor = row.info.run_id, row.info.lane, row.sps_cursor
        telemetry = RunDir(row.info.run_dir).telemetry_path if row.info.run_dir else None
        interventions_read = row.interventions_read
        self._in_flight.add(run_id)

        def fetch(client: DaemonClient) -> _Figures:
            detail = client.get_run(run_id)
            sps = None
            if lane == "analytics" and telemetry is not None:
                sps = _latest_metric(telemetry, SPS_TAG, cursor)
            # Once, when the run is found ended (its steps are all stored by then): not while it runs.
            interventions: tuple[bool, float | None] = (False, None)
            if detail.record.state.terminal and not interventions_read:
                rate = None
                if telemetry is not None and lane != "analytics":
                    rate = _read_telemetry(telemetry, TelemetryReader.intervention_rate)
                interventions = (True, rate)
            return detail, sps, interventions

        def done(result: _Figures) -> None:
            self._in_flight.discard(run_id)
            detail, sps, (read, rate) = result
            self._comparisons[run_id] = _comparison(detail.config_json)
            self.model.set_figures(run_id, detail, sps)
            if read:
                self.model.set_intervention_rate(run_id, rate)
            self._update_warning()

        def failed(message: str) -> None:
            self._in_flight.discard(run_id)
            current = self.model.row(run_id)
            if current is not None and current.info.state.terminal:
                current.final_fetched = True  # do not ask again and again for a run that cannot answer

        self.link.call(fetch, done, failed)

    # -------------------------------------------------------- selection

    def run_ids(self, visible_only: bool = False) -> list[str]:
        """The runs in the table (with ``visible_only``, those the archive filter shows)."""
        if not visible_only:
            return self.model.run_ids()
        return [str(self.proxy.index(r, 0).data(RUN_ID_ROLE)) for r in range(self.proxy.rowCount())]

    def info(self, run_id: str) -> RunRecord | None:
        return self.model.info(run_id)

    def comparison_of(self, run_id: str) -> str:
        return self._comparisons.get(run_id, "")

    def state_of(self, run_id: str) -> RunState | None:
        info = self.model.info(run_id)
        return None if info is None else info.state

    def selected_run_ids(self) -> list[str]:
        rows = self.view.selectionModel().selectedRows()
        return [str(index.data(RUN_ID_ROLE)) for index in sorted(rows, key=lambda i: i.row())]

    def current_run_id(self) -> str | None:
        index = self.view.currentIndex()
        return str(index.data(RUN_ID_ROLE)) if index.isValid() else None

    def select(self, run_ids: str | list[str]) -> None:
        """Select rows by run id (the first one becomes current)."""
        wanted = [run_ids] if isinstance(run_ids, str) else list(run_ids)
        selection = QItemSelection()
        first: QModelIndex | None = None
        for row in range(self.proxy.rowCount()):
            index = self.proxy.index(row, 0)
            if index.data(RUN_ID_ROLE) in wanted:
                selection.select(index, self.proxy.index(row, len(COLUMNS) - 1))
                if first is None or index.data(RUN_ID_ROLE) == wanted[0]:
                    first = index
        model = self.view.selectionModel()
        flags = model.SelectionFlag.ClearAndSelect | model.SelectionFlag.Rows
        model.select(selection, flags)
        if first is not None:
            model.setCurrentIndex(first, model.SelectionFlag.NoUpdate)

    def set_show_archived(self, show: bool) -> None:
        if self.show_archived_check.isChecked() != show:
            self.show_archived_check.setChecked(show)  # comes back here through toggled
            return
        self.proxy.set_show_archived(show)

    def _selection(self, *_args: Any) -> None:
        self._update_buttons()
        self.selection_changed.emit(self.selected_run_ids())

    def _current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.run_selected.emit(str(current.data(RUN_ID_ROLE)))

    def _context_menu(self, position: QPoint) -> None:
        menu = self.context_menu()
        if menu is not None:
            menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            menu.popup(self.view.viewport().mapToGlobal(position))

    def closeEvent(self, event: Any) -> None:
        self._timer.stop()
        super().closeEvent(event)
