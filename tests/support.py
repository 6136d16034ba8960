"""Helpers shared by the suite: waiting on conditions, daemon processes, small run configs."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest
from gym_gui_sdk.operator import Operator
from gym_gui_sdk.worker import WorkerSession
from packaging.requirements import Requirement

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.daemon_file import read_daemon_file
from gym_gui.core.processes import process_alive
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.daemon.live import SupervisorSettings
from gym_gui.daemon.server import DaemonServer
from gym_gui.play.operators import OperatorChoice, OperatorRef
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.workers import OperatorPlan, worker_catalog
from gym_gui.workers.bundles import source_root

T = TypeVar("T")


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


def wait_until_stable(
    read: Callable[[], T], interval: float = 0.5, timeout: float = 30.0, what: str = "value"
) -> T:
    """Read until two reads ``interval`` seconds apart agree (a count that stopped growing); return it."""
    deadline = time.monotonic() + timeout
    last = read()
    while True:
        time.sleep(interval)
        value = read()
        if value == last:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} still changing after {timeout:.0f}s ({last!r}, then {value!r})")
        last = value


def files_containing(root: Path, *needles: bytes) -> list[Path]:
    """Every file under ``root`` holding one of ``needles`` (forms of a secret that must never be written)."""
    return [
        path
        for path in root.rglob("*")
        if path.is_file() and any(needle in path.read_bytes() for needle in needles)
    ]


@contextlib.contextmanager
def small_filesystem(path: Path, megabytes: int) -> Iterator[Path]:
    """A filesystem of ``megabytes`` mounted at ``path`` for the block, unmounted after (needs root).

    tmpfs with a size limit; where tmpfs cannot be mounted, a loop-mounted ext4 image beside ``path``.
    """
    path.mkdir(parents=True, exist_ok=True)
    image: Path | None = None
    tmpfs = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        start_new_session=True,
    )
    if tmpfs.returncode != 0:
        image = path.with_name(path.name + ".ext4")
        with open(image, "wb") as blank:
            blank.truncate(megabytes * 1024 * 1024)
        for argv in (["mkfs.ext4", "-q", "-F", str(image)], ["mount", "-o", "loop", str(image), str(path)]):
            done = subprocess.run(argv, capture_output=True, text=True, start_new_session=True)
            assert done.returncode == 0, f"cannot mount a small filesystem: {tmpfs.stderr} / {done.stderr}"
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True, start_new_session=True)
        if image is not None:
            image.unlink()


def fill(directory: Path) -> Path:
    """Write one file in ``directory`` until its filesystem has no byte left; returns the file."""
    filler = directory / "filler"
    chunk = b"\xff" * 65536
    with open(filler, "wb", buffering=0) as out:
        while True:
            try:
                out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                chunk = chunk[: len(chunk) // 2]
                if not chunk:
                    return filler


def random_config(env_id: str = "FrozenLake-v1", **budget: int) -> RunConfig:
    return parse_run_config(
        {"worker": "random", "env_id": env_id, "seed": 0, "budget": budget or {"episodes": 5}}
    )


def run_record(run_id: str, state: RunState, **fields: Any) -> RunRecord:
    """A run's record as the daemon would send it, for a widget fed by hand (``fields`` override)."""
    defaults: dict[str, Any] = {
        "worker": "random",
        "env_id": "CartPole-v1",
        "lane": "telemetry",
        "created_at": 0.0,
    }
    return RunRecord(run_id=run_id, state=state, **{**defaults, **fields})


# The letters of publish_acted_run's episodes: who acted at a step ("": the step does not say).
ACTED = {"o": "operator", "h": "human", "-": ""}


def publish_acted_run(client: DaemonClient, *episodes: str, env_id: str = "FrozenLake-v1") -> RunRecord:
    """A run of ``env_id`` published by a hand-built session (of the human kind), one episode per string
    and a step per letter of :data:`ACTED`: ``o`` the operator acted, ``h`` a person did (overriding
    the operator's proposed action ``0``), ``-`` the step does not say. Returns its record once COMPLETED."""
    config = parse_run_config({"worker": "human", "env_id": env_id, "budget": {"episodes": len(episodes)}})
    record, token = client.submit(config)
    session = WorkerSession(client.info.address, record.run_id, token)
    session.start()
    session.started("none")
    for episode, letters in enumerate(episodes):
        for step, letter in enumerate(letters):
            last = step == len(letters) - 1
            proposed = "0" if letter == "h" else ""
            session.step(
                episode, step, 0.0, last, False, "1", "0", actor=ACTED[letter], proposed_action=proposed
            )
        session.episode(episode, len(letters), 0.0, True, False, started_at=float(episode))
    session.finish()
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason
    return final


def stop_daemon(client: DaemonClient) -> None:
    pid = client.info.pid
    try:
        client.shutdown()
    except Exception:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    client.close()
    wait_until(lambda: not process_alive(pid), 20, "the daemon to exit")


def kill_run_workers(home: Home) -> None:
    # Workers live in their own sessions: a test must not leave any behind.
    registry = RunRegistry(home.registry_path)
    for record in registry.list(include_archived=True):
        if record.pid and process_alive(record.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pid, signal.SIGKILL)
    registry.close()


def linked_bundle(source_dir: Path, name: str, bundles_dir: Path) -> Path:
    """A copy of bundle ``name`` of ``source_dir`` under ``bundles_dir``, its files hard links to the
    original's (made at once, in no space): a test adds to it (an extra) and the original stays as it
    was, since pip and Python write new files and replace rather than rewrite old ones."""
    copy = bundles_dir / name
    shutil.copytree(source_dir / name, copy, symlinks=True, copy_function=os.link)
    return copy


def bundles_view(source_dir: Path, bundles_dir: Path, linked: Iterable[str] = ()) -> Path:
    """A bundles directory at ``bundles_dir`` holding ``source_dir``'s bundles: those named in ``linked``
    as :func:`linked_bundle` copies (a test may change them), every other one a symbolic link to it."""
    bundles_dir.mkdir(parents=True, exist_ok=True)
    for bundle in sorted(p for p in source_dir.iterdir() if p.is_dir()):
        if bundle.name in linked:
            linked_bundle(source_dir, bundle.name, bundles_dir)
        else:
            (bundles_dir / bundle.name).symlink_to(bundle.resolve(), target_is_directory=True)
    return bundles_dir


def without_extras(bundles_dir: Path, name: str) -> None:
    """Take the extras recorded in bundle ``name``'s marker out of it: the packages of their requirements
    uninstalled, their record dropped, so it is the bundle `make bundles` builds. For a
    :func:`linked_bundle` copy."""
    directory = worker_catalog().bundle_directory(bundles_dir)
    marker = directory.marker_path(name)
    recorded = json.loads(marker.read_text())
    held = recorded.pop("extras", {})
    packages = []
    for extra in directory.spec(name).extras:
        if extra.name in held and extra.requirements is not None:
            lines = (source_root() / extra.requirements).read_text().splitlines()
            packages += [Requirement(line).name for line in map(str.strip, lines) if line and line[0] != "#"]
    if packages:
        python = bundles_dir / name / "bin" / "python"
        subprocess.run(
            [str(python), "-m", "pip", "uninstall", "--yes", "--quiet", *packages], check=True, timeout=300
        )
    # A new file, not the linked one rewritten: that one is the original bundle's marker too.
    replacement = marker.with_suffix(".tmp")
    replacement.write_text(json.dumps(recorded, indent=2))
    os.replace(replacement, marker)


@contextlib.contextmanager
def module_daemon(root: Path, bundles: str, daemon_args: list[str]) -> Iterator[tuple[DaemonClient, Home]]:
    """A daemon on a fresh home at ``root`` for a whole test module (CleanRL runs are the slow part,
    so a module's tests share them); its run workers are killed and it is stopped at the end."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GYM_GUI_HOME", str(root))
        env.setenv("GYM_GUI_BUNDLES", bundles)
        env.setenv("OMP_NUM_THREADS", "1")
        home = Home(root).ensure()
        client = DaemonClient.connect(home.root, daemon_args=daemon_args)
        try:
            yield client, home
        finally:
            kill_run_workers(home)
            stop_daemon(client)


@contextlib.contextmanager
def daemon_on(home: Home, *args: str) -> Iterator[DaemonClient]:
    """A daemon for ``home`` with the suite's short heartbeat and cancel grace and ``args``; its run
    workers are killed and it is stopped at the end."""
    client = DaemonClient.connect(
        home.root, daemon_args=["--heartbeat-timeout", "10", "--cancel-grace", "3", *args]
    )
    try:
        yield client
    finally:
        kill_run_workers(home)
        stop_daemon(client)


@contextlib.contextmanager
def in_process_daemon(home: Home, settings: SupervisorSettings | None = None) -> Iterator[DaemonClient]:
    """A daemon for ``home`` in this process (so a test may patch what it calls), with ``settings``;
    its run workers are killed and it is stopped at the end."""
    server = DaemonServer(home, settings=settings)
    server.start()
    info = read_daemon_file(home.daemon_json)
    assert info is not None
    client = DaemonClient(info)
    try:
        yield client
    finally:
        client.close()
        kill_run_workers(home)
        server.stop()


def gym_gui(
    *args: str,
    home: Path,
    timeout: float = 180,
    input: str | None = None,
    python: Path | str = sys.executable,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``gym-gui ARGS`` as a user runs it, against the home ``home`` (plain output, 200 columns), with the
    interpreter ``python`` (default: this one; another venv's sees the worker plugins installed there),
    in the directory ``cwd`` (default: this process's)."""
    env = {**os.environ, "GYM_GUI_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [str(python), "-m", "gym_gui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        input=input,
        cwd=cwd,
    )


def tensorboard_runs(url: str) -> list[str]:
    """The runs the TensorBoard at ``url`` lists ([] while it does not answer)."""
    try:
        with urllib.request.urlopen(url + "data/runs", timeout=5) as response:
            return list(json.loads(response.read()))
    except OSError:
        return []


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str, code: int = 1) -> None:
    """The CLI failed with exit ``code`` (1: gym_gui's errors, 2: usage errors) and printed exactly one
    "error:" line on stderr (no traceback, no panel) containing every needle."""
    assert result.returncode == code, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for needle in needles:
        assert needle in result.stderr


def non_loopback_ipv4() -> str:
    """An IPv4 address of this machine beyond loopback (another machine would reach it)."""
    import fcntl
    import socket
    import struct

    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _index, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), siocgifaddr, struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without an IPv4 address
                continue
            address = socket.inet_ntoa(packed[20:24])
            if not address.startswith("127."):
                return address
    raise AssertionError("this machine has no IPv4 address beyond loopback to listen on")


def start_operator(
    plan: OperatorPlan, log_dir: Path, secret_env: Mapping[str, str] | None = None
) -> Operator:
    """A kind's operator process started from its plan as gym_gui starts one (``OperatorChoice.start``:
    the base environment, the plan's variables and only the secrets it names, from ``secret_env``)."""
    choice = OperatorChoice(OperatorRef(plan.card.source_run or plan.card.name), plan.card, plan, log_dir)
    return choice.start(None, secret_env=dict(secret_env or {}))


def on_sys_path(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Put ``root`` (a :func:`plugin_distribution`'s) on sys.path for the test, with none of its modules'
    names left imported from an earlier test's root: tests of one process reuse module names (``tp_lakes``),
    and Python would hand back the module it imported first."""
    names = {path.stem for path in root.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
    for module in [m for m in sys.modules if m.split(".")[0] in names]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.syspath_prepend(str(root))


def plugin_distribution(
    root: Path, name: str, group: str, entry_points: Mapping[str, str], files: Mapping[str, str]
) -> Path:
    """A real distribution ``name`` on ``root`` (a directory that can go on sys.path): its dist-info,
    declaring ``entry_points`` in ``group``, and ``files`` (relative path → text: the modules and data
    they point at)."""
    root.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    dist_info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "\n".join(f"{key} = {value}" for key, value in entry_points.items())
    (dist_info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")
    return root
