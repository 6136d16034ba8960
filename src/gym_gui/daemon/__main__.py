"""`python -m gym_gui.daemon`: run the trainer daemon in the foreground."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import signal
import sys
from pathlib import Path

from pydantic import ValidationError

from gym_gui.core.config import format_validation_error
from gym_gui.core.daemon_options import DaemonOptions, read_daemon_options
from gym_gui.core.errors import ConfigError
from gym_gui.daemon.server import LOOPBACK, DaemonAlreadyRunning, DaemonServer, configure_logging
from gym_gui.daemon.supervisor import SupervisorSettings
from gym_gui.daemon.tls import check_bind, is_loopback
from gym_gui.storage.home import Home

# Exit status of a daemon that found another one already serving its home.
EXIT_ALREADY_RUNNING = 3
# Exit status of a daemon refused its options (argparse's own for a bad argument).
EXIT_USAGE = 2
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
    # Each option overrides, for this daemon only, what the home's daemon-options.json keeps
    # (`gym-gui daemon start` writes it); left out, the file's value or the default holds.
    parser.add_argument(
        "--max-concurrent", type=int, default=None, help="runs at once (default: the usable CPUs)"
    )
    parser.add_argument("--heartbeat-timeout", type=float, default=None, help="seconds (default 20)")
    parser.add_argument("--cancel-grace", type=float, default=None, help="seconds (default 5)")
    parser.add_argument(
        "--min-free-mb",
        type=float,
        default=None,
        help="refuse to start a run with less free space on the home's disk (MB, default 100; 0: never refuse)",
    )
    parser.add_argument(
        "--warn-free-mb",
        type=float,
        default=None,
        help="warn on live runs while the home's disk has less free space (MB, default 500; 0: never warn)",
    )
    args = parser.parse_args(argv)
    home = Home(args.home)
    given = {name: getattr(args, name) for name in DaemonOptions.model_fields}
    try:
        options = read_daemon_options(home.daemon_options_path).updated(
            DaemonOptions.model_validate({name: value for name, value in given.items() if value is not None})
        )
    except ValidationError as exc:
        parser.error(f"invalid option: {format_validation_error(exc)}")
    except ConfigError as exc:  # the home's file: one line naming it, whoever started this daemon
        print(f"gym_gui daemon: {exc}", file=sys.stderr)
        return EXIT_USAGE

    try:
        tls = check_bind(args.host, args.tls)
    except ConfigError as exc:
        parser.error(str(exc))
    _release_large_blocks()
    home.ensure()
    configure_logging(home)
    if not is_loopback(args.host):
        logging.getLogger(__name__).warning("listening on %s: reachable beyond this machine", args.host)
    settings = SupervisorSettings.from_options(options)
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
