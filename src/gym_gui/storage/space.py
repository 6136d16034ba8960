"""Free space where gym_gui stores data: how much is left, the error that says the disk is full, the reserve."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from gym_gui.core.errors import DiskFull

logger = logging.getLogger(__name__)

# What the daemon keeps allocated in the home so that, once the disk is full, the registry can
# still record how the runs ended: a state change takes a few pages, 2 MiB take hundreds.
RESERVE_BYTES = 2 * 1024 * 1024

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def format_bytes(count: int) -> str:
    """A byte count as a user reads it: 512 B · 4.1 kB · 12.3 MB · 1.5 GB (powers of 1000, as df -H)."""
    if count < 1000:
        return f"{count} B"
    value = float(count)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 1000:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} TB"


def disk_usage(path: Path) -> int:
    """The bytes of disk the files under ``path`` take (their allocated blocks, as du counts them; links
    not followed, files hard-linked twice counted once); 0 when nothing is there."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for directory, _dirs, files in os.walk(path):
        for name in (directory, *(os.path.join(directory, file) for file in files)):
            try:
                stat = os.lstat(name)
            except OSError:  # gone while counted
                continue
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem ``path`` (or its nearest existing parent) is on."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    while not os.path.ismount(path):
        path = path.parent
    return path


@dataclass(frozen=True)
class FreeSpace:
    """The space left on the filesystem of ``path``."""

    path: Path
    mount: Path  # where that filesystem is mounted
    free: int  # bytes an unprivileged writer may still take

    def describe(self) -> str:
        """E.g. ``12.3 MB free on /home``."""
        return f"{format_bytes(self.free)} free on {self.mount}"


def free_space(path: Path) -> FreeSpace:
    """The space left on the filesystem of ``path`` (or of its nearest existing parent).

    Raises:
        OSError: when the filesystem cannot be asked.
    """
    mount = mount_point(path)
    stat = os.statvfs(mount)
    return FreeSpace(path=Path(path), mount=mount, free=stat.f_bavail * stat.f_frsize)


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full: SQLITE_FULL or ENOSPC/EDQUOT."""
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno in _NO_SPACE


def disk_full(path: Path, consequence: str) -> DiskFull:
    """The error to raise when writing ``path`` found the disk full; ``consequence`` says what it means."""
    try:
        where = free_space(path).describe()
    except OSError:
        where = f"no space left on the filesystem of {path}"
    return DiskFull(f"disk full: {where} (writing {path}); {consequence}")


class SpaceReserve:
    """A file of ``size`` bytes, allocated while space is plentiful and given back when the disk fills.

    The daemon keeps one in its home (``Home.reserve_path``) for the run registry: when a write
    to the registry finds the disk full, the registry releases the reserve and writes again, so
    the end of a run is recorded even though the disk is full (see ``RunRegistry``). Once space
    returns, :meth:`ensure` allocates it again. Thread-safe.
    """

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self._path = Path(path)
        self._size = size
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    @property
    def size(self) -> int:
        return self._size

    @property
    def held(self) -> bool:
        """Whether the reserve is allocated now."""
        try:
            return self._path.stat().st_size >= self._size
        except FileNotFoundError:
            return False

    def ensure(self) -> bool:
        """Allocate the reserve unless it is; returns whether it is held.

        It is allocated only while at least twice its size is free, so taking it never fills a
        disk; a failed allocation leaves no file behind.
        """
        with self._lock:
            if self.held:
                return True
            try:
                if free_space(self._path.parent).free < 2 * self._size:
                    return False
                fd = os.open(self._path, os.O_WRONLY | os.O_CREAT, 0o600)
                try:
                    _allocate(fd, self._size)
                finally:
                    os.close(fd)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    self._path.unlink()
                logger.warning("space reserve %s not allocated: %s", self._path, exc)
                return False
            logger.info("space reserve %s: %s allocated", self._path, format_bytes(self._size))
            return True

    def release(self) -> bool:
        """Give the reserve's space back to the filesystem; returns whether there was any to give."""
        with self._lock:
            try:
                self._path.unlink()
            except FileNotFoundError:
                return False
            except OSError as exc:
                logger.error("space reserve %s cannot be released: %s", self._path, exc)
                return False
            logger.warning(
                "space reserve %s released: %s free again to record what happens",
                self._path,
                format_bytes(self._size),
            )
            return True


def _allocate(fd: int, size: int) -> None:
    """Take ``size`` bytes of real blocks for ``fd`` (not a sparse file, which would reserve nothing)."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    block = b"\0" * 65536
    written = 0
    while written < size:
        written += os.write(fd, block[: size - written])
    os.fsync(fd)
