"""`python -m gym_gui.daemon`: run the trainer daemon in the foreground."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import signal
import sys
from pathlib import Path

from gym_gui.core.errors import ConfigError
from gym_gui.daemon.server import LOOPBACK, DaemonAlreadyRunning, DaemonServer, configure_logging
from gym_gui.daemon.supervisor import SupervisorSettings
from gym_gui.daemon.tls import check_bind, is_loopback
from gym_gui.storage.home import Home

# Exit status of a daemon that found another one already serving its home.
EXIT_ALREADY_RUNNING = 3
# glibc's mallopt parameter, and the size from which a block gets pages of its own (returned to the
# system when freed). glibc raises its default threshold to the largest block freed, so after a few
# large step batches every later one stays in the heap and the daemon's memory never shrinks back.
# 128 KiB (glibc's own starting value, held there): a flood's frames of just under 1 MiB each, at
# 1 MiB, stayed in the heap (sixteen flooding runs left 260–360 MB held after they ended).
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 128 * 1024


def _release_large_blocks() -> None:
    """Keep large blocks (step batches, frames) out of glibc's heap; no-op on another C library."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gym_gui.daemon", description="gym_gui trainer daemon")
    parser.add_argument(
        "--home", type=Path, default=None, help="GYM_GUI_HOME (default: the platform's data dir)"
    )
    parser.add_argument("--host", default=LOOPBACK, help="address to listen on (default: loopback only)")
    parser.add_argument(
        "--tls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="speak TLS (default: only when listening beyond loopback, where --no-tls is refused)",
    )
    parser.add_argument("--port", type=int, default=0, help="port (default: an ephemeral one)")
    defaults = SupervisorSettings()
    parser.add_argument("--max-concurrent", type=int, default=defaults.max_concurrent)
    parser.add_argument("--heartbeat-timeout", type=float, default=defaults.heartbeat_timeout)
    parser.add_argument("--cancel-grace", type=float, default=defaults.cancel_grace)
    parser.add_argument(
        "--min-free-mb",
        type=float,
        default=defaults.min_free_bytes / 1e6,
        help="refuse to start a run with less free space on the home's disk (MB; 0: never refuse)",
    )
    parser.add_argument(
        "--warn-free-mb",
        type=float,
        default=defaults.warn_free_bytes / 1e6,
        help="warn on live runs while the home's disk has less free space (MB; 0: never warn)",
    )
    args = parser.parse_args(argv)
    if args.max_concurrent < 1:
        parser.error("--max-concurrent must be at least 1")
    if args.min_free_mb < 0 or args.warn_free_mb < 0:
        parser.error("--min-free-mb and --warn-free-mb must not be negative")

    try:
        tls = check_bind(args.host, args.tls)
    except ConfigError as exc:
        parser.error(str(exc))
    _release_large_blocks()
    home = Home(args.home)
    home.ensure()
    configure_logging(home)
    if not is_loopback(args.host):
        logging.getLogger(__name__).warning("listening on %s: reachable beyond this machine", args.host)
    settings = SupervisorSettings(
        max_concurrent=args.max_concurrent,
        heartbeat_timeout=args.heartbeat_timeout,
        cancel_grace=args.cancel_grace,
        min_free_bytes=int(args.min_free_mb * 1e6),
        warn_free_bytes=int(args.warn_free_mb * 1e6),
    )
    server = DaemonServer(home, host=args.host, port=args.port, settings=settings, tls=tls)
    try:
        server.start()
    except DaemonAlreadyRunning as exc:
        print(f"gym_gui daemon: {exc}", file=sys.stderr)
        return EXIT_ALREADY_RUNNING
    signal.signal(signal.SIGTERM, lambda *_: server.request_stop())
    signal.signal(signal.SIGINT, lambda *_: server.request_stop())
    try:
        server.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
