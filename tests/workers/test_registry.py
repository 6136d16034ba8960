"""The worker catalog: installed plugins in roster order; broken and conflicting plugins listed, never fatal."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.workers import Lane, Launch
from gym_gui.workers import ENTRY_POINT_GROUP, LANE_TABS, worker_catalog
from gym_gui.workers.registry import load_catalog
from tests.support import on_sys_path, plugin_distribution

# Modules a test plugin distribution can point its entry points at.
PLUGIN_MODULE = """\
from gym_gui.core.workers import Lane, WorkerSpec
from gym_gui.workers import ModuleLauncher, WorkerPlugin

SECOND_RANDOM = WorkerPlugin(
    WorkerSpec(kind="random", display_name="Another Random", lane=Lane.TELEMETRY),
    launcher=lambda context: ModuleLauncher(context, "tp_plugins"),
)
NOT_A_PLUGIN = {"kind": "dict"}
LATER = WorkerPlugin(
    WorkerSpec(
        kind="tp_later",
        display_name="Later Worker",
        lane=Lane.TELEMETRY,
        unavailable_reason="it does not run on this platform yet",
    )
)
"""


def make_plugin_distribution(
    root: Path, entry_points: dict[str, str], name: str = "third-party-workers"
) -> Path:
    """A real distribution of worker plugins (one raises on import, like a plugin with a missing
    dependency)."""
    files = {"tp_plugins.py": PLUGIN_MODULE, "tp_broken.py": "import a_module_that_is_not_installed\n"}
    return plugin_distribution(root, name, ENTRY_POINT_GROUP, entry_points, files)


BROKEN_SET = {
    "tp_broken": "tp_broken:PLUGIN",
    "tp_second_random": "tp_plugins:SECOND_RANDOM",
    "tp_not_a_plugin": "tp_plugins:NOT_A_PLUGIN",
}
# A kind that is listed but cannot run (its spec says why).
LATER_SET = {"tp_later": "tp_plugins:LATER"}


def test_the_installed_catalog_is_the_roster_in_order() -> None:
    catalog = worker_catalog()
    assert catalog.kinds == ["human", "operator", "spade_bdi", "llm", "cleanrl", "corl", "d3rlpy", "random"]
    assert [e.display_name for e in catalog.roster()] == [
        "Human-Only",
        "Operator",
        "Spade BDI Worker",
        "LLM Multi-Step Worker",
        "CleanRL Worker",
        "CORL Worker",
        "d3rlpy (offline RL)",
        "Random Baseline",
    ]
    assert catalog.broken == ()
    assert sorted(catalog.bundles()) == ["cleanrl", "corl", "d3rlpy", "llm", "spade_bdi"]
    assert catalog.spec("human").launch is Launch.CLIENT
    assert catalog.spec("spade_bdi").available
    llm = catalog.spec("llm")
    assert llm.available and llm.lane is Lane.HYBRID and llm.bundle == "llm"
    assert llm.secrets == ("LLM_API_KEY",)
    cleanrl = catalog.plugin("cleanrl")
    assert cleanrl.spec.capabilities.checkpoint and cleanrl.spec.capabilities.evaluation
    assert cleanrl.tabs(Lane.ANALYTICS) == LANE_TABS[Lane.ANALYTICS]
    # Evaluating a CleanRL model streams every step: its run is on the telemetry lane.
    assert cleanrl.spec.lane_for("evaluate") is Lane.TELEMETRY


def test_an_unknown_kind_names_the_installed_ones() -> None:
    with pytest.raises(
        ConfigError, match="field 'worker': unknown worker kind 'nope'; installed kinds: cleanrl"
    ):
        worker_catalog().plugin("nope")


def test_broken_and_conflicting_plugins_are_listed_with_their_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_sys_path(monkeypatch, make_plugin_distribution(tmp_path / "site", BROKEN_SET))
    catalog = load_catalog()

    # gym_gui's own kinds are all there and unchanged.
    assert catalog.kinds == ["human", "operator", "spade_bdi", "llm", "cleanrl", "corl", "d3rlpy", "random"]
    assert catalog.spec("random").display_name == "Random Baseline"
    broken = {b.name: b for b in catalog.broken}
    assert set(broken) == set(BROKEN_SET)
    assert "ModuleNotFoundError" in broken["tp_broken"].error
    assert "a_module_that_is_not_installed" in broken["tp_broken"].error
    assert broken["tp_broken"].source == "third-party-workers: tp_broken:PLUGIN"
    assert "declares worker kind 'random', already taken by gym-gui-random-worker" in (
        broken["tp_second_random"].error
    )
    assert "is a dict, not a gym_gui.workers.WorkerPlugin" in broken["tp_not_a_plugin"].error
    roster = catalog.roster()
    assert [e.kind for e in roster[-3:]] == sorted(BROKEN_SET, key=list(broken).index)
    assert all(not e.available and e.reason.startswith("broken plugin: ") for e in roster[-3:])
    with pytest.raises(ConfigError, match="the 'tp_broken' worker plugin is broken: failed to load"):
        catalog.plugin("tp_broken")


def test_load_catalog_reads_the_given_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_plugin_distribution(tmp_path / "site", {})
    on_sys_path(monkeypatch, tmp_path / "site")
    points = [
        importlib.metadata.EntryPoint("tp_second_random", "tp_plugins:SECOND_RANDOM", ENTRY_POINT_GROUP)
    ]
    catalog = load_catalog(points)
    assert catalog.kinds == ["random"]
    assert catalog.spec("random").display_name == "Another Random"


def cli(*args: str, home: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GYM_GUI_HOME": str(home),
        "PYTHONPATH": str(pythonpath),
        "COLUMNS": "250",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "gym_gui", *args], capture_output=True, text=True, timeout=180, env=env
    )


def test_cli_lists_broken_plugins_and_the_daemon_still_runs_workers(tmp_path: Path) -> None:
    site = make_plugin_distribution(tmp_path / "site", {**BROKEN_SET, **LATER_SET})
    home = tmp_path / "home"
    try:
        listed = cli("workers", home=home, pythonpath=site)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        for kind, name in (
            ("human", "Human-Only"),
            ("cleanrl", "CleanRL Worker"),
            ("random", "Random Baseline"),
        ):
            assert any(kind in line and name in line for line in lines), listed.stdout
        assert any("tp_later" in line and "unavailable: it does not run" in line for line in lines)
        # Each kind's default budget (none for CleanRL, whose scripts have their own).
        assert any(" llm " in line and "20 episodes" in line for line in lines), listed.stdout
        assert any(" spade_bdi " in line and "5000 episodes" in line for line in lines), listed.stdout
        broken = [line for line in lines if "broken" in line]
        assert len(broken) == 3 and any("a_module_that_is_not_installed" in line for line in broken)

        # The daemon (started by the CLI with the same plugins on its path) serves the other kinds.
        trained = cli(
            "train",
            "--worker",
            "random",
            "--env",
            "FrozenLake-v1",
            "--episodes",
            "5",
            home=home,
            pythonpath=site,
        )
        assert trained.returncode == 0, trained.stderr
        assert "COMPLETED" in trained.stdout
        refused = cli(
            "train",
            "--worker",
            "tp_broken",
            "--env",
            "FrozenLake-v1",
            "--episodes",
            "5",
            home=home,
            pythonpath=site,
        )
        assert refused.returncode == 1
        assert (
            refused.stderr.startswith("error: ")
            and "the 'tp_broken' worker plugin is broken" in refused.stderr
        )
        later = cli(
            "train",
            "--worker",
            "tp_later",
            "--env",
            "FrozenLake-v1",
            "--episodes",
            "5",
            home=home,
            pythonpath=site,
        )
        assert later.returncode == 1 and later.stderr.startswith("error: ")
        assert "'Later Worker' is unavailable: it does not run on this platform yet" in later.stderr
    finally:
        cli("daemon", "stop", home=home, pythonpath=site)


def test_a_kind_must_be_an_identifier() -> None:
    from gym_gui.core.workers import WorkerSpec

    with pytest.raises(ValueError, match="must match"):
        WorkerSpec(kind="Bad Kind", display_name="x", lane=Lane.TELEMETRY)
    plugin_source = textwrap.dedent(
        """
        from gym_gui.core.workers import Lane, WorkerSpec
        from gym_gui.workers import WorkerPlugin
        WorkerPlugin(WorkerSpec(kind="x", display_name="x", lane=Lane.TELEMETRY))
        """
    )
    # A daemon-launched kind that can run needs a launcher: caught when the plugin is made.
    with pytest.raises(ValueError, match="launched by the daemon but has no launcher"):
        exec(compile(plugin_source, "<plugin>", "exec"), {})
