"""The Optuna tab and attached studies in the window: the trials best first, history and importances,
the trial → run link, Train with best filling the form, attaching read-only, optuna-dashboard.

Studies are made by real Optuna here (and by ``cleanrl_utils.tuner`` in the CleanRL bundle); runs are
real runs of a real daemon.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import optuna
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import ManifestWriter, RunDir
from gym_gui.sweeps.study import STUDY_CONFIG_ATTR, STUDY_SWEEP_ATTR, TRIAL_HOME_ATTR, TRIAL_RUNS_ATTR
from gym_gui.ui import local_web
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.study.model import BEST_MARK
from gym_gui.ui.study.view import StudyWidget
from gym_gui.ui.tabs.optuna import OptunaTab

PPO_BASE = {
    "worker": "cleanrl",
    "algorithm": "ppo",
    "env_id": "CartPole-v1",
    "seed": 3,
    "budget": {"timesteps": 2048},
    "params": {"num-steps": 64},
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _study(
    path: Path,
    name: str = "plain",
    trials: int = 6,
    config: dict[str, Any] | None = None,
    runs: dict[int, list[str]] | None = None,
    extra_param: bool = False,
) -> str:
    """A study made by plain Optuna (a gym_gui sweep's when ``config`` is given)."""
    url = f"sqlite:///{path}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=name, storage=url, direction="maximize", sampler=optuna.samplers.RandomSampler(seed=11)
    )
    if config is not None:
        study.set_user_attr(STUDY_SWEEP_ATTR, "sweep-test")
        study.set_user_attr(STUDY_CONFIG_ATTR, config)

    def objective(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("learning-rate", 1e-4, 1e-2, log=True)
        ent = trial.suggest_float("ent-coef", 0.0, 0.1)
        if extra_param:
            trial.suggest_int("not-a-flag", 1, 3)
        trial.set_user_attr(TRIAL_RUNS_ATTR, (runs or {}).get(trial.number, []))
        return -abs(lr - 0.003) * 1000 - ent

    study.optimize(objective, n_trials=trials)
    return url


def _show(qtbot: QtBot, widget: Any) -> None:
    qtbot.addWidget(widget)
    widget.resize(1000, 700)
    widget.show()


# ---------------------------------------------------------------- the study view


def test_a_shared_studys_trials_of_another_home_are_marked_and_have_no_run_link(
    qtbot: QtBot, tmp_path: Path
) -> None:
    # Two homes' daemons played one study: this window's home played trials 0-2, another home 3-5.
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    home = Home(tmp_path / "home")
    study = optuna.create_study(study_name="plain", storage=url, direction="maximize")
    for n in range(6):
        trial = study.ask({"learning-rate": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)})
        trial.set_user_attr(TRIAL_RUNS_ATTR, [f"run-{n}"])
        trial.set_user_attr(TRIAL_HOME_ATTR, home.home_id if n < 3 else "lab-ws3-1f2e3d4c")
        study.tell(trial, float(n))
    view = StudyWidget(Home(home.root))
    _show(qtbot, view)
    view.show_study(url, "plain")
    qtbot.waitUntil(lambda: view.reads >= 1, timeout=30_000)
    trials = [int(cell.split()[0]) for cell in view.values_column("trial")]
    runs = dict(zip(trials, view.values_column("runs"), strict=True))
    assert runs == {n: f"run-{n}" if n < 3 else "in home lab-ws3-1f2e3d4c" for n in range(6)}

    asked: list[str] = []
    view.run_requested.connect(asked.append)
    view.open_trial_run(trials.index(4))
    assert asked == [] and "trial 4 is played in home lab-ws3-1f2e3d4c" in view.error.text()
    view.open_trial_run(trials.index(1))
    assert asked == ["run-1"]
    view.stop()


def test_the_study_view_sorts_trials_by_objective_draws_history_and_importances_and_follows_new_trials(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gym_gui.ui.study.view.REFRESH_MS", 200)
    path = tmp_path / "plain.db"
    url = _study(path)
    study = optuna.load_study(study_name="plain", storage=url)
    view = StudyWidget(Home(tmp_path))
    _show(qtbot, view)
    view.show_study(url, "plain")
    qtbot.waitUntil(lambda: view.reads >= 1, timeout=30_000)

    values = [float(v) for v in view.values_column("value")]
    assert values == sorted(values, reverse=True) and len(values) == 6
    assert view.values_column("trial")[0] == f"{study.best_trial.number} {BEST_MARK}"
    assert view.table.item(0, 0).font().bold() and not view.table.item(1, 0).font().bold()
    assert view.table.rowCount() == 6 and "learning-rate" in view.table_data.columns  # type: ignore[union-attr]

    xs, ys = view.history_points.getData()
    assert list(xs) == list(range(6)) and list(ys) == [t.value for t in study.trials]
    best_x, best_y = view.best_line.getData()
    assert list(best_x) == list(range(6))
    running = [max(t.value for t in study.trials[: i + 1]) for i in range(6)]  # type: ignore[type-var]
    assert list(best_y) == pytest.approx(running)

    assert view.importance_bars is not None and set(view.importances) == {"learning-rate", "ent-coef"}
    assert not view.importance_note.isVisible()

    # A running sweep's new trial appears on the next refresh.
    study.enqueue_trial({"learning-rate": 0.003, "ent-coef": 0.0})
    study.optimize(
        lambda trial: (
            -abs(trial.suggest_float("learning-rate", 1e-4, 1e-2, log=True) - 0.003) * 1000
            - trial.suggest_float("ent-coef", 0.0, 0.1)
        ),
        n_trials=1,
    )
    # A read in flight now may have seen the new trial still running; the one after it began
    # once the trial was complete.
    before = view.reads
    qtbot.waitUntil(lambda: view.reads >= before + 2, timeout=30_000)
    assert view.table.rowCount() == 7
    assert view.values_column("trial")[0] == f"6 {BEST_MARK}"

    # A read that fails says why and keeps what was shown.
    path.rename(tmp_path / "gone.db")
    qtbot.waitUntil(lambda: view.error.isVisible(), timeout=30_000)
    assert "no such table" in view.error.text() or "unable to open" in view.error.text(), view.error.text()
    assert view.table.rowCount() == 7
    view.stop()


def test_importances_say_why_there_are_none_yet(qtbot: QtBot, tmp_path: Path) -> None:
    url = _study(tmp_path / "one.db", trials=1)
    view = StudyWidget(Home(tmp_path))
    _show(qtbot, view)
    view.show_study(url, "plain")
    qtbot.waitUntil(lambda: view.reads >= 1, timeout=30_000)
    assert view.importance_bars is None
    assert (
        view.importance_note.text() == "No importances yet: they need at least 2 complete trials (1 so far)."
    )
    view.stop()


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "root-with-sandbox"])
def test_optuna_dashboard_answers_on_loopback_read_only_and_stops_with_the_view(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedded: bool
) -> None:
    if embedded:
        monkeypatch.setenv("QTWEBENGINE_DISABLE_SANDBOX", "1")  # what a root user sets to embed it
    else:
        # As root with Chromium's sandbox on, the page is offered in the browser (QtWebEngine would abort).
        monkeypatch.delenv("QTWEBENGINE_DISABLE_SANDBOX", raising=False)
        monkeypatch.delenv("QTWEBENGINE_CHROMIUM_FLAGS", raising=False)
        monkeypatch.setattr(local_web.os, "geteuid", lambda: 0)
    path = tmp_path / "plain.db"
    url = _study(path)
    before = _sha(path)
    view = StudyWidget(Home(tmp_path))
    _show(qtbot, view)
    view.show_study(url, "plain")
    view.open_dashboard()
    qtbot.waitUntil(lambda: view.dashboard.ready or view.dashboard.restart_button.isVisible(), timeout=90_000)
    assert view.dashboard.ready, view.dashboard.message.text()
    served = view.dashboard.url
    assert served is not None and served.startswith("http://127.0.0.1:")
    if embedded:
        page = view.dashboard.web_view
        assert page is not None and not view.dashboard.open_button.isVisible()
        qtbot.waitUntil(
            lambda: view.dashboard.page_loaded or view.dashboard.restart_button.isVisible(), timeout=240_000
        )
        assert view.dashboard.page_loaded, view.dashboard.message.text()
        assert page.url().toString().startswith(served.rstrip("/"))  # type: ignore[attr-defined]
    else:
        assert view.dashboard.web_view is None
        assert view.dashboard.open_button.isVisible() and served in view.dashboard.message.text()
        assert "QTWEBENGINE_DISABLE_SANDBOX=1" in view.dashboard.message.text()
    with urllib.request.urlopen(served + "api/studies", timeout=10) as response:
        names = [s["study_name"] for s in json.loads(response.read())["study_summaries"]]
    assert names == ["plain"]
    # The dashboard was given the read-only URL: a write through it fails and the file is unchanged.
    request = urllib.request.Request(
        served + "api/studies",
        data=json.dumps({"study_name": "new", "directions": ["minimize"]}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(request, timeout=10)
    assert _sha(path) == before

    process = view.dashboard.process
    assert process is not None and process.poll() is None
    view.close()
    view.stop()
    qtbot.waitUntil(lambda: process.poll() is not None, timeout=15_000)


# ---------------------------------------------------------------- in the window, with a real daemon


def _random_run(client: DaemonClient) -> str:
    record, _ = client.submit(
        parse_run_config(
            {"worker": "random", "env_id": "FrozenLake-v1", "seed": 1, "budget": {"episodes": 2}}
        )
    )
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


def _mark_as_trial(home: Home, run_id: str, url: str, study: str, trial: int) -> None:
    # What the daemon of a sweep writes into each trial run's manifest (the run has ended: nothing else writes it).
    files = RunDir(home.run_dir(run_id))
    ManifestWriter(files, files.read_manifest()).update(optuna_db=url, optuna_study=study, optuna_trial=trial)


def _cleanrl_form(window: MainWindow) -> GeneratedForm:
    form = window.control.form("cleanrl")
    assert isinstance(form, GeneratedForm)
    return form


def test_the_optuna_tab_of_a_trial_run_highlights_its_trial_links_trials_to_runs_and_trains_with_best(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, home: Home, tmp_path: Path
) -> None:
    first, second = _random_run(client), _random_run(client)
    url = _study(
        tmp_path / "sweep.db", name="sweep", trials=4, config=PPO_BASE, runs={0: [first], 1: [second]}
    )
    _mark_as_trial(home, first, url, "sweep", 0)
    qtbot.waitUntil(lambda: window.runs.info(first) is not None and window.runs.info(second) is not None)

    window.runs.select(first)
    qtbot.waitUntil(lambda: window.run_view.run is not None and window.run_view.run.run_id == first)
    tabs = window.run_view.tab_list()
    optuna_tabs = [tab for tab in tabs if isinstance(tab, OptunaTab)]
    assert len(optuna_tabs) == 1, [tab.title for tab in tabs]
    tab = optuna_tabs[0]
    window.run_view.tabs.setCurrentWidget(tab)
    qtbot.waitUntil(lambda: tab.study.reads >= 1, timeout=30_000)
    assert tab.study.selected_trial() == 0  # the run's own trial
    assert tab.study.values_column("runs")[tab.study.table_data.row_of(1)] == second  # type: ignore[union-attr]

    # The dashboard of the tab's study runs until the tab goes away (another run selected).
    tab.study.open_dashboard()
    qtbot.waitUntil(lambda: tab.study.dashboard.ready, timeout=90_000)
    dashboard = tab.study.dashboard.process
    assert dashboard is not None and dashboard.poll() is None

    # Enter on trial 1's row selects its run in the runs table (and its tabs replace these).
    tab.study.pages.setCurrentIndex(0)
    row = tab.study.table_data.row_of(1)  # type: ignore[union-attr]
    tab.study.table.setCurrentCell(row, 0)
    tab.study.table.setFocus()
    QTest.keyClick(tab.study.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.runs.current_run_id() == second, timeout=10_000)
    qtbot.waitUntil(lambda: window.run_view.run is not None and window.run_view.run.run_id == second)
    assert not any(isinstance(t, OptunaTab) for t in window.run_view.tab_list())  # not a trial run
    qtbot.waitUntil(lambda: dashboard.poll() is not None, timeout=15_000)

    # Train with best: the sweep's worker, its base config and the best trial's parameters in the form.
    window.runs.select(first)
    qtbot.waitUntil(lambda: any(isinstance(t, OptunaTab) for t in window.run_view.tab_list()))
    tab = next(t for t in window.run_view.tab_list() if isinstance(t, OptunaTab))
    window.run_view.tabs.setCurrentWidget(tab)
    qtbot.waitUntil(lambda: tab.study.reads >= 1, timeout=30_000)
    best = optuna.load_study(study_name="sweep", storage=url).best_trial
    qtbot.mouseClick(tab.study.train_button, Qt.MouseButton.LeftButton)
    form = _cleanrl_form(window)
    assert window.control.forms.currentWidget() is form and window.control.roster.kind() == "cleanrl"
    qtbot.waitUntil(lambda: "filled from study 'sweep'" in form.status_label.text(), timeout=120_000)
    assert not form.error_label.isVisible()  # every name found its field
    model = form.model
    assert (model.algorithm, model.env_id, model.seed, model.budget) == (
        "ppo",
        "CartPole-v1",
        3,
        "2048",
    )
    config = form.config()
    assert config.params["learning-rate"] == pytest.approx(best.params["learning-rate"])
    assert config.params["ent-coef"] == pytest.approx(best.params["ent-coef"])
    assert config.params["num-steps"] == 64  # the base config's own parameter
    assert form.submit_button.isEnabled(), form.submit_button.toolTip()
    assert f"trial {best.number}" in form.status_label.text()


def test_a_real_sweeps_trial_runs_get_the_optuna_tab_from_the_daemon(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    """A sweep the daemon plays (2 PPO trials): each trial run's manifest names its study and
    trial, so selecting it shows the Optuna tab with that trial selected and the other's run listed."""
    spec = {
        "config": {**PPO_BASE, "budget": {"timesteps": 1024}},
        "space": {"learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}},
        "objective": {"metric": "charts/episodic_return", "aggregate": "last_mean", "window": 5},
        "sampler": {"name": "random", "seed": 0},
        "trials": 2,
        "parallel": 2,
    }
    sweep = client.start_sweep(json.dumps(spec))
    qtbot.waitUntil(lambda: client.get_sweep(sweep.sweep_id).record.state.ended, timeout=600_000)
    trial_runs = {run.trial: run.run_id for run in client.list_runs() if run.sweep_id == sweep.sweep_id}
    assert sorted(trial_runs) == [0, 1], trial_runs
    qtbot.waitUntil(lambda: all(window.runs.info(run_id) is not None for run_id in trial_runs.values()))

    window.runs.select(trial_runs[1])
    qtbot.waitUntil(lambda: any(isinstance(t, OptunaTab) for t in window.run_view.tab_list()), timeout=30_000)
    tab = next(t for t in window.run_view.tab_list() if isinstance(t, OptunaTab))
    window.run_view.tabs.setCurrentWidget(tab)
    qtbot.waitUntil(lambda: tab.study.reads >= 1, timeout=30_000)
    assert tab.study.selected_trial() == 1  # the run's own trial
    runs = tab.study.values_column("runs")
    assert runs[tab.study.table_data.row_of(0)] == trial_runs[0]  # type: ignore[union-attr]


# ---------------------------------------------------------------- attaching a study made elsewhere


@pytest.fixture(scope="module")
def tuner_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database made by the real ``cleanrl_utils.tuner`` (2 PPO CartPole trials) in the CleanRL bundle."""
    from gym_gui.workers import worker_catalog

    manager = worker_catalog().bundle_directory(Home().bundles_dir)
    status = manager.status("cleanrl")
    if not status.installed:
        pytest.fail(f"the cleanrl bundle is needed by these tests: {status.reason}")
    where = tmp_path_factory.mktemp("tuner")
    path = where / "cleanrl_hpopt.db"
    result = subprocess.run(
        [
            str(manager.python("cleanrl")),
            str(Path(__file__).with_name("tuner_study.py")),
            f"sqlite:///{path}",
        ],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(where), "WANDB_MODE": "disabled"},
        start_new_session=True,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return path


def _attach(qtbot: QtBot, window: MainWindow, storage: str, study: str | None = None) -> Any:
    dialog = window.attach_study()
    qtbot.keyClicks(dialog.storage, storage)
    qtbot.mouseClick(dialog.read_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.studies.count() > 0, timeout=30_000)
    if study is not None:
        dialog.studies.setCurrentText(study)
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: len(window.study_docks) > 0)
    dock = window.study_docks[-1]
    qtbot.waitUntil(lambda: dock.study.reads >= 1, timeout=60_000)
    return dock


def test_attaching_a_tuner_made_database_shows_its_trials_and_trains_with_best_in_the_chosen_form(
    qtbot: QtBot, window: MainWindow, tuner_db: Path
) -> None:
    before = _sha(tuner_db)
    window.control.show_form("cleanrl")
    form = _cleanrl_form(window)
    qtbot.waitUntil(lambda: form.ready and form.algorithm() == "ppo", timeout=120_000)
    dock = _attach(qtbot, window, str(tuner_db))
    study = optuna.load_study(study_name="tuner_cartpole", storage=f"sqlite:///{tuner_db}")
    assert dock.windowTitle() == "Study: tuner_cartpole"
    assert dock.study.table.rowCount() == 2
    assert dock.study.values_column("trial")[0] == f"{study.best_trial.number} {BEST_MARK}"
    assert "made outside gym_gui" in dock.study.title.text()

    qtbot.mouseClick(dock.study.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "filled from study 'tuner_cartpole'" in form.status_label.text(), timeout=30_000)
    config = form.config()
    assert config.params["learning-rate"] == pytest.approx(study.best_trial.params["learning-rate"])
    wanted = study.best_trial.params["num-minibatches"]
    assert config.params.get("num-minibatches", 4) == wanted  # 4: ppo's own default, not sent
    assert not form.error_label.isVisible()
    dock.close()
    assert _sha(tuner_db) == before


def test_attaching_a_storage_with_several_studies_asks_which_and_reports_names_the_form_lacks(
    qtbot: QtBot, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "two.db"
    _study(path, name="first", trials=3)
    url = _study(path, name="second", trials=4, extra_param=True)
    before = _sha(path)
    window.control.show_form("cleanrl")
    form = _cleanrl_form(window)
    qtbot.waitUntil(lambda: form.ready and form.algorithm() == "ppo", timeout=120_000)

    dialog = window.attach_study()
    qtbot.keyClicks(dialog.storage, url)
    qtbot.mouseClick(dialog.read_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.studies.count() == 2, timeout=30_000)
    assert [dialog.studies.itemText(i) for i in range(2)] == ["first", "second"]
    assert "2 studies: choose one" in dialog.message.text()
    dialog.studies.setCurrentText("second")
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: len(window.study_docks) == 1)
    dock = window.study_docks[0]
    qtbot.waitUntil(lambda: dock.study.reads >= 1, timeout=30_000)
    assert dock.study.table.rowCount() == 4 and "not-a-flag" in dock.study.table_data.columns

    best = optuna.load_study(study_name="second", storage=url).best_trial
    qtbot.mouseClick(dock.study.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "filled from study 'second'" in form.status_label.text(), timeout=30_000)
    assert form.config().params["learning-rate"] == pytest.approx(best.params["learning-rate"])
    assert form.error_label.text() == "not in this form, left out: not_a_flag"
    dock.close()
    assert _sha(path) == before


@pytest.mark.parametrize("content", ["text", "sqlite"], ids=["not-a-database", "not-optunas"])
def test_attaching_a_bad_file_says_why_and_writes_nothing(
    qtbot: QtBot, window: MainWindow, tmp_path: Path, content: str
) -> None:
    path = tmp_path / "bad.db"
    if content == "text":
        path.write_text("these are notes, not a database\n")
    else:
        import sqlite3

        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE notes (body TEXT)")
            db.execute("INSERT INTO notes VALUES ('hello')")
    before = _sha(path)
    dialog = window.attach_study()
    qtbot.keyClicks(dialog.storage, str(path))
    qtbot.mouseClick(dialog.read_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "not an Optuna storage" in dialog.message.text(), timeout=30_000)
    assert str(path) in dialog.message.text()
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
    assert window.study_docks == []
    assert _sha(path) == before
    dialog.reject()
