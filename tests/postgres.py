"""Debian's PostgreSQL 15 started in a temporary directory on loopback, for the tests of studies shared
by several daemons.

PostgreSQL refuses to run as root: as root (the suite's machines) the server runs as the
``postgres`` user the Debian package made, its directory chowned to it; as anyone else it runs as
that user. Its unix socket is in the directory, its TCP port a free one on 127.0.0.1. The
superuser connects through the socket without a password; the tests' role logs in over TCP with
a password (scram-sha-256), which only the daemons' environment holds (``PGPASSWORD``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SUPERUSER = "admin"


@dataclasses.dataclass(frozen=True)
class Postgres:
    """A running server and the role and database the tests use."""

    port: int
    socket_dir: Path
    user: str
    password: str
    database: str

    @property
    def url(self) -> str:
        """The SQLAlchemy URL a sweep spec names: no password (libpq takes it from PGPASSWORD)."""
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{self.database}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(args: list[str], cwd: Path) -> None:
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")


@contextlib.contextmanager
def postgres_server(user: str = "gym", database: str = "studies") -> Iterator[Postgres]:
    """A PostgreSQL server in a fresh temporary directory with the role ``user`` (a random password)
    owning the database ``database``; stopped and removed at the end."""
    import psycopg
    from psycopg import sql

    root = Path(tempfile.mkdtemp(prefix="gym-gui-pg-"))
    as_server: list[str] = []
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(root, account.pw_uid, account.pw_gid)
        as_server = ["runuser", "-u", "postgres", "--"]
    data = root / "data"
    port = _free_port()
    started = False
    try:
        _run(
            [
                *as_server,
                str(PG_BIN / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "-E",
                "UTF8",
                "--locale=C",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
            ],
            cwd=root,
        )
        with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{root}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 60\n"
            )
        _run(
            [
                *as_server,
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(root / "server.log"),
                "-w",
                "start",
            ],
            cwd=root,
        )
        started = True
        password = secrets.token_urlsafe(18)
        with psycopg.connect(
            host=str(root), port=port, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as db:
            db.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(user), sql.Literal(password)
                )
            )
            db.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(user))
            )
        yield Postgres(port=port, socket_dir=root, user=user, password=password, database=database)
    finally:
        if started:
            _run([*as_server, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], cwd=root)
        shutil.rmtree(root, ignore_errors=True)
