"""A daemon listening beyond loopback: TLS with the home's CA only, the token as always, never plaintext."""

from __future__ import annotations

import ipaddress
import stat
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.channel import open_channel

from gym_gui.core.states import RunState
from gym_gui.daemon.tls import ensure_certificates
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import (
    assert_one_line_error,
    gym_gui,
    kill_run_workers,
    non_loopback_ipv4,
    random_config,
    stop_daemon,
)


def _health(channel: grpc.Channel, token: str | None) -> pb.Health:
    stub = pb_grpc.TrainerServiceStub(channel)
    metadata = [("authorization", f"Bearer {token}")] if token else []
    return stub.GetHealth(pb.HealthRequest(), metadata=metadata, timeout=5)


def test_a_bind_beyond_loopback_without_tls_is_refused_and_nothing_listens(home: Home) -> None:
    address = non_loopback_ipv4()
    result = gym_gui("daemon", "start", "--bind", address, "--no-tls", home=home.root)
    assert_one_line_error(result, f"refusing to listen on {address} without TLS")
    assert not home.daemon_json.exists()
    # The daemon itself refuses the same, whoever starts it.
    direct = subprocess.run(
        [sys.executable, "-m", "gym_gui.daemon", "--home", str(home.root), "--host", address, "--no-tls"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert direct.returncode == 2 and "without TLS" in direct.stderr
    assert not home.daemon_json.exists()


def test_a_daemon_bound_beyond_loopback_speaks_tls_with_the_homes_ca_only(
    home: Home, daemon_args: list[str], tmp_path: Path
) -> None:
    address = non_loopback_ipv4()
    client = DaemonClient.connect(home.root, daemon_args=[*daemon_args, "--host", address])
    try:
        info = client.info
        assert info.address.startswith(f"{address}:") and info.tls_ca == str(home.tls_dir / "ca.pem")
        for key in ("ca.key", "server.key"):
            assert stat.S_IMODE((home.tls_dir / key).stat().st_mode) == 0o600
        cert = x509.load_pem_x509_certificate((home.tls_dir / "server.pem").read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert ipaddress.ip_address(address) in names.get_values_for_type(x509.IPAddress)

        # A worker the daemon starts is handed the CA and connects over TLS: its run completes.
        record, _ = client.submit(random_config(episodes=3))
        final = client.wait_for_end(record.run_id, timeout=120)
        assert final.state is RunState.COMPLETED, final.reason

        # Plaintext gets nothing; TLS without the token is refused; a client trusting another CA fails.
        with grpc.insecure_channel(info.address) as plain, pytest.raises(grpc.RpcError) as refused:
            _health(plain, info.token)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        with open_channel(info.address, info.tls_ca) as secure, pytest.raises(grpc.RpcError) as anonymous:
            _health(secure, None)
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with open_channel(info.address, info.tls_ca) as secure:
            assert _health(secure, info.token).pid == info.pid
        other = ensure_certificates(tmp_path / "other-ca", address)
        with (
            open_channel(info.address, str(other.ca_cert)) as stranger,
            pytest.raises(grpc.RpcError) as untrusted,
        ):
            _health(stranger, info.token)
        assert untrusted.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        kill_run_workers(home)
        stop_daemon(client)


def test_loopback_stays_plaintext_by_default(client: DaemonClient) -> None:
    assert client.info.address.startswith("127.0.0.1:") and client.info.tls_ca is None
