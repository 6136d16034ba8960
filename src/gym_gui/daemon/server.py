"""The daemon process: one per GYM_GUI_HOME, gRPC on loopback, token-checked, supervising the runs."""

from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.channel import server_options

from gym_gui import __version__
from gym_gui.bus.run_bus import RunBus
from gym_gui.core.daemon_file import DaemonFile, read_daemon_file, write_daemon_file
from gym_gui.core.errors import GymGuiError
from gym_gui.daemon.auth import TokenInterceptor
from gym_gui.daemon.executors import Executor, LocalExecutor
from gym_gui.daemon.service import TrainerService, WorkerService
from gym_gui.daemon.supervisor import Supervisor, SupervisorSettings
from gym_gui.daemon.sweeping import Sweeping
from gym_gui.daemon.tls import WILDCARDS, ensure_certificates
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.space import SpaceReserve

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"


class DaemonAlreadyRunning(GymGuiError):
    """Another daemon holds this GYM_GUI_HOME."""


def configure_logging(home: Home, level: int = logging.INFO) -> None:
    """Log to ``$GYM_GUI_HOME/daemon.log``, rotated at 5 MB with 3 old files kept."""
    handler = logging.handlers.RotatingFileHandler(home.daemon_log, maxBytes=5_000_000, backupCount=3)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


class DaemonServer:
    """Owns the lock, the gRPC server, the registry and the supervisor of one GYM_GUI_HOME."""

    def __init__(
        self,
        home: Home,
        *,
        host: str = LOOPBACK,
        port: int = 0,
        settings: SupervisorSettings | None = None,
        executor: Executor | None = None,
        tls: bool = False,
    ) -> None:
        self.home = home
        self.host = host
        self.port = port
        self.tls = tls
        self.tls_ca: str | None = None
        self.settings = settings or SupervisorSettings()
        self.executor = executor or LocalExecutor()
        self.token = secrets.token_urlsafe(32)
        self.address = ""
        self._lock_fd: int | None = None
        self._stopped = threading.Event()
        self._server: grpc.Server | None = None
        self.supervisor: Supervisor | None = None
        self.sweeping: Sweeping | None = None

    def start(self) -> None:
        """Take the home's lock, reconcile what an earlier daemon left, listen, publish daemon.json.

        Raises:
            DaemonAlreadyRunning: naming the live daemon's address and pid.
        """
        self.home.ensure()
        self._take_lock()
        # Taken before anything else is written, so a full disk later still leaves room to record run ends.
        reserve = SpaceReserve(self.home.reserve_path)
        reserve.ensure()
        registry = RunRegistry(self.home.registry_path, reserve=reserve)
        bus = RunBus()
        server = grpc.server(
            ThreadPoolExecutor(max_workers=256, thread_name_prefix="grpc"),
            interceptors=[TokenInterceptor(self.token, self._is_worker_token)],
            options=server_options(),
        )
        bind = f"{self.host}:{self.port}"
        if self.tls:
            files = ensure_certificates(self.home.tls_dir, self.host)
            credentials = grpc.ssl_server_credentials(
                [(files.server_key.read_bytes(), files.server_cert.read_bytes())]
            )
            port = server.add_secure_port(bind, credentials)
            self.tls_ca = str(files.ca_cert)
        else:
            port = server.add_insecure_port(bind)
        # Clients on this machine reach a wildcard bind on loopback (the certificate names it).
        host = LOOPBACK if self.host in WILDCARDS else self.host
        self.address = f"{host}:{port}"
        self.supervisor = Supervisor(
            self.home, registry, bus, self.executor, self.address, self.settings, tls_ca=self.tls_ca
        )
        self.sweeping = Sweeping(self.supervisor)
        trainer = TrainerService(
            self.home, registry, bus, self.supervisor, self.address, self.request_stop, self.sweeping
        )
        pb_grpc.add_TrainerServiceServicer_to_server(trainer, server)
        pb_grpc.add_WorkerServiceServicer_to_server(WorkerService(self.supervisor, bus), server)
        self.supervisor.reconcile()
        self.sweeping.resume()
        server.start()
        self._server = server
        self.supervisor.start_loop()
        self.sweeping.start_loop()
        write_daemon_file(
            self.home.daemon_json,
            DaemonFile(
                address=self.address,
                tls_ca=self.tls_ca,
                pid=os.getpid(),
                version=__version__,
                token=self.token,
                started_at=time.time(),
                home=str(self.home.root),
                log_path=str(self.home.daemon_log),
                settings=self.home.daemon_settings(),
                options=self.settings.options(),
            ),
        )
        log.info("daemon %s listening on %s (home %s)", __version__, self.address, self.home.root)

    def _is_worker_token(self, token: str) -> bool:
        return self.supervisor is not None and self.supervisor.is_worker_token(token)

    def _take_lock(self) -> None:
        fd = os.open(self.home.daemon_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            info = read_daemon_file(self.home.daemon_json)
            where = f" at {info.address} (pid {info.pid})" if info else ""
            raise DaemonAlreadyRunning(f"a gym_gui daemon already runs for {self.home.root}{where}") from None
        self._lock_fd = fd

    def request_stop(self) -> None:
        self._stopped.set()

    def wait(self) -> None:
        while not self._stopped.wait(0.5):
            pass

    def stop(self, grace: float = 2.0) -> None:
        """Stop serving; running workers are left running for the next daemon."""
        if self.sweeping is not None:
            self.sweeping.stop_loop()
        if self.supervisor is not None:
            self.supervisor.stop_loop()
        # The streams end before storage closes: a worker's is cut (it sends what was not confirmed
        # again to the next daemon), never refused by a closed store.
        if self._server is not None:
            self._server.stop(grace).wait(grace + 1)
        if self.supervisor is not None:
            self.supervisor.close()
        info = read_daemon_file(self.home.daemon_json)
        if info is not None and info.pid == os.getpid():
            self.home.daemon_json.unlink(missing_ok=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        log.info("daemon stopped")
