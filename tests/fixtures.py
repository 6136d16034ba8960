"""Suite-wide fixtures: every test runs against its own temporary GYM_GUI_HOME; a real daemon on demand.

The root conftest.py loads this module, so it serves tests/ and every kind's workers/<kind>/tests/ alike.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.workers import worker_catalog
from gym_gui.workers.bundles import MARKER
from tests.support import (
    bundles_view,
    kill_run_workers,
    small_filesystem,
    stop_daemon,
    wait_until,
    without_extras,
)

# Qt widgets are real but drawn offscreen (set before any QApplication exists).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parent.parent


def suite_bundles(user: Path) -> Path:
    """The bundles the suite runs on: the user's (``user``), as `make bundles` builds them.

    One build serves the cockpit and the suite (building the cleanrl bundle per test would take minutes
    each), but the suite must not see the extras `make envs` or a user added to them: a bundle holding
    extras is a hard-linked copy with them taken out, every other one a symbolic link. Made once for each
    state of the user's bundles (their markers), under a lock, in the temporary directory; a new state's
    view replaces the old one of the same bundles directory only (suites on other bundles directories,
    as a worktree's, run beside it).
    """
    markers = sorted(user.glob(f"*/{MARKER}"))
    stamp = hashlib.sha256(b"".join(m.read_bytes() for m in markers)).hexdigest()[:16]
    root = (
        Path(tempfile.gettempdir())
        / "gym-gui-suite-views"
        / hashlib.sha256(str(user).encode()).hexdigest()[:16]
    )
    root.mkdir(parents=True, exist_ok=True)
    made = root / stamp
    with open(root / "lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            for stale in root.iterdir():
                if stale.is_dir():
                    shutil.rmtree(stale)
            building = root / f".{stamp}.building"
            shutil.rmtree(building, ignore_errors=True)
            with_extras = {m.parent.name for m in markers if json.loads(m.read_text()).get("extras")}
            bundles_view(user, building, linked=with_extras)
            for name in with_extras:
                without_extras(building, name)
            building.rename(made)
    return made


# The user's own bundles directory (the one `make run` and `make bundles` install into; GYM_GUI_BUNDLES
# moves it) is read before any test moves GYM_GUI_HOME; every temporary home shares its suite view.
SHARED_BUNDLES = str(suite_bundles(Home().bundles_dir))


# `make test` runs the suite in two processes (pytest-xdist, `--dist loadgroup`). A file's tests
# stay together in one of them, so its module fixtures (a daemon, a bundle's zygote) start once; so
# do a folder's whose session fixture starts a service (the Ray head, PostgreSQL).
_ONE_PROCESS_FOLDERS = frozenset({"tests/cluster", "tests/sweeps"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(REPO)
        folder = "/".join(where.parts[:2])
        group = folder if folder in _ONE_PROCESS_FOLDERS else where.as_posix()
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may touch the real user data directory.
    monkeypatch.setenv("GYM_GUI_HOME", str(tmp_path / "gym_gui_home"))
    monkeypatch.setenv("GYM_GUI_BUNDLES", SHARED_BUNDLES)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    # Two cores run the tests, the daemon and a worker at once: torch's own threads only fight them.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # Nor may a test find the user's W&B key or server (a run would log to the real W&B).
    for name in ("WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


# The threads of a started WorkerSession (gym_gui_sdk.worker).
_SESSION_THREADS = frozenset({"gym-gui-heartbeat", "gym-gui-control"})


@pytest.fixture(autouse=True)
def _no_session_outlives_its_test() -> Iterator[None]:
    # A session left open keeps its gRPC channel and threads in the test process for the rest of
    # the suite, beside every later test's threads and forks: each one a test starts must be
    # finished or closed by the test's end.
    yield

    def open_sessions() -> list[str]:
        return [thread.name for thread in threading.enumerate() if thread.name in _SESSION_THREADS]

    wait_until(lambda: not open_sessions(), 10, "the test's worker sessions to be finished or closed")


@pytest.fixture
def cleanrl_python() -> Path:
    """The cleanrl bundle's Python; the suite fails (never skips) when the bundle is missing."""
    manager = worker_catalog().bundle_directory(Home().bundles_dir)
    status = manager.status("cleanrl")
    if not status.installed:
        pytest.fail(f"the cleanrl bundle is needed by these tests: {status.reason}")
    return manager.python("cleanrl")


@pytest.fixture
def own_cleanrl_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The suite's bundles with a CleanRL bundle of this test's own (a hard-linked copy), for a test
    that adds an extra to it (`gym-gui envs install atari`): the other tests' bundle stays as it is."""
    bundles = bundles_view(Path(SHARED_BUNDLES), tmp_path / "bundles", linked=["cleanrl"])
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(bundles))
    return bundles


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "gym_gui_home").ensure()


@pytest.fixture
def small_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    """A home alone on a 16 MB filesystem mounted for the test (the bundles stay where the suite keeps them)."""
    with small_filesystem(tmp_path / "small", 16) as mount:
        root = mount / "home"
        monkeypatch.setenv("GYM_GUI_HOME", str(root))
        yield Home(root).ensure()


@pytest.fixture
def daemon_args() -> list[str]:
    return ["--heartbeat-timeout", "10", "--cancel-grace", "3"]


@pytest.fixture
def client(home: Home, daemon_args: list[str]) -> Iterator[DaemonClient]:
    client = DaemonClient.connect(home.root, daemon_args=daemon_args)
    try:
        yield client
    finally:
        kill_run_workers(home)
        stop_daemon(client)


@pytest.fixture
def registry(home: Home) -> Iterator[RunRegistry]:
    registry = RunRegistry(home.registry_path)
    yield registry
    registry.close()
