"""The agent on an external XMPP server: Debian's Prosody, started here on loopback with a throwaway
config; and the clear failures of an unreachable server, a wrong password and a missing one."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import files_containing, wait_until
from workers.spade_bdi_worker.tests.conftest import bdi_config, episodes, run_to_end

JID = "bdi@localhost"
PASSWORD = "throwaway-Prosody-secret-7f3a"


@dataclass(frozen=True)
class Prosody:
    port: int
    log: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def prosody(tmp_path: Path) -> Iterator[Prosody]:
    """Prosody on 127.0.0.1 with an account for the agent; stopped (and its files removed) after."""
    binary = shutil.which("prosody")
    assert binary, "Debian's prosody is needed (scripts/sysdeps.sh installs it)"
    root = tmp_path / "prosody"
    (root / "data").mkdir(parents=True)
    (root / "certs").mkdir()
    # A certificate of its own: slixmpp authenticates only over TLS (the agent does not verify it).
    made = subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            str(root / "certs/localhost.key"),
            "-out",
            str(root / "certs/localhost.crt"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert made.returncode == 0, made.stderr
    port = _free_port()
    config = root / "prosody.cfg.lua"
    config.write_text(
        f"""
pidfile = "{root}/prosody.pid"
data_path = "{root}/data"
certificates = "{root}/certs"
run_as_root = true
interfaces = {{ "127.0.0.1" }}
c2s_ports = {{ {port} }}
c2s_direct_tls_ports = {{ }}
s2s_ports = {{ }}
c2s_require_encryption = true
authentication = "internal_hashed"
modules_enabled = {{ "roster"; "saslauth"; "tls"; "disco"; "ping"; "posix" }}
modules_disabled = {{ "s2s" }}
log = {{ info = "{root}/prosody.log" }}
VirtualHost "localhost"
"""
    )
    registered = subprocess.run(
        ["prosodyctl", "--config", str(config), "register", "bdi", "localhost", PASSWORD],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert registered.returncode == 0, registered.stderr
    server = subprocess.Popen(
        [binary, "--config", str(config), "-F"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _accepts(port) or server.poll() is not None, 30, "Prosody to listen")
        assert server.poll() is None, f"Prosody exited: {(root / 'prosody.log').read_text()}"
        yield Prosody(port, root / "prosody.log")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


def external(port: int, **params: object) -> dict[str, object]:
    return {"xmpp_server": "external", "xmpp_host": "127.0.0.1", "xmpp_port": port, "xmpp_jid": JID, **params}


def test_the_agent_learns_logged_in_to_prosody_and_its_password_is_never_stored(
    bdi_daemon: tuple[DaemonClient, Home], prosody: Prosody
) -> None:
    client, home = bdi_daemon
    run = run_to_end(client, bdi_config(episodes=50, **external(prosody.port)), {"XMPP_PASSWORD": PASSWORD})
    assert run.state is RunState.COMPLETED, run.reason
    assert len(episodes(home, run.run_id)) == 50
    assert f"Authenticated as {JID}" in prosody.log.read_text()
    assert files_containing(home.root, PASSWORD.encode()) == []


def test_a_wrong_password_fails_the_run_naming_the_account_and_server(
    bdi_daemon: tuple[DaemonClient, Home], prosody: Prosody
) -> None:
    client, _home = bdi_daemon
    run = run_to_end(client, bdi_config(episodes=5, **external(prosody.port)), {"XMPP_PASSWORD": "wrong"})
    assert run.state is RunState.FAILED
    assert f"XMPP login as {JID} at 127.0.0.1:{prosody.port} failed" in run.reason


def test_an_unreachable_server_fails_the_run_with_the_address_tried(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    client, _home = bdi_daemon
    port = _free_port()  # nothing listens there
    run = run_to_end(client, bdi_config(episodes=5, **external(port)), {"XMPP_PASSWORD": PASSWORD})
    assert run.state is RunState.FAILED
    assert f"XMPP server 127.0.0.1:{port} is unreachable" in run.reason


def test_an_external_server_without_a_password_is_not_launched(bdi_daemon: tuple[DaemonClient, Home]) -> None:
    client, _home = bdi_daemon
    run = run_to_end(client, bdi_config(episodes=5, **external(5222)))
    assert run.state is RunState.FAILED
    assert "needs the agent's password in the run's environment as XMPP_PASSWORD" in run.reason
