"""A full disk, on a small filesystem mounted for the test: storage says "disk full", keeps what it stored,
and the registry, given a space reserve, still records a run's end."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gym_gui.core.errors import DiskFull
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.space import RESERVE_BYTES, SpaceReserve, format_bytes, free_space
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_writer import TelemetryWriter
from tests.support import fill, small_filesystem

MakeRecord = Callable[..., RunRecord]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Path]:
    with small_filesystem(tmp_path / "small", 8) as mount:
        yield mount


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_byte_counts_read_as_df_shows_them() -> None:
    assert [format_bytes(n) for n in (0, 999, 4096, 12_345_678, 1_500_000_000, 2 * 10**12)] == [
        "0 B",
        "999 B",
        "4.1 kB",
        "12.3 MB",
        "1.5 GB",
        "2.0 TB",
    ]


def test_free_space_names_the_filesystem_of_a_path(small: Path) -> None:
    space = free_space(small / "not" / "yet" / "there")
    assert space.mount == small
    assert 0 < space.free <= 8 * 1024 * 1024
    assert space.describe().endswith(f"free on {small}")


def test_a_writer_that_fills_the_disk_fails_with_disk_full_and_keeps_what_it_committed(small: Path) -> None:
    path = small / "run" / "telemetry.sqlite"
    writer = TelemetryWriter(path, max_pending=4)
    writer.start()
    observation = "[" + ",".join(["0.125"] * 200) + "]"
    failure: DiskFull | None = None
    for batch in range(100_000):  # 8 MB hold far fewer: the loop ends by the disk filling
        rows = [(0, batch * 64 + i, 0.0, 0, 0, "1", observation, "{}", None, 1.0) for i in range(64)]
        try:
            writer.put_steps(rows)
        except DiskFull as exc:
            failure = exc
            break
    assert failure is not None, "the disk never filled"
    assert writer.close() is False
    message = str(failure)
    assert message.startswith("disk full: ") and f"free on {small}" in message, message
    assert str(path) in message and "cannot rollback" not in message
    assert isinstance(writer.error, DiskFull)
    assert _integrity(path) == "ok"
    reader = TelemetryReader(path)
    assert reader.step_count() == writer.steps_written > 0
    reader.close()


def test_the_registry_records_a_change_on_a_full_disk_by_releasing_its_reserve(
    small: Path, make_record: MakeRecord
) -> None:
    home = Home(small / "home").ensure()
    reserve = SpaceReserve(home.reserve_path)
    assert reserve.ensure() and reserve.held
    registry = RunRegistry(home.registry_path, reserve=reserve)
    registry.create(make_record("r", state=RunState.RUNNING))
    assert reserve.ensure()  # already held: nothing changes
    fill(small)
    assert free_space(small).free < 4096

    registry.transition("r", RunState.FAILED, "disk full")
    assert not reserve.held
    assert registry.get("r").state is RunState.FAILED
    # The reserve is not taken again while the disk has no room for it.
    assert reserve.ensure() is False and not reserve.held

    # Without a reserve left, a write that does not fit says so and changes nothing.
    registry.create(make_record("s", state=RunState.RUNNING))
    fill(small)
    with pytest.raises(DiskFull, match=r"^disk full: .* free on .*registry\.sqlite"):
        for i in range(1000):  # the WAL holds a few spare frames: fill them first
            registry.set_archived("s", bool(i % 2))
    assert registry.history("r")[-1].to_state is RunState.FAILED
    registry.close()
    assert _integrity(home.registry_path) == "ok"


def test_the_reserve_is_taken_only_while_twice_its_size_is_free(small: Path) -> None:
    reserve = SpaceReserve(small / "space.reserve", size=3 * 1024 * 1024)
    assert reserve.ensure() and reserve.path.stat().st_blocks * 512 >= reserve.size  # real blocks
    assert reserve.release() and not reserve.release()
    big = SpaceReserve(small / "big.reserve", size=5 * 1024 * 1024)
    assert big.ensure() is False and not big.path.exists()
    assert RESERVE_BYTES < 8 * 1024 * 1024 // 2
