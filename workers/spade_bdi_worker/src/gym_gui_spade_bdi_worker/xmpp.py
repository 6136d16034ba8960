"""The XMPP server the agent logs in to: SPADE's embedded one on loopback, or an external one.

The embedded server (pyjabber) would by default also listen on the machine's outward address and
serve an admin page and an upload service over HTTP; here it listens on 127.0.0.1 only, on ports
the kernel picks (one server per worker, started and stopped with it), with no HTTP server, and
keeps its accounts in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import attrs
import pyjabber
from pyjabber import AppConfig
from pyjabber.server import Server
from pyjabber.server_parameters import Parameters

LOOPBACK_DOMAIN = "localhost"
READY_TIMEOUT = 10.0


class XMPPUnavailable(RuntimeError):
    """The XMPP server cannot be reached or does not speak XMPP; the message names the address tried."""


@dataclass(frozen=True)
class XMPPAccount:
    """Where and as whom the agent logs in. ``password`` lives in memory only."""

    jid: str
    password: str
    host: str
    port: int
    register: bool  # create the account on first login (the embedded server's throwaway accounts)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class LoopbackXMPPServer(Server):
    """pyjabber's server on 127.0.0.1 only, its ports picked by the kernel, without its HTTP side."""

    def __init__(self, cert_dir: str) -> None:
        defaults = Parameters()
        super().__init__(
            Parameters(
                host=LOOPBACK_DOMAIN,
                client_port=0,
                server_port=0,
                database_in_memory=True,
                cert_path=cert_dir,
                # Without the upload service pyjabber starts no HTTP server (nor its admin page).
                plugins=[plugin for plugin in defaults.plugins if "upload" not in plugin],
                items={name: item for name, item in defaults.items.items() if not name.startswith("upload")},
            )
        )
        # pyjabber also listens on the address its outward route uses; never here.
        self._public_ip = None
        config = AppConfig.app_config
        assert config is not None
        # Passwords are hashed in a process pool, forked from a process with gRPC's threads; hash in a thread.
        config.process_pool_exe.shutdown()
        AppConfig.app_config = attrs.evolve(
            config, ip=[self._host_ip], process_pool_exe=ThreadPoolExecutor(1, thread_name_prefix="xmpp-hash")
        )

    @property
    def port(self) -> int:
        """The client port the kernel gave the listener (once :attr:`ready` is set)."""
        return int(self._client_listener.sockets[0].getsockname()[1])

    def listening(self) -> list[tuple[str, int]]:
        """Every address the server listens on (clients and servers)."""
        return [
            socket.getsockname()[:2]
            for listener in (self._client_listener, self._server_listener)
            if listener is not None
            for socket in listener.sockets
        ]


class EmbeddedXMPP:
    """The embedded server for the length of an ``async with``: started, checked ready, stopped.

    Its TLS certificate is made for this server alone, in a temporary directory, from the CA
    pyjabber ships (pyjabber would otherwise write it into its installed package, shared by
    every worker of the bundle).
    """

    def __init__(self) -> None:
        self._certs = tempfile.TemporaryDirectory(prefix="gym-gui-xmpp-")
        shipped = Path(pyjabber.__file__).parent / "network" / "certs"
        for name in ("ca_cert.pem", "ca_key.pem"):
            shutil.copy(shipped / name, Path(self._certs.name) / name)
        self.server: LoopbackXMPPServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> XMPPAccount:
        self.server = LoopbackXMPPServer(self._certs.name)
        self._task = asyncio.create_task(self.server.start(), name="xmpp-server")
        ready = asyncio.create_task(self.server.ready.wait())
        done, _ = await asyncio.wait(
            {ready, self._task}, timeout=READY_TIMEOUT, return_when="FIRST_COMPLETED"
        )
        if ready not in done:
            ready.cancel()
            raise XMPPUnavailable(f"the embedded XMPP server on {LOOPBACK_DOMAIN} did not start")
        account = XMPPAccount(
            jid=f"bdi@{LOOPBACK_DOMAIN}",
            password=secrets.token_urlsafe(24),
            host="127.0.0.1",
            port=self.server.port,
            register=True,
        )
        await check_ready(account)
        return account

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, SystemExit):
                await self._task
        self._certs.cleanup()


async def check_ready(account: XMPPAccount, timeout: float = READY_TIMEOUT) -> None:
    """Open a stream to the server and wait for its answer: it is there and speaks XMPP.

    Raises:
        XMPPUnavailable: naming the address tried and what went wrong.
    """
    domain = account.jid.split("@", 1)[1]
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(account.host, account.port), timeout)
    except (OSError, TimeoutError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "no answer"
        raise XMPPUnavailable(f"XMPP server {account.address} is unreachable ({why})") from None
    try:
        writer.write(
            (
                f"<?xml version='1.0'?><stream:stream to='{domain}' version='1.0' "
                "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"
            ).encode()
        )
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(4096), timeout)
    except (OSError, TimeoutError):
        answer = b""
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if b"stream" not in answer:
        raise XMPPUnavailable(f"{account.address} answered, but not as an XMPP server for {domain}")
