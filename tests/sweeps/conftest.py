"""The sweep tests' PostgreSQL: one server for the session, in a temporary directory on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.postgres import Postgres, postgres_server


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as server:
        yield server
