"""CleanRL scripts forked warm by the bundle's zygote: same results, same control, no script outliving its run."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_gui.core.config import RunConfig
from gym_gui.core.processes import process_alive
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon, stop_daemon, wait_until
from workers.cleanrl_worker.tests.support import cleanrl_config, script_pid

COLD = "the script starts in a new interpreter"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    with module_daemon(tmp_path_factory.mktemp("zygote_home"), SHARED_BUNDLES, ["--cancel-grace", "20"]) as d:
        yield d


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def zygote_pids(home: Home) -> list[int]:
    """The live zygotes whose socket is under ``home``."""
    where = str(home.root / "zygotes")
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and "gym_gui_cleanrl_worker.zygote" in (line := _cmdline(int(entry.name)))
        and where in line
        and process_alive(int(entry.name))
    ]


def returns_and_losses(home: Home, run_id: str) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        returns = [(p.step, p.value) for p in reader.metrics("charts/episodic_return")]
        losses = [(p.step, p.value) for p in reader.metrics("losses/value_loss")]
    finally:
        reader.close()
    return returns, losses


def completed(client: DaemonClient, config: RunConfig) -> RunRecord:
    """Submit ``config`` and wait for its run to end; it must end COMPLETED."""
    record, _ = client.submit(config)
    assert client.wait_for_end(record.run_id, timeout=300).state is RunState.COMPLETED
    return record


def worker_log(home: Home, run_id: str) -> str:
    return (home.run_dir(run_id) / "logs" / "worker.stderr.log").read_text()


def test_a_forked_run_gives_the_same_returns_and_losses_as_a_run_in_a_new_interpreter(
    daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = daemon
    warm = completed(client, cleanrl_config("ppo", "CartPole-v1", 3000))
    assert len(zygote_pids(home)) == 1
    # The same script in the bundle's interpreter, named as another interpreter: it starts cold.
    python = str(Path(SHARED_BUNDLES) / "cleanrl" / "bin" / "python")
    cold = completed(client, cleanrl_config("ppo", "CartPole-v1", 3000, params={"python": python}))

    assert COLD not in worker_log(home, warm.run_id)
    assert worker_log(home, cold.run_id).count(COLD) == 1
    assert "GYM_GUI_CLEANRL_WARM=0 (the run names its own interpreter" in worker_log(home, cold.run_id)
    warm_returns, warm_losses = returns_and_losses(home, warm.run_id)
    cold_returns, cold_losses = returns_and_losses(home, cold.run_id)
    assert len(warm_returns) > 10 and warm_losses
    assert warm_returns == cold_returns
    assert warm_losses == cold_losses
    for run_id in (warm.run_id, cold.run_id):
        assert (home.run_dir(run_id) / "checkpoints" / "final.cleanrl_model").stat().st_size > 0


def test_the_zygote_holds_one_thread_and_only_its_user_can_reach_its_socket(
    daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = daemon
    completed(client, cleanrl_config("ppo", "CartPole-v1", 1000))
    (zygote,) = zygote_pids(home)
    assert len(os.listdir(f"/proc/{zygote}/task")) == 1
    directory = home.root / "zygotes"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    (sock,) = directory.glob("*.sock")
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600


def under_way(client: DaemonClient, home: Home) -> tuple[str, int]:
    """A long PPO run, once it trains: its id and its script's pid."""
    record, _ = client.submit(cleanrl_config("ppo", "CartPole-v1", 5_000_000))
    wait_until(
        lambda: client.get_run(record.run_id).progress.global_step > 2000, 120, "training to be under way"
    )
    return record.run_id, script_pid(home.run_dir(record.run_id))


def test_a_worker_killed_with_its_process_group_takes_its_forked_script_with_it(
    daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = daemon
    run_id, script = under_way(client, home)
    registry = RunRegistry(home.registry_path)
    worker = registry.get(run_id).pid
    registry.close()
    assert worker is not None
    assert os.getpgid(script) != os.getpgid(worker), "forked by the zygote, not by the worker"
    os.killpg(worker, signal.SIGKILL)  # what a cancel does when the grace is over
    wait_until(lambda: not process_alive(script), 30, "the script to be killed with its worker")
    assert client.wait_for_end(run_id, timeout=120).state.terminal


def test_a_script_killed_by_a_signal_fails_its_run_saying_so_never_with_a_warning_line(
    daemon: tuple[DaemonClient, Home],
) -> None:
    """Issue 30: a script killed by SIGKILL ended FAILED "exit code 247: deprecation(": the worker
    passed −9 on as its own exit (247), and the reason was the last line of stderr, a gym banner."""
    client, home = daemon
    run_id, script = under_way(client, home)
    os.kill(script, signal.SIGKILL)
    final = client.wait_for_end(run_id, timeout=120)
    assert final.state is RunState.FAILED
    assert final.reason == "exit code 1: the script was killed by signal 9 (SIGKILL)", final.reason


def test_a_killed_keeper_takes_its_script_with_it_before_the_run_ends(
    daemon: tuple[DaemonClient, Home],
) -> None:
    """Issue 30: a script whose keeper (the zygote's process watching it) was killed went on for 3–5 s
    after its run had ended, until it next wrote to its worker's closed pipes."""
    client, home = daemon
    run_id, script = under_way(client, home)
    keeper = int(Path(f"/proc/{script}/stat").read_text().rsplit(") ", 1)[1].split()[1])
    assert "gym_gui_cleanrl_worker.zygote" in _cmdline(keeper)
    os.kill(keeper, signal.SIGKILL)
    final = client.wait_for_end(run_id, timeout=120)
    assert not process_alive(script), "the script outlived its keeper and its run"
    assert final.state is RunState.FAILED
    assert final.reason == "exit code 1: the script was killed by signal 9 (SIGKILL)", final.reason


def test_a_zygote_starts_with_the_first_run_is_started_again_when_it_died_and_stops_with_the_daemon(
    tmp_path: Path,
) -> None:
    # A home deep enough that its sockets' paths do not fit an AF_UNIX address (108 bytes).
    root = tmp_path / "a-home-deeper-than-a-unix-socket-address-can-hold"
    with module_daemon(root, SHARED_BUNDLES, []) as (client, home):
        # A preview or a dry run starts none (the form previews as one types).
        client.preview(cleanrl_config("ppo", "CartPole-v1", 1000))
        client.dry_run(cleanrl_config("ppo", "CartPole-v1", 1000))
        assert not zygote_pids(home)
        first = completed(client, cleanrl_config("ppo", "CartPole-v1", 1000))
        assert COLD not in worker_log(home, first.run_id)
        (sock,) = (home.root / "zygotes").glob("*.sock")
        assert len(os.fsencode(sock)) >= 108
        (zygote,) = zygote_pids(home)
        os.kill(zygote, signal.SIGKILL)
        wait_until(lambda: not process_alive(zygote), 10, "the zygote to die")
        second = completed(client, cleanrl_config("ppo", "CartPole-v1", 1000))
        assert COLD not in worker_log(home, second.run_id)
        (restarted,) = zygote_pids(home)
        assert restarted != zygote
        stop_daemon(client)
        wait_until(lambda: not process_alive(restarted), 20, "the daemon to stop its zygote")
        assert not list((home.root / "zygotes").glob("*.sock"))


def test_a_sweeps_prepare_starts_the_zygote_in_the_background_and_only_for_the_bundles_scripts(
    tmp_path: Path,
) -> None:
    from gym_gui_cleanrl_worker.plugin import CleanRLLauncher

    from gym_gui.workers import HelperOwner, LaunchContext, worker_catalog

    home = Home(tmp_path / "h").ensure()
    launcher = CleanRLLauncher(LaunchContext(home, worker_catalog().bundle_directory(Path(SHARED_BUNDLES))))
    assert isinstance(launcher, HelperOwner)
    try:
        # Scripts of one's own are not the zygote's: nothing starts for them.
        launcher.prepare(cleanrl_config("ppo", "CartPole-v1", 1000, params={"scripts_dir": str(tmp_path)}))
        assert not zygote_pids(home)
        launcher.prepare(cleanrl_config("ppo", "CartPole-v1", 1000))  # returns at once
        wait_until(lambda: len(zygote_pids(home)) == 1, 120, "the prepared zygote to start")
        wait_until(lambda: any((home.root / "zygotes").glob("*.sock")), 120, "its socket")
    finally:
        launcher.close()
    assert not zygote_pids(home)
