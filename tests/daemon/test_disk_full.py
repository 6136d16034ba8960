"""A home on a small filesystem the test mounts: a run that fills the disk fails saying so, its end is
recorded, its worker is gone and what it stored is intact; no run starts on a nearly full disk."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from gym_gui.core.errors import DiskFull
from gym_gui.core.processes import process_alive
from gym_gui.core.records import RunRecord, RunUpdated
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.space import RESERVE_BYTES
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import assert_one_line_error, daemon_on, gym_gui, random_config, wait_until


def test_a_run_that_fills_the_disk_fails_saying_so_and_its_end_is_recorded(small_home: Home) -> None:
    home = small_home
    mount = home.root.parent
    # About 14 MB are free once the daemon holds its reserve: runs may start (4 MB), and warn below 12 MB.
    with daemon_on(home, "--min-free-mb", "4", "--warn-free-mb", "12") as client:
        assert home.reserve_path.stat().st_size == RESERVE_BYTES
        record, _ = client.submit(random_config(episodes=1_000_000_000))
        run_id = record.run_id
        rows: list[RunRecord] = []

        def watch() -> None:
            for event in client.watch_runs(run_id=run_id):
                if isinstance(event, RunUpdated) and event.record.run_id == run_id:
                    rows.append(event.record)
                    if event.record.state.terminal:
                        return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        registry = RunRegistry(home.registry_path)
        try:
            pid = wait_until(lambda: registry.get(run_id).pid, 60, "the worker to start")

            final = client.wait_for_end(run_id, timeout=300)
            assert final.state is RunState.FAILED
            assert final.reason.startswith("disk full: "), final.reason
            assert f"free on {mount}" in final.reason and "cannot rollback" not in final.reason
            # The registry recorded the end on the full disk (the reserve gives it room when it needs
            # any: tests/storage/test_space.py).
            last = registry.history(run_id)[-1]
            assert (last.from_state, last.to_state, last.reason) == (
                RunState.RUNNING,
                RunState.FAILED,
                final.reason,
            )
            assert registry.get(run_id).pid is None
            wait_until(lambda: not process_alive(pid), 30, "the worker process to be gone")

            # While the disk ran low, the run's row said so.
            watcher.join(30)
            warnings = [row.warning for row in rows if row.warning]
            assert warnings and warnings[0].startswith("disk low: ") and f"free on {mount}" in warnings[0]

            # What was stored before the disk filled is intact and readable.
            telemetry = RunDir(home.run_dir(run_id)).telemetry_path
            conn = sqlite3.connect(telemetry)
            try:
                assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            finally:
                conn.close()
            reader = TelemetryReader(telemetry)
            assert reader.step_count() > 0
            reader.close()
            # (How much is free after the end depends on where SQLite's WAL stood when the disk
            # filled: closing the writer checkpoints it and may free megabytes. The refusal to
            # launch is the next test's.)
        finally:
            registry.close()


def test_no_run_starts_while_the_disk_has_less_free_space_than_the_daemon_asks(small_home: Home) -> None:
    home = small_home
    with daemon_on(home, "--min-free-mb", "64", "--warn-free-mb", "128") as client:
        with pytest.raises(DiskFull) as refused:
            client.submit(random_config(episodes=1))
        message = str(refused.value)
        assert message.startswith("disk full: ") and f"free on {home.root.parent}" in message
        assert "at least 64.0 MB free" in message and "--min-free-mb" in message
        # The CLI says the same in one line.
        result = gym_gui(
            "train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "1", home=home.root
        )
        assert_one_line_error(result, "disk full:", f"free on {home.root.parent}")
        assert client.list_runs() == []
        assert not any(home.runs_dir.iterdir())
