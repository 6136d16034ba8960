"""Sweeps from the window: Run ▸ Start sweep… submits the form's spec to a real daemon, which plays
its trials (real CleanRL PPO runs); Save spec… writes the file `gym-gui sweep start` takes; the
Optuna tab's Stop sweep stops a running sweep as `gym-gui sweep stop` does."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLineEdit
from pytestqt.qtbot import QtBot

from gym_gui.core.records import RunRecord, SweepRecord
from gym_gui.core.states import SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.sweeps.spec import load_spec, parse_spec
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.sweep_form.view import SweepDialog
from gym_gui.ui.tabs.optuna import OptunaTab
from tests.ui.test_forms_and_runs import DESCRIBE_TIMEOUT
from tests.ui.test_optuna_tab import PPO_BASE

SWEEP_TIMEOUT = 600_000  # ms: two PPO trials of 1024 steps, each importing torch in its own process


def _trial_runs(window: MainWindow, sweep_id: str) -> list[RunRecord]:
    """The sweep's trial runs as the window's runs table holds them (kept current by the daemon's stream)."""
    runs = map(window.runs.info, window.runs.model.run_ids())
    return [run for run in runs if run is not None and run.sweep_id == sweep_id]


def _open_sweep_form(qtbot: QtBot, window: MainWindow) -> SweepDialog:
    """Run ▸ Start sweep…, the CleanRL Worker chosen, PPO's parameters offered."""
    run_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    action = next(a for a in run_menu.actions() if a.text() == "Start sweep…")
    assert action.shortcut() == QKeySequence("Ctrl+Shift+Return")
    action.trigger()
    dialog = window.sweep_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.kind_combo.setCurrentIndex(dialog.kind_combo.findData("cleanrl"))
    form = dialog.form
    assert form is not None and form.worker_kind == "cleanrl"
    qtbot.waitUntil(
        lambda: (
            form.description is not None and form.description.variant == "ppo" and bool(dialog.space.rows)
        ),
        timeout=DESCRIBE_TIMEOUT,
    )
    return dialog


def test_the_sweep_form_starts_a_sweep_the_daemon_plays_and_saves_the_spec_the_cli_takes(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, tmp_path: Path
) -> None:
    dialog = _open_sweep_form(qtbot, window)
    form = dialog.form
    assert form is not None and not form.submit_button.isVisible()  # Start sweep submits, not the form
    # The space offers the script's own parameters, not those the base run's fields set.
    assert "learning-rate" in dialog.space.rows and "total-timesteps" not in dialog.space.rows

    # Nothing ticked: Start says which field, and nothing is sent.
    qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    assert dialog.error_label.text() == "sweep spec: field 'space': tick at least one parameter to search"
    assert dialog.submitted is None

    # The base run: PPO on CartPole, 1024 steps of 64-step rollouts.
    form.set_env("CartPole-v1")
    form.seed_spin.setValue(3)
    form.budget_edit.setText("1024")
    steps = form.param_editor("num-steps")
    assert isinstance(steps, QLineEdit)
    steps.setText("64")
    # The search: the learning rate on a log scale, 2 random trials at once.
    row = dialog.space.rows["learning-rate"]
    row.check.setChecked(True)
    row.low_edit.setText("1e-4")
    row.high_edit.setText("fast")
    assert row.high_edit.property("invalid") is True and "expected a number" in row.high_edit.toolTip()
    row.high_edit.setText("1e-2")
    assert row.high_edit.property("invalid") is False
    row.log_check.setChecked(True)
    dialog.window_edit.setText("5")
    dialog.sampler_combo.setCurrentText("random")
    dialog.sampler_seed_edit.setText("0")
    dialog.trials_edit.setText("2")
    dialog.parallel_edit.setText("2")

    saved = dialog.save_spec(tmp_path / "sweep.yaml")
    assert saved is not None and load_spec(tmp_path / "sweep.yaml") == saved
    assert "gym-gui sweep start" in dialog.status_label.text()

    with qtbot.waitSignal(dialog.sweep_started, timeout=120_000) as started:
        qtbot.mouseClick(dialog.start_button, Qt.MouseButton.LeftButton)
    record = started.args[0]
    assert isinstance(record, SweepRecord) and record.state is SweepState.RUNNING
    assert f"sweep {record.sweep_id} started" in dialog.status_label.text()
    # What was sent is what the file holds, and what the daemon keeps (with its storage and study).
    assert dialog.submitted == saved
    kept = parse_spec(record.spec)
    assert kept.model_copy(update={"storage": None, "study": None}) == saved
    assert saved.config.params == {"num-steps": 64} and saved.config.budget.timesteps == 1024
    assert saved.config.seed == 3 and saved.config.algorithm == "ppo"
    assert saved.model_dump(include={"space", "trials", "parallel"}) == {
        "space": {"learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True, "step": None}},
        "trials": 2,
        "parallel": 2,
    }

    # The daemon plays both trials: their runs arrive in the runs table and end there.
    qtbot.waitUntil(
        lambda: (
            len(runs := _trial_runs(window, record.sweep_id)) == 2 and all(r.state.terminal for r in runs)
        ),
        timeout=SWEEP_TIMEOUT,
    )
    qtbot.waitUntil(lambda: client.get_sweep(record.sweep_id).record.state.ended, timeout=60_000)
    assert client.get_sweep(record.sweep_id).record.state is SweepState.COMPLETED


def test_the_optuna_tabs_stop_button_stops_a_running_sweep(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    # Trials long enough to be running when Stop is pressed; one at a time.
    spec = {
        "config": {**PPO_BASE, "budget": {"timesteps": 200_000}},
        "space": {"learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}},
        "objective": {"metric": "charts/episodic_return"},
        "trials": 2,
    }
    sweep = client.start_sweep(json.dumps(spec))

    qtbot.waitUntil(lambda: bool(_trial_runs(window, sweep.sweep_id)), timeout=60_000)
    window.runs.select(_trial_runs(window, sweep.sweep_id)[0].run_id)
    qtbot.waitUntil(lambda: any(isinstance(t, OptunaTab) for t in window.run_view.tab_list()), timeout=30_000)
    tab = next(t for t in window.run_view.tab_list() if isinstance(t, OptunaTab))
    window.run_view.tabs.setCurrentWidget(tab)
    qtbot.waitUntil(lambda: tab.stop_button.isEnabled(), timeout=30_000)
    assert tab.sweep_label.text() == f"sweep {sweep.sweep_id}: RUNNING"

    qtbot.mouseClick(tab.stop_button, Qt.MouseButton.LeftButton)
    assert not tab.stop_button.isEnabled()
    # The state `gym-gui sweep stop` leads to: STOPPED once the running trial's run is cancelled.
    qtbot.waitUntil(lambda: tab.sweep is not None and tab.sweep.state is SweepState.STOPPED, timeout=120_000)
    assert tab.sweep_label.text() == f"sweep {sweep.sweep_id}: STOPPED: stopped by user"
    assert not tab.stop_button.isEnabled()
    record = client.get_sweep(sweep.sweep_id).record
    assert (record.state, record.reason) == (SweepState.STOPPED, "stopped by user")
    assert all(run.state.terminal for run in client.list_runs() if run.sweep_id == sweep.sweep_id)
