"""The Arena in the window, on a real daemon: panes on one seed stepped lock-step with a person's pane,
their runs grouped and opened together, a batch's table and box plot, an operator process killed."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
from gym_gui_sdk.operator import OperatorCard, OperatorProcess
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.play.batch import EvaluationBatch, summary_cells
from gym_gui.play.operators import OperatorChoice, OperatorRef, Operators
from gym_gui.play.seat import Seeds
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.comparison import EPISODE_TOTALS
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.arena.model import ArenaSetup, PaneState
from gym_gui.ui.arena.side_by_side import SideBySide
from gym_gui.ui.main_window import MainWindow
from gym_gui.workers import OperatorPlan, worker_catalog
from workers.spade_bdi_worker.tests.conftest import bdi_config, run_to_end

# An operator process that always moves right (Taxi's action 2 is east, FrozenLake's right), as a kind's
# operator serves one; with DIE_AT_EPISODE=N its process ends as episode N begins.
EASTWARD = """
import os, sys
from gym_gui_sdk.operator import Decision, OperatorCard, serve

class Eastward:
    card = OperatorCard(name="eastward", kind="test")
    begun = 0

    def begin(self, slot, seed):
        self.begun += 1
        if self.begun == int(os.environ.get("DIE_AT_EPISODE", 0)):
            os._exit(3)

    def act(self, turns):
        return [Decision(2) for _ in turns]

    def end(self, slot):
        pass

    def close(self):
        pass

sys.exit(serve(Eastward))
"""


def steps_of(side: SideBySide, *panes: int) -> list[int]:
    return [outcome.step for i in panes if (outcome := side.panes[i].outcome) is not None]


def seated(window: MainWindow, qtbot: QtBot, operators: list[str]) -> None:
    """Show the Arena, wait for the operators' listing to offer ``operators``, and seat them."""
    arena = window.show_arena()
    listed = lambda: {entry.ref.text for entry in arena.listing}  # noqa: E731
    qtbot.waitUntil(lambda: set(operators) - {"human"} <= listed(), timeout=30_000)
    arena.seats.set_operators(operators)
    assert arena.seats.operators() == operators


def test_an_arena_of_four_starts_from_one_observation_steps_lock_step_and_groups_its_runs(
    window: MainWindow, qtbot: QtBot, client: DaemonClient
) -> None:
    # A Spade BDI Q-table learned on the lake (seconds, once its bundle is built), beside two random
    # baselines and a person.
    trained = run_to_end(client, bdi_config(episodes=200))
    assert trained.state is RunState.COMPLETED, trained.reason
    q_table = trained.run_id
    qtbot.waitUntil(lambda: window.runs.info(q_table) is not None, timeout=30_000)
    seated(window, qtbot, ["random", q_table, "random", "human"])
    arena = window.arena
    offered = {name: usable for name, usable, _tip in arena.seats.offered()}
    assert offered["random"] and offered["human"] and offered[q_table]
    side = arena.side_by_side
    side.episodes.setValue(2)
    arena.seed.setValue(7)
    side.start_from_setup()
    qtbot.waitUntil(lambda: side.lock is not None and side.lock.idle, timeout=30_000)
    assert side.lock is not None and side.lock.states == [PaneState.PLAYING] * 4
    firsts = [outcome for outcome in side.first_outcomes if outcome is not None]
    assert len(firsts) == 4
    assert [int(o.observation) for o in firsts] == [int(firsts[0].observation)] * 4
    assert [o.grid for o in firsts] == [firsts[0].grid] * 4
    assert all(pane.env_view.grid is not None or pane.env_view.has_pending for pane in side.panes)

    # The operators wait for the person: Step all does nothing until a key is pressed.
    side.step_all()
    assert side.lock.rounds == 0 and "Your move" in side.message.text()
    for round_number in range(1, 4):
        if side.lock.states[3] is not PaneState.PLAYING:
            break
        if round_number == 1:
            qtbot.keyClick(side, Qt.Key.Key_Down)  # the key itself, as the person presses it
        else:
            side.press("Down")
        qtbot.waitUntil(lambda n=round_number: side.lock.rounds == n and side.lock.idle, timeout=30_000)
        steps = [pane.outcome.step for pane in side.panes if pane.outcome]
        # Lock-step: every pane has taken each round's step, or its episode ended on an earlier one.
        for pane in side.panes:
            assert pane.outcome is not None
            assert pane.outcome.step == round_number or (
                pane.outcome.done and pane.outcome.step < round_number
            )
        assert max(steps) == round_number

    # The person plays their episodes out (Down, on a slippery lake, ends one); the operators with
    # them; once every pane's episode is over, all reset together on the next seed.
    second_starts: list[int] = []
    while not side.lock.finished:
        shown = [pane.outcome for pane in side.panes if pane.outcome is not None]
        if not second_starts and all(o.episode == 1 and o.step == 0 for o in shown):
            second_starts = [int(o.observation) for o in shown]
        if side.lock.states[3] is PaneState.PLAYING:
            side.press("Down")
        else:
            side.step_all()
        rounds = side.lock.rounds
        qtbot.waitUntil(lambda r=rounds: side.lock.rounds >= r and side.lock.idle, timeout=30_000)
    run_ids = [seat.run_id for seat in side.seats if seat is not None]
    assert len(run_ids) == 4
    for run_id in run_ids:
        qtbot.waitUntil(lambda r=run_id: client.get_run(r).record.state.terminal, timeout=30_000)
    records = [client.get_run(run_id).record for run_id in run_ids]
    assert [r.state.value for r in records] == ["COMPLETED"] * 4
    assert [r.worker for r in records] == ["operator", "operator", "operator", "human"]
    assert RunDir(records[1].run_dir).read_config().params["operator"] == q_table
    assert {RunDir(r.run_dir).read_config().comparison for r in records} == {side.comparison}
    board = side.scoreboard
    assert board is not None
    assert second_starts == [second_starts[0]] * 4
    assert [len(board.episodes(i)) for i in range(4)] == [2, 2, 2, 2]
    assert [row for row, _cells in board.rows()] == ["episode 1", "episode 2", "total", "fallbacks"]
    assert side.board.rowCount() == 4 and side.board.columnCount() == 4
    for record in records:
        reader = TelemetryReader(RunDir(record.run_dir).telemetry_path)
        try:
            assert [(e.episode, e.seed) for e in reader.episodes()] == [(0, 7), (1, 8)]
        finally:
            reader.close()

    # The runs table's menu opens the comparison of a run that has one: Compare and Replay.
    qtbot.waitUntil(lambda: window.runs.comparison_of(run_ids[3]) == side.comparison, timeout=30_000)
    window.runs.select(run_ids[3])
    menu = window.runs.context_menu()
    assert menu is not None
    entry = next(action for action in menu.actions() if action.text() == "Open its comparison")
    entry.trigger()
    qtbot.waitUntil(lambda: sorted(window.runs.selected_run_ids()) == sorted(run_ids), timeout=30_000)
    qtbot.waitUntil(
        lambda: window.compare_dock.isVisible() and EPISODE_TOTALS in window.compare.tags(), timeout=30_000
    )
    assert window.compare.tag.currentText() == EPISODE_TOTALS
    qtbot.waitUntil(lambda: set(window.compare.curves()) == set(run_ids), timeout=30_000)
    assert window.run_view.tabs.tabText(window.run_view.tabs.currentIndex()) == "Replay"
    # ... and Replay together, a pane per operator on episode 0; the arena's own button does the same.
    together = window.replay_together
    titles = ["random", f"q-table ({q_table})", "random", "human"]
    expected = {run_id: f"{title} — run {run_id}" for run_id, title in zip(run_ids, titles, strict=True)}
    for opened_by in ("runs table", "arena"):
        if opened_by == "arena":
            window.replay_together_dock.hide()
            side.compare_button.click()
        qtbot.waitUntil(window.replay_together_dock.isVisible, timeout=30_000)
        qtbot.waitUntil(lambda: together.shown is not None and not together.reading, timeout=30_000)
        assert together.episode == 0
        assert {pane.run.run_id: pane.title.text() for pane in together.panes} == expected


def test_a_batch_shows_the_numbers_the_cli_gives_and_a_box_per_operator(
    window: MainWindow, qtbot: QtBot, client: DaemonClient, home: Home
) -> None:
    seated(window, qtbot, ["random", "random"])
    arena = window.arena
    arena.parts.setCurrentWidget(arena.batch)
    batch = arena.batch
    batch.episodes.setValue(12)
    arena.seed.setValue(3)
    batch.run_from_setup()
    assert batch.running
    qtbot.waitUntil(lambda: not batch.running, timeout=120_000)
    assert "Batch over" in batch.progress.text(), batch.progress.text()

    operators = Operators(home, worker_catalog(), client.list_runs)
    choices = [operators.choose("random", "FrozenLake-v1") for _ in range(2)]
    direct = EvaluationBatch(client, choices, "FrozenLake-v1", 12, 3, seeds=Seeds.PROCEDURAL).run()
    shown = batch.cells()
    assert [row[:5] for row in shown] == [[r.name, *summary_cells(r)] for r in direct]
    assert [row[5] for row in shown] == ["0", "0"]  # fallbacks
    assert all(row[6] for row in shown)  # each operator's run
    assert len(batch.boxes) == 2
    assert all(box in batch.plot.items for box in batch.boxes)
    assert [box.figures.median for box in batch.boxes] == [float(np.median(r.returns)) for r in direct]
    records = [client.get_run(row[6]).record for row in shown]
    assert {RunDir(r.run_dir).read_config().comparison for r in records} == {batch.comparison}

    # A person cannot sit in a batch: refused in one line, nothing started.
    arena.seats.set_operators(["random", "human"])
    batch.run_from_setup()
    qtbot.waitUntil(lambda: not batch.running, timeout=30_000)
    assert batch.progress.text() == "a batch plays headless: a person takes a seat in the window's Arena"


def eastward_operator(home: Home, tmp_path: Path, **env: str) -> OperatorChoice:
    """The eastward operator as a kind's plugin would plan it: its own process, from an argument list."""
    script = tmp_path / "eastward.py"
    script.write_text(EASTWARD)
    card = OperatorCard(name="eastward", kind="test")
    plan = OperatorPlan(card=card, argv=[sys.executable, str(script)], env=env, secrets=())
    return OperatorChoice(OperatorRef("eastward"), card, plan, home.operators_dir)


def test_a_killed_operator_marks_its_pane_and_fails_its_run_while_the_others_go_on(
    window: MainWindow, qtbot: QtBot, client: DaemonClient, home: Home, tmp_path: Path
) -> None:
    eastward = eastward_operator(home, tmp_path)
    arena = window.show_arena()
    side = arena.side_by_side
    # Taxi: a random episode lasts its 200 steps, so every pane is still playing when one is killed.
    setup = ArenaSetup(("random", "eastward", "random"), "Taxi-v4", 5, episodes=1)
    side.start(setup, Seeds.FIXED, chosen={1: eastward})
    qtbot.waitUntil(lambda: side.lock is not None and side.lock.idle, timeout=60_000)
    assert side.lock is not None and side.lock.states == [PaneState.PLAYING] * 3
    qtbot.keyClick(side, Qt.Key.Key_N)  # Step all's key
    qtbot.waitUntil(lambda: side.lock.rounds == 1 and side.lock.idle, timeout=30_000)
    seat = side.seats[1]
    assert seat is not None and seat.operator is not None
    assert isinstance(seat.operator, OperatorProcess)
    os.kill(seat.operator.pid, signal.SIGKILL)
    side.step_all()
    qtbot.waitUntil(lambda: side.lock.rounds == 2 and side.lock.idle, timeout=30_000)
    assert side.lock.states == [PaneState.PLAYING, PaneState.FAILED, PaneState.PLAYING]
    assert side.panes[1].status.text().startswith("out: operator eastward failed: ")
    assert steps_of(side, 0, 2) == [2, 2]
    side.step_all()
    qtbot.waitUntil(lambda: side.lock.rounds == 3 and side.lock.idle, timeout=30_000)
    assert steps_of(side, 0, 2) == [3, 3]
    assert side.scoreboard is not None and side.scoreboard.columns[1] == "eastward (out)"
    record = client.wait_for_end(seat.run_id, timeout=30)
    assert record.state.value == "FAILED"
    assert "operator eastward failed" in record.reason
    assert not side.panes[0].failed and not side.panes[2].failed
    others = [s.run_id for s in (side.seats[0], side.seats[2]) if s is not None]
    side.stop()
    # Left in the middle of their only episode: what was played is stored, the runs CANCELLED.
    assert [client.wait_for_end(run_id, timeout=30).state.value for run_id in others] == ["CANCELLED"] * 2


def test_free_running_steps_all_at_the_envs_rate_until_every_episode_is_played(
    window: MainWindow, qtbot: QtBot, client: DaemonClient
) -> None:
    seated(window, qtbot, ["random", "random"])
    side = window.arena.side_by_side
    side.episodes.setValue(2)
    side.set_free_running(True)
    side.start_from_setup()
    qtbot.waitUntil(lambda: side.lock is not None and side.lock.rounds > 0, timeout=30_000)
    assert side.clock.isActive() and side.clock.interval() == 250  # FrozenLake renders at 4 frames/s
    qtbot.waitUntil(lambda: side.lock is not None and side.lock.finished, timeout=120_000)
    assert not side.clock.isActive() and not side.free_button.isChecked()
    assert side.message.text().startswith("Every episode played")
    for seat in side.seats:
        assert seat is not None
        assert client.wait_for_end(seat.run_id, timeout=30).state.value == "COMPLETED"


def test_an_operator_that_dies_as_the_panes_reset_is_out_and_the_others_play_their_next_episode(
    window: MainWindow, qtbot: QtBot, client: DaemonClient, home: Home, tmp_path: Path
) -> None:
    side = window.show_arena().side_by_side
    setup = ArenaSetup(("random", "eastward"), "FrozenLake-v1", 2, episodes=2)
    side.start(setup, Seeds.PROCEDURAL, chosen={1: eastward_operator(home, tmp_path, DIE_AT_EPISODE="2")})
    qtbot.waitUntil(lambda: side.lock is not None and side.lock.idle, timeout=60_000)
    seats = list(side.seats)
    lock = side.lock
    assert lock is not None and all(seat is not None for seat in seats)
    # Both play their first episode out; at the reset eastward's process ends as episode 2 begins.
    while not lock.finished:
        side.step_all()
        rounds = lock.rounds
        qtbot.waitUntil(lambda r=rounds: lock.rounds == r and lock.idle, timeout=30_000)
    assert lock.states == [PaneState.DONE, PaneState.FAILED]
    assert side.panes[1].status.text().startswith("out: operator eastward failed: ")
    random_run, eastward_run = (seat.run_id for seat in seats if seat is not None)
    failed = client.wait_for_end(eastward_run, timeout=30)
    assert failed.state.value == "FAILED" and "operator eastward failed" in failed.reason
    assert client.wait_for_end(random_run, timeout=30).state.value == "COMPLETED"
    assert side.scoreboard is not None and len(side.scoreboard.episodes(0)) == 2
