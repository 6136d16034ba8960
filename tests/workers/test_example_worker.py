"""The out-of-tree example worker (examples/tabular_q_worker) installed with pip into a virtual environment
of its own, then used as a user would: its own tests, `gym-gui workers` and `gym-gui train` against a
daemon that interpreter started, and the window's roster, form, tabs and controls."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QLineEdit
from pytestqt.qtbot import QtBot

from gym_gui.core.records import ArtifactRecord
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui import presenters
from gym_gui.ui.control_panel import AGENT
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.settings import Settings
from gym_gui.ui.tabs.charts import ChartsTab
from gym_gui.workers import worker_catalog
from tests.fixtures import REPO
from tests.support import assert_one_line_error, gym_gui, kill_run_workers, stop_daemon, wait_until
from tests.ui.test_scenario import click, click_run, open_tab, type_into

EXAMPLE = REPO / "examples" / "tabular_q_worker"
KIND = "tabular_q"
PARAMETERS = ["alpha", "gamma", "epsilon", "epsilon_decay", "epsilon_min"]
EPISODES = 300
GAMMA = 0.95


@dataclass(frozen=True)
class ExampleVenv:
    root: Path
    python: Path
    site_packages: Path


@pytest.fixture(scope="module")
def example_venv(tmp_path_factory: pytest.TempPathFactory) -> ExampleVenv:
    """A fresh venv with the example installed as its README says (`pip install -e`), once per module.

    gym_gui and its dependencies come from this interpreter's environment through a .pth file, so
    nothing is downloaded: ``site.addsitedir`` (not a plain path line) also reads the .pth files of
    gym_gui's own editable installs there. pip and setuptools come the same way, hence
    ``--no-build-isolation``; ``--no-index`` proves no index is asked.
    """
    root = tmp_path_factory.mktemp("example") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    app_site_packages = sysconfig.get_path("purelib")
    (site_packages / "gym_gui_app.pth").write_text(f"import site; site.addsitedir({app_site_packages!r})\n")
    python = root / "bin" / "python"
    installed = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "-e",
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Successfully installed tabular-q-worker-0.1.0" in installed.stdout
    return ExampleVenv(root, python, site_packages)


@pytest.fixture
def client(home: Home, example_venv: ExampleVenv) -> Iterator[DaemonClient]:
    """The daemon of the test's home, started by `gym-gui daemon start` from the example's venv: the
    daemon, and so every worker it launches, runs on that venv's interpreter."""
    started = gym_gui("daemon", "start", home=home.root, python=example_venv.python)
    assert started.returncode == 0, started.stderr
    client = DaemonClient.connect(home.root, autostart=False)
    try:
        yield client
    finally:
        kill_run_workers(home)
        stop_daemon(client)


@pytest.fixture
def example_in_this_process(example_venv: ExampleVenv, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process sees the example as the venv's interpreter does (for the window, which loads the
    catalog in-process); the path, the cached catalog and the presenters are as before afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(presenters, "_PRESENTERS", {})
    site.addsitedir(str(example_venv.site_packages))
    worker_catalog.cache_clear()
    yield
    worker_catalog.cache_clear()


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def _artifacts(home: Home, run_id: str) -> list[ArtifactRecord]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return reader.artifacts()
    finally:
        reader.close()


def test_the_example_package_passes_its_own_tests_where_it_is_installed(
    example_venv: ExampleVenv, tmp_path: Path
) -> None:
    result = subprocess.run(
        [
            str(example_venv.python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "t"),
        ],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed" in result.stdout and "failed" not in result.stdout


def test_the_cli_lists_the_kind_and_trains_it_on_frozen_lake(
    client: DaemonClient, home: Home, example_venv: ExampleVenv, tmp_path: Path
) -> None:
    # The example is installed in its venv only: this interpreter's catalog does not have it.
    assert KIND not in worker_catalog()
    assert _cmdline(client.info.pid)[:3] == [str(example_venv.python), "-m", "gym_gui.daemon"]

    listed = gym_gui("workers", home=home.root, python=example_venv.python)
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if f" {KIND} " in line]
    for column in ("Tabular Q-Learning", "telemetry", "pause, checkpoint", "app", "available"):
        assert column in line, line
    assert "broken" not in listed.stdout

    # The daemon checks the config with the plugin before anything is stored.
    assert_one_line_error(
        gym_gui(
            *("train", "--worker", KIND, "--env", "FrozenLake-v1", "--episodes", "5", "--param", "alpha=2"),
            home=home.root,
            python=example_venv.python,
        ),
        "field 'params.alpha': must be in (0, 1], got 2",
    )
    assert_one_line_error(
        gym_gui(
            *("train", "--worker", KIND, "--env", "CartPole-v1", "--episodes", "5"),
            home=home.root,
            python=example_venv.python,
        ),
        "field 'env_id': tabular Q-learning needs discrete observations and actions",
    )
    assert client.list_runs() == []

    # The lake without slipping: the shortest way to the goal is 6 steps.
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"env_kwargs": {"is_slippery": False}}))
    trained = gym_gui(
        *("train", "--worker", KIND, "--env", "FrozenLake-v1", "--episodes", str(EPISODES), "--seed", "0"),
        *("--config", str(config), "--param", "alpha=0.5", "--param", f"gamma={GAMMA}"),
        *("--param", "epsilon_decay=0.98"),
        home=home.root,
        python=example_venv.python,
    )
    assert trained.returncode == 0, trained.stdout + trained.stderr
    (run,) = client.list_runs()
    assert (run.worker, run.lane, run.state) == (KIND, "telemetry", "COMPLETED")
    assert f"run {run.run_id} COMPLETED: budget reached" in trained.stdout

    run_dir = home.run_dir(run.run_id)
    manifest = RunDir(run_dir).read_manifest()
    assert manifest.command == [str(example_venv.python), "-m", "tabular_q_worker"]
    assert "tabular-q-worker==0.1.0" in manifest.environment.packages

    reader = TelemetryReader(RunDir(home.run_dir(run.run_id)).telemetry_path)
    try:
        episodes = reader.episodes()
        assert [e.episode for e in episodes] == list(range(EPISODES))
        assert reader.step_count() == sum(e.steps for e in episodes)
        assert reader.steps_per_episode() == {e.episode: e.steps for e in episodes}
        first = reader.step(0, 0)
        assert json.loads(first.render or b"{}")["game"] == "frozenlake"
        info = json.loads(first.info)
        assert info["explored"] is True and info["epsilon"] == 1.0
        # It learned: exploring at first, it rarely reached the goal; at the end it nearly always does.
        returns = [e.total_reward for e in episodes]
        assert sum(returns[:50]) < 10 and sum(returns[-50:]) > 40
        epsilon = [point.value for point in reader.metrics("train/epsilon")]
        assert epsilon[0] == 1.0 and epsilon[-1] < 0.05 and epsilon == sorted(epsilon, reverse=True)
        # The start's value approaches that of the shortest way: GAMMA ** 5 for a reward 6 steps on.
        start_value = reader.metrics("train/start_value")[-1].value
        assert 0.9 * GAMMA**5 < start_value <= GAMMA**5 + 1e-9
        (model,) = reader.artifacts()
        assert (model.kind, model.path, model.step) == (
            "model",
            "checkpoints/q_table.npy",
            reader.step_count(),
        )
    finally:
        reader.close()
    # The model is the table the run learned: the start's value in it is the last one reported.
    table = np.load(run_dir / model.path)
    assert table.shape == (16, 4) and table[0].max() == pytest.approx(start_value)


def test_the_window_lists_the_kind_and_trains_it_from_its_generated_form(
    example_in_this_process: None, qtbot: QtBot, home: Home, client: DaemonClient
) -> None:
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()  # clicks and typing go where a user's would: to the active window
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    control = window.control
    roster = control.roster
    assert "Tabular Q-Learning" in roster.display_names()
    item = next(
        roster.item(r) for r in range(roster.count()) if roster.item(r).text() == "Tabular Q-Learning"
    )
    assert item.flags() & Qt.ItemFlag.ItemIsEnabled
    assert "telemetry lane" in item.toolTip() and "an example plugin" in item.toolTip()

    # On the radio button's label (the button is wider than what it draws).
    click(control.agent, QPoint(control.agent.sizeHint().width() // 2, control.agent.height() // 2))
    assert control.mode == AGENT
    click(roster.viewport(), roster.visualItemRect(item).center())
    assert roster.kind() == KIND
    form = control.forms.currentWidget()
    assert isinstance(form, GeneratedForm)
    # The form's parameters are what the plugin's launcher describes, through the daemon.
    # (Shown: an answer the form had asked for before, about the same kind, may still rebuild them.)
    qtbot.waitUntil(lambda: form.param_names() == PARAMETERS, timeout=30_000)
    qtbot.waitUntil(lambda: (editor := form.param_editor("alpha")) is not None and editor.isVisible())
    alpha = form.param_editor("alpha")
    assert isinstance(alpha, QLineEdit) and alpha.text() == "0.1"
    type_into(qtbot, alpha, "0.5")
    form.budget_kind_combo.setCurrentText("episodes")
    form.budget_edit.setText("1_000_000")  # far more than the test watches: it is cancelled
    # The section its form spec declares is there, and only that one: a Q-table every 500 steps.
    rows = form.rows.form_rows
    assert rows.isRowVisible(form.checkpoint_every_edit)
    assert not rows.isRowVisible(form.gpu_check.parentWidget()) and not rows.isRowVisible(
        form.start_from_combo
    )
    assert not form.tracking.isVisibleTo(form) and not form.picker.isVisibleTo(form)
    type_into(qtbot, form.checkpoint_every_edit, "500")
    # The command the daemon would run, as for every kind.
    qtbot.waitUntil(lambda: "-m tabular_q_worker" in form.preview.text(), timeout=30_000)
    with qtbot.waitSignal(form.run_submitted, timeout=60_000) as submitted:
        click(form.submit_button)
    run_id = str(submitted.args[0])
    submitted_config = json.loads(client.get_run(run_id).config_json)
    assert submitted_config["params"] == {"alpha": 0.5}
    assert submitted_config["checkpoints"] == {"every_steps": 500}
    every = wait_until(
        lambda: next((a for a in _artifacts(home, run_id) if a.kind == "checkpoint"), None),
        60,
        "the first checkpoint of every 500 steps",
    )
    assert (every.path, every.step, json.loads(every.meta)) == (
        "checkpoints/q_table_step500.npy",
        500,
        {"requested": False},
    )

    # Its tabs are the ones its plugin names; every step reaches the Live tab, every return the chart.
    click_run(qtbot, window, run_id)
    assert [tab.title for tab in window.run_view.tab_list()] == ["Live", "Charts", "Replay"]
    live = window.run_view.tab_list()[0]
    qtbot.waitUntil(lambda: live.steps_seen > 100, timeout=60_000)
    charts = open_tab(window, ChartsTab)
    qtbot.waitUntil(lambda: len(charts.series("episode/return")[0]) > 10, timeout=60_000)

    # Checkpoint now: the worker saves its Q-table between two steps and reports the file.
    table = window.runs
    qtbot.waitUntil(lambda: table.checkpoint_button.isEnabled(), timeout=30_000)
    click(table.checkpoint_button)
    checkpoint = wait_until(
        lambda: next(
            (
                a
                for a in _artifacts(home, run_id)
                if a.kind == "checkpoint" and json.loads(a.meta)["requested"]
            ),
            None,
        ),
        60,
        "the checkpoint to be reported",
    )
    assert json.loads(checkpoint.meta) == {"requested": True}
    assert np.load(home.run_dir(run_id) / checkpoint.path).shape == (16, 4)

    click(table.cancel_button)
    qtbot.waitUntil(lambda: table.state_of(run_id) == "CANCELLED", timeout=60_000)
    (model,) = [a for a in _artifacts(home, run_id) if a.kind == "model"]
    assert json.loads(model.meta) == {"outcome": "stopped"} and model.step >= checkpoint.step
    window.close()
