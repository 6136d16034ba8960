"""The live metric bridge: CleanRL's stdout lines and TensorBoard event files, turned into metrics as they appear."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_gui_cleanrl_worker.form import RETURN_METRIC

log = logging.getLogger(__name__)

# CleanRL's own progress lines, e.g. "global_step=1234, episodic_return=[21.]" and "SPS: 4321".
_EPISODE_LINE = re.compile(r"global_step=(\d+),\s*episodic_return=\[?\s*([-+0-9.eEnaif]+)\s*\]?")
_SPS_LINE = re.compile(r"^SPS:\s*([0-9.]+)")

RETURN_TAG = RETURN_METRIC
SPS_TAG = "charts/SPS"

Point = tuple[str, int, float]


@dataclass
class StdoutParser:
    """Turns CleanRL stdout lines into metric points, remembering the latest global step for SPS."""

    global_step: int = 0

    def parse(self, line: str) -> list[Point]:
        match = _EPISODE_LINE.search(line)
        if match:
            self.global_step = int(match.group(1))
            try:
                return [(RETURN_TAG, self.global_step, float(match.group(2)))]
            except ValueError:
                return []
        match = _SPS_LINE.match(line)
        if match:
            return [(SPS_TAG, self.global_step, float(match.group(1)))]
        return []


# A TFRecord: length (uint64 LE), masked CRC-32C of the length, the data, masked CRC-32C of the data.
_HEADER = 12
_FOOTER = 4
# No event gym_gui reads is this long; a longer "length" is damage, not a record to wait for.
_MAX_RECORD = 1 << 26
# Bytes before the read position remembered, to notice a file truncated and written again under it.
_FINGERPRINT = 16


@dataclass
class _EventFile:
    """How far one event file has been read, and what could not be read in it."""

    offset: int = 0  # bytes consumed: records read and bytes skipped
    fingerprint: bytes = b""  # the file's bytes just before ``offset``, as read
    newest: float = float("-inf")  # wall time of the newest event read
    read_after: float = float("-inf")  # read again from the start: only events newer than this count
    reread_until: int = 0  # ... and damage before this offset was reported the first time
    skipped_bytes: int = 0  # bytes that were not part of a readable record
    unreadable: int = 0  # records whose data did not match its checksum (each one point, or more)
    rewritten: int = 0  # times the file was found truncated and written again


class EventFileTail:
    """Reads the scalars TensorBoard event files under ``root`` gained since the last call.

    The files are read record by record from where the last call stopped (the TFRecord format,
    each record checked by its checksums). A damaged stretch — bytes appended that are not a
    record, a record whose data does not match its checksum, zeros where a file was cut — is
    skipped and reading re-synchronises on the next valid record, so every readable point is
    read. A file that shrank or whose bytes before the read position changed (truncated, then
    written again) is read again from its start, keeping only events newer than any read before.
    What was skipped is counted per file; :meth:`damage` says it in a line per stretch, once.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[Path, _EventFile] = {}
        self._damage: list[str] = []

    def directories(self) -> list[Path]:
        """Directories holding event files (CleanRL writes ``runs/<run_name>/``)."""
        return sorted({p.parent for p in self.root.glob("**/events.out.tfevents.*")})

    def damage(self) -> list[str]:
        """What was skipped since the last call, one line per damaged stretch, naming the file."""
        found, self._damage = self._damage, []
        return found

    def summary(self) -> list[str]:
        """Per damaged file, everything skipped in it so far."""
        lines = []
        for path, entry in sorted(self._files.items()):
            if entry.skipped_bytes or entry.unreadable or entry.rewritten:
                lines.append(
                    f"{self._name(path)}: {entry.unreadable} unreadable records (their points are lost) and "
                    f"{entry.skipped_bytes} bytes that were no record skipped; "
                    f"truncated and written again {entry.rewritten} times; every readable point was read"
                )
        return lines

    def poll(self, final: bool = False) -> list[Point]:
        """Points of the records added since the last call. With ``final`` (the writer has closed), an
        incomplete record at the end is damage rather than one still being written."""
        points: list[Point] = []
        for path in sorted(self.root.glob("**/events.out.tfevents.*")):
            entry = self._files.setdefault(path, _EventFile())
            try:
                points += self._read(path, entry, final)
            except OSError as exc:  # gone or unreadable for now: tried again at the next call
                log.warning("event file %s not read: %s", path, exc)
        return points

    def _name(self, path: Path) -> str:
        return str(path.relative_to(self.root.parent))

    def _read(self, path: Path, entry: _EventFile, final: bool) -> list[Point]:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if entry.offset:
                file.seek(entry.offset - len(entry.fingerprint))
                if size < entry.offset or file.read(len(entry.fingerprint)) != entry.fingerprint:
                    entry.rewritten += 1
                    self._damage.append(
                        f"{self._name(path)}: truncated and written again (now {size} bytes, "
                        f"{entry.offset} had been read): read again from its start, keeping the newer points"
                    )
                    entry.reread_until, entry.read_after = entry.offset, entry.newest
                    entry.offset, entry.fingerprint = 0, b""
            file.seek(entry.offset)
            data = file.read(size - entry.offset)
        points, used = self._records(path, entry, data, final)
        if used:
            consumed = entry.fingerprint + data[:used]
            entry.fingerprint = consumed[-_FINGERPRINT:]
            entry.offset += used
        return points

    def _records(self, path: Path, entry: _EventFile, data: bytes, final: bool) -> tuple[list[Point], int]:
        """The points in ``data`` (read at ``entry.offset``) and how many of its bytes were used."""
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

        points: list[Point] = []
        pos = 0
        skip_from: int | None = None  # where the damaged stretch being skipped began

        def report(at: int, line: str) -> bool:
            # Bytes read before the file was written again were accounted for then.
            if entry.offset + at < entry.reread_until:
                return False
            self._damage.append(f"{self._name(path)}: {line}")
            return True

        def end_skip(at: int) -> None:
            nonlocal skip_from
            if skip_from is not None:
                where = entry.offset + skip_from
                if report(skip_from, f"{at - skip_from} bytes that are no record skipped at byte {where}"):
                    entry.skipped_bytes += at - skip_from
                skip_from = None

        while len(data) - pos >= _HEADER:
            length, length_crc = struct.unpack_from("<QI", data, pos)
            if length <= _MAX_RECORD and masked_crc32c(data[pos : pos + 8]) == length_crc:
                end = pos + _HEADER + length + _FOOTER
                if end > len(data) and not final:
                    break  # still being written (or damage: decided when more has come)
                if end <= len(data):
                    payload = data[pos + _HEADER : end - _FOOTER]
                    (payload_crc,) = struct.unpack_from("<I", data, end - _FOOTER)
                    event = None
                    if masked_crc32c(payload) == payload_crc:
                        with contextlib.suppress(Exception):  # data that is no Event (DecodeError)
                            event = Event.FromString(payload)
                    if event is not None:
                        end_skip(pos)
                        if event.wall_time > entry.read_after:
                            entry.newest = max(entry.newest, event.wall_time)
                            points += _scalars(event)
                        pos = end
                        continue
                    if report(
                        pos,
                        f"the record at byte {entry.offset + pos} is unreadable (its data does "
                        "not match its checksum): its point is lost",
                    ):
                        entry.unreadable += 1
            # No record starts here: skip a byte (a stretch of zeros at once) and look again. A
            # record's claimed length is not trusted past a bad checksum: the next record may be inside.
            if skip_from is None:
                skip_from = pos
            zeros = len(data) - pos - len(data[pos:].lstrip(b"\0")) if data[pos] == 0 else 0
            pos += max(1, zeros - 7)  # a record's length has a non-zero byte among its first eight
        if final and pos < len(data):
            if skip_from is None:
                skip_from = pos
            pos = len(data)
        if skip_from is not None and (final or pos - skip_from > _MAX_RECORD):
            end_skip(pos)
        elif skip_from is not None:
            pos = skip_from  # decided at the next call, when more has been written after it
        return points, pos


def _scalars(event: Any) -> list[Point]:
    """The scalar points of one event: ``simple_value`` (torch's SummaryWriter) or a scalar tensor."""
    points: list[Point] = []
    if not event.HasField("summary"):
        return points
    for value in event.summary.value:
        if value.HasField("simple_value"):
            points.append((value.tag, int(event.step), float(value.simple_value)))
        elif value.HasField("tensor") and value.metadata.plugin_data.plugin_name == "scalars":
            from tensorboard.util.tensor_util import make_ndarray

            points.append((value.tag, int(event.step), float(make_ndarray(value.tensor))))
    return points


class Deduplicator:
    """Keeps one copy of the points that reach the bridge twice.

    The same episodic return and SPS come from stdout (at once) and from the event file (after
    TensorBoard's flush), in either order. Several episodes may end at one global step (vector
    envs), so returns are matched by step and value, counted; SPS lines carry no step of their
    own, so SPS is matched by value alone. Whichever copy comes first is sent; its twin is dropped.
    """

    def __init__(self) -> None:
        self._from_stdout: Counter[tuple[str, int, float]] = Counter()
        self._from_events: Counter[tuple[str, int, float]] = Counter()

    @staticmethod
    def _key(tag: str, step: int, value: float) -> tuple[str, int, float]:
        return (tag, step if tag == RETURN_TAG else -1, float(f"{value:.5g}"))

    def _fresh(
        self,
        points: list[Point],
        mine: Counter[tuple[str, int, float]],
        theirs: Counter[tuple[str, int, float]],
    ) -> list[Point]:
        out = []
        for tag, step, value in points:
            if tag in (RETURN_TAG, SPS_TAG):
                key = self._key(tag, step, value)
                if theirs[key] > 0:
                    theirs[key] -= 1
                    continue
                mine[key] += 1
            out.append((tag, step, value))
        return out

    def from_stdout(self, points: list[Point]) -> list[Point]:
        return self._fresh(points, self._from_stdout, self._from_events)

    def from_events(self, points: list[Point]) -> list[Point]:
        return self._fresh(points, self._from_events, self._from_stdout)
