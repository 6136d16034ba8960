"""AgentPanes: beside the environment view, what a step says of the agent that took it.

Four panes, each shown once a run's steps carry its payload keys (``payloads.py``): a value map
(the largest action value of each state over the grid, with the greedy action's arrow:
``value_map.py``), the step's action values, a BDI agent's intention and beliefs, and a language
model's conversation (``conversation.py``).
The Live and Replay tabs offer steps and call :meth:`AgentPanes.refresh` at their own pace; the
panes read the rest (the run's spaces and events, the steps the table is built from, the step
that holds a call's record) from the run's telemetry database off the GUI thread.
"""

from __future__ import annotations

import html
import logging
from collections import OrderedDict
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.records import RunRecord
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.background import Background
from gym_gui.ui.panes.conversation import ConversationPane
from gym_gui.ui.panes.payloads import (
    ActionValues,
    CallRecord,
    Deliberation,
    RunContext,
    StepKey,
    StepPayload,
    TableWrites,
    ValueTable,
    action_labels,
    action_moves,
    parse_step,
    read_context,
    read_step,
    read_table_writes,
)
from gym_gui.ui.panes.value_map import ValueMapView
from gym_gui.ui.tables import read_only_item, row_table

log = logging.getLogger(__name__)

# Steps read from storage per read of the table: a long run's back-fill arrives over a few refreshes.
TABLE_READ_LIMIT = 50_000
# Refreshes between two reads of the run's events once it started (a start table, a prompt prefix).
CONTEXT_EVERY = 10
# Call records kept for the later steps of their plans.
CALL_RECORDS = 512
# The panes' share of their column's height, when shown together.
PANE_WEIGHTS = (3, 2, 2, 5)  # value map, action values, intention and beliefs, conversation


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(f"<b>{html.escape(title)}</b>")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box


class ActionValuesPane(QWidget):
    """The step's action values before and after its update, the action taken marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.table: QTableWidget = row_table(["action", "Q before", "Q after", "change"])
        self.table.setObjectName("actionValues")
        rows = self.table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(rows.fontMetrics().height() + 6)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        self.values: ActionValues | None = None

    def show_values(self, step: StepPayload, values: ActionValues | None, labels: list[str]) -> None:
        self.values = values
        if values is None:
            self.summary.setText(f"Step {step.step} of episode {step.episode} carries no action values.")
            self.table.setRowCount(0)
            return
        parts = [f"episode {step.episode}, step {step.step}"]
        if values.state is not None:
            parts.append(f"state {values.state}")
        if values.epsilon is not None:
            parts.append(f"ε {values.epsilon:.3g}")
        if values.explored is not None:
            parts.append("explored (random action)" if values.explored else "greedy action")
        if values.td_error is not None:
            parts.append(f"TD error {values.td_error:.3g}")
        self.summary.setText(" · ".join(parts))
        try:
            taken = int(step.action)
        except ValueError:
            taken = -1
        self.table.setRowCount(len(values.after))
        bold = QFont(self.table.font())
        bold.setBold(True)
        for a, (before, after) in enumerate(zip(values.before, values.after, strict=True)):
            label = labels[a] if a < len(labels) else str(a)
            cells = [
                read_only_item(("▶ " if a == taken else "") + label),
                read_only_item(f"{before:.4f}", align_right=True),
                read_only_item(f"{after:.4f}", align_right=True),
                read_only_item(f"{after - before:+.4f}", align_right=True),
            ]
            for column, item in enumerate(cells):
                if a == taken:
                    item.setFont(bold)
                self.table.setItem(a, column, item)


class DeliberationPane(QWidget):
    """A BDI agent's intention (its goals, outermost first) and its beliefs when it took the step."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.intention = QLabel()
        self.intention.setWordWrap(True)
        self.intention.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.beliefs = QPlainTextEdit(readOnly=True)
        self.beliefs.setObjectName("beliefs")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.intention)
        layout.addWidget(self.beliefs, 1)

    def show_deliberation(self, deliberation: Deliberation | None) -> None:
        if deliberation is None:
            self.intention.setText("This step carries no beliefs or intention.")
            self.beliefs.setPlainText("")
            return
        goals = " → ".join(f"!{goal}" for goal in deliberation.intention) or "none"
        self.intention.setText(f"Intention: {goals}")
        self.beliefs.setPlainText("\n".join(deliberation.beliefs))


class AgentPanes(QWidget):
    """The panes of the attached run: each appears once a step carries its keys and stays for the run.

    ``offer`` records the latest step to show (any rate, no work); ``show_offered`` shows it;
    ``refresh`` reads what storage holds new and redraws the value map when its table changed. With ``follow_table`` (the
    Live tab) the value map follows the run's stored steps; without it (Replay) it is not shown.
    """

    def __init__(self, *, follow_table: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.follow_table = follow_table
        self.value_map = ValueMapView()
        self.values = ActionValuesPane()
        self.deliberation = DeliberationPane()
        self.conversation = ConversationPane()
        self._boxes: dict[QWidget, QWidget] = {
            self.value_map: _titled("Value map", self.value_map),
            self.values: _titled("Action values", self.values),
            self.deliberation: _titled("Intention and beliefs", self.deliberation),
            self.conversation: _titled("Conversation", self.conversation),
        }
        self._splitter = QSplitter(Qt.Orientation.Vertical)
        for index, box in enumerate(self._boxes.values()):
            box.hide()
            self._splitter.addWidget(box)
            self._splitter.setStretchFactor(index, PANE_WEIGHTS[index])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._splitter)
        self._background = Background(self, workers=2, name="agent-panes")
        self._generation = 0
        self._path: Path | None = None
        self._env_id = ""
        self._reset()
        self.hide()

    def _reset(self) -> None:
        self._context = RunContext()
        self._table: ValueTable | None = None
        self._table_changed = False
        self._offered: tuple[int, int, str, str] | None = None
        self._shown: StepPayload | None = None
        self._records: OrderedDict[StepKey, CallRecord] = OrderedDict()
        self._reading_context = self._reading_table = False
        self._reading_steps: set[StepKey] = set()
        self._refreshes = 0

    # ------------------------------------------------------------ what tests read

    @property
    def shown(self) -> StepPayload | None:
        """The step the panes show."""
        return self._shown

    @property
    def table(self) -> ValueTable | None:
        """The run's table of action values as read so far (Live only)."""
        return self._table

    def pane_visible(self, pane: QWidget) -> bool:
        return not self._boxes[pane].isHidden()

    # ------------------------------------------------------------ the run

    def attach(self, run: RunRecord) -> None:
        self.detach()
        self._path = RunDir(run.run_dir).telemetry_path if run.run_dir else None
        self._env_id = run.env_id

    def detach(self) -> None:
        self._generation += 1
        self._path = None
        self._reset()
        for box in self._boxes.values():
            box.hide()
        self.value_map.best = self.value_map.greedy = self.value_map.grid = None
        self.conversation.shown = None
        self.hide()

    def offer(self, episode: int, step: int, action: str, info: str) -> None:
        """The step to show at the next refresh (the latest offer wins)."""
        self._offered = (episode, step, action, info)

    def refresh(self, grid: dict[str, Any] | None = None) -> None:
        """Read what storage holds new (the run's events, its steps for the value map), redraw the map.

        ``grid`` is the grid description the environment view shows (the value map's cells).
        """
        if self._path is None:
            return
        self._refreshes += 1
        if not self._context.started or self._refreshes % CONTEXT_EVERY == 0:
            self._read_context()
        if grid is not None and self._table is not None:
            self._show_value_map(grid)
        if self.follow_table and self._table is not None:
            self._read_table()

    def show_offered(self, grid: dict[str, Any] | None = None) -> None:
        """Show the latest step offered, if it is not shown yet (the Live tab: when its picture is drawn,
        ``grid`` being that picture)."""
        if grid is not None and self._table is not None:
            self._show_value_map(grid)
        offered, self._offered = self._offered, None
        if offered is not None and (self._shown is None or self._shown.key != offered[:2]):
            self._show(parse_step(*offered))

    # ------------------------------------------------------------ showing

    def _reveal(self, pane: QWidget) -> None:
        box = self._boxes[pane]
        if not box.isHidden():
            return
        box.show()
        unit = max(1, self._splitter.height()) / sum(PANE_WEIGHTS)
        self._splitter.setSizes(
            [
                int(weight * unit) if not b.isHidden() else 0
                for weight, b in zip(PANE_WEIGHTS, self._boxes.values(), strict=True)
            ]
        )
        if self.isHidden():
            self.show()
            # A column that appears takes an equal share of the tab's width beside the environment view.
            parent = self.parentWidget()
            if isinstance(parent, QSplitter):
                shown = [
                    not widget.isHidden() for widget in map(parent.widget, range(parent.count())) if widget
                ]
                width = max(1, parent.width()) // max(1, sum(shown))
                parent.setSizes([width if visible else 0 for visible in shown])

    def _show(self, step: StepPayload) -> None:
        self._shown = step
        if step.values is not None or self.pane_visible(self.values):
            labels = action_labels(self._env_id, len(step.values.after)) if step.values is not None else []
            self.values.show_values(step, step.values, labels)
            self._reveal(self.values)
        if step.deliberation is not None or self.pane_visible(self.deliberation):
            self.deliberation.show_deliberation(step.deliberation)
            self._reveal(self.deliberation)
        if step.call is not None or self.pane_visible(self.conversation):
            self._show_call(step)
            self._reveal(self.conversation)

    def _show_call(self, step: StepPayload) -> None:
        record: CallRecord | None = None
        key = step.call_step
        if step.call is not None and key is not None:
            record = step.call.record or self._records.get(key)
            if record is not None:
                self._remember(key, record)
                if record.prefix and record.prefix not in self._context.prefixes:
                    self._read_context()
            else:
                self._read_step(key)
        self.conversation.show_call(step, record, self._context)

    def _remember(self, key: StepKey, record: CallRecord) -> None:
        self._records[key] = record
        self._records.move_to_end(key)
        while len(self._records) > CALL_RECORDS:
            self._records.popitem(last=False)

    def _show_value_map(self, grid: dict[str, Any]) -> None:
        table = self._table
        assert table is not None
        rows, cols = grid.get("rows"), grid.get("cols")
        if not isinstance(rows, int) or not isinstance(cols, int) or rows * cols != table.shape[0]:
            return  # the states are not the grid's cells (Taxi): no map
        if grid is not self.value_map.grid:
            self.value_map.set_grid(grid)
        if self._table_changed or self.value_map.best is None:
            self._table_changed = False
            self.value_map.set_table(table, action_moves(self._env_id))
        self._reveal(self.value_map)

    # ------------------------------------------------------------ reading storage (off the GUI thread)

    def _current(self, generation: int) -> bool:
        return generation == self._generation and self._path is not None

    def _read_context(self) -> None:
        path = self._path
        if path is None or self._reading_context:
            return
        self._reading_context = True
        generation, known = self._generation, self._context

        def done(context: RunContext) -> None:
            if not self._current(generation):
                return
            self._reading_context = False
            prefixes_before = len(self._context.prefixes)
            self._context = context
            if context.shape is not None and self.follow_table:
                if self._table is None:
                    self._table = ValueTable(context.shape, context.start)
                    self._table_changed = True
                elif context.start is not None and self._table.rebase(context.start):
                    self._table_changed = True
            if len(context.prefixes) != prefixes_before and self._shown is not None:
                self._show(self._shown)

        self._background.run(
            lambda: read_context(path, known), done, lambda message: self._failed(generation, message)
        )

    def _read_table(self) -> None:
        path, table = self._path, self._table
        if path is None or table is None or self._reading_table:
            return
        self._reading_table = True
        generation, shape, after = self._generation, table.shape, table.through

        def done(writes: TableWrites) -> None:
            if not self._current(generation) or self._table is None:
                return
            self._reading_table = False
            if self._table.apply(writes):
                self._table_changed = True

        self._background.run(
            lambda: read_table_writes(path, shape, after, TABLE_READ_LIMIT),
            done,
            lambda message: self._failed(generation, message),
        )

    def _read_step(self, key: StepKey) -> None:
        path = self._path
        if path is None or key in self._reading_steps:
            return
        self._reading_steps.add(key)
        generation = self._generation

        def done(step: StepPayload | None) -> None:
            if not self._current(generation):
                return
            self._reading_steps.discard(key)
            record = step.call.record if step is not None and step.call is not None else None
            if record is None:
                return
            self._remember(key, record)
            shown = self._shown
            if shown is not None and shown.call_step == key:
                self._show(shown)

        self._background.run(
            lambda: read_step(path, key), done, lambda message: self._failed(generation, message)
        )

    def _failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        # Storage may be busy (a checkpoint of the WAL): the next refresh reads again.
        self._reading_context = self._reading_table = False
        self._reading_steps.clear()
        log.info("agent panes: %s", message)
