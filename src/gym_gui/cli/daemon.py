"""`gym-gui daemon start|stop|status`: the trainer daemon of this home."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.table import Table

from gym_gui.cli.app import app, connect, console, open_home
from gym_gui.core.daemon_file import read_daemon_file
from gym_gui.core.daemon_options import (
    DaemonOptions,
    option_flag,
    read_daemon_options,
    shown_option,
    write_daemon_options,
)
from gym_gui.core.errors import ConfigError
from gym_gui.protocol.client import DaemonClient
from gym_gui.protocol.errors import DaemonError

daemon_app = typer.Typer(help="Start, stop and inspect the trainer daemon.", no_args_is_help=True)
app.add_typer(daemon_app, name="daemon")


@daemon_app.command("start")
def daemon_start(
    foreground: Annotated[
        bool, typer.Option(help="Run in this terminal instead of in the background.")
    ] = False,
    bind: Annotated[
        str,
        typer.Option(
            help="Address to listen on. Beyond loopback (another machine's workers connect) the daemon "
            "speaks TLS with a CA kept in the home's tls/ directory."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free one).", min=0, max=65535)] = 0,
    tls: Annotated[
        bool | None,
        typer.Option(
            "--tls/--no-tls", help="Speak TLS (default: only beyond loopback; --no-tls is refused there)."
        ),
    ] = None,
    max_concurrent: Annotated[
        int | None, typer.Option(help="Runs at once (default: the usable CPUs).", show_default=False)
    ] = None,
    min_free_mb: Annotated[
        float | None,
        typer.Option(
            help="Start no run with less free space on the home's disk, in MB (default 100; 0: never refuse)."
        ),
    ] = None,
    warn_free_mb: Annotated[
        float | None,
        typer.Option(
            help="Live runs warn below this free space on the home's disk, in MB (default 500; 0: never)."
        ),
    ] = None,
    heartbeat_timeout: Annotated[
        float | None,
        typer.Option(help="A run fails when its worker sends nothing for this many seconds (default 20)."),
    ] = None,
    cancel_grace: Annotated[
        float | None,
        typer.Option(help="Seconds from a cancel's SIGTERM to the worker group's SIGKILL (default 5)."),
    ] = None,
    defaults: Annotated[
        bool, typer.Option("--defaults", help="Forget the options the home keeps; those given here are kept.")
    ] = False,
) -> None:
    """Start the daemon of this GYM_GUI_HOME (or say where the running one is).

    The options given are kept in the home's daemon-options.json: every later start takes them,
    also a start on demand by any command or the window. A running daemon keeps the options it
    started with; it is told when they differ (`gym-gui daemon stop`, then start it again).
    """
    from gym_gui.daemon.tls import check_bind

    home = open_home()
    check_bind(bind, tls)  # refused here, before a daemon is started to refuse it
    given = _given_options(
        max_concurrent=max_concurrent,
        min_free_mb=min_free_mb,
        warn_free_mb=warn_free_mb,
        heartbeat_timeout=heartbeat_timeout,
        cancel_grace=cancel_grace,
    )
    kept = DaemonOptions() if defaults else read_daemon_options(home.daemon_options_path)
    options = kept.updated(given)
    if defaults or options != kept:
        write_daemon_options(home.daemon_options_path, options)
    args = ["--host", bind, "--port", str(port)]
    if tls is not None:
        args.append("--tls" if tls else "--no-tls")
    if foreground:
        from gym_gui.daemon.__main__ import main as daemon_main

        raise typer.Exit(daemon_main(["--home", str(home.root), *args]))
    with connect(daemon_args=args) as client:
        health = client.health()
    secure = " over TLS (CA: " + client.info.tls_ca + ")" if client.info.tls_ca else ""
    console.print(f"daemon running at {health.address}{secure} (pid {health.pid}); log: {health.log_path}")


def _given_options(**given: float | None) -> DaemonOptions:
    """The options typed on the command line, checked; a bad one is refused naming its flag."""
    try:
        return DaemonOptions.model_validate(
            {name: value for name, value in given.items() if value is not None}
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        flag = option_flag(str(error["loc"][0]))
        raise ConfigError(f"{flag}: {error['msg']} (got {error['input']})") from None


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon. Running workers keep going; the next daemon picks them up or reconciles them."""
    home = open_home()
    try:
        client = DaemonClient.connect(home.root, autostart=False)
    except DaemonError:
        console.print("no daemon is running")
        return
    pid = client.info.pid
    if client.stop():
        console.print(f"daemon (pid {pid}) stopped")
    else:
        console.print(f"daemon (pid {pid}) was asked to stop and has not exited after 15 s")


@daemon_app.command("status")
def daemon_status() -> None:
    """Address, uptime, options, runs by state and the log path of the daemon."""
    home = open_home()
    try:
        client = connect(autostart=False)
    except DaemonError as exc:
        info = read_daemon_file(home.daemon_json)
        console.print(
            f"not running ({exc})" if info is None else f"not answering (last seen at {info.address})"
        )
        raise typer.Exit(1) from None
    with client:
        health = client.health()
    table = Table(show_header=False, box=None)
    table.add_row("address", health.address)
    table.add_row("pid", str(health.pid))
    table.add_row("version", health.version)
    table.add_row("uptime", f"{time.time() - health.started_at:.0f}s")
    table.add_row("home", health.home)
    table.add_row("log", health.log_path)
    options = client.info.options
    if options is None:  # an older daemon, which published only this one
        table.add_row("max concurrent runs", str(health.max_concurrent))
    else:
        for name, value in options.model_dump().items():
            table.add_row(option_flag(name).removeprefix("--"), shown_option(name, value))
    if home.daemon_options_path.exists():
        table.add_row("options kept in", str(home.daemon_options_path))
    runs = ", ".join(f"{state}: {n}" for state, n in sorted(health.runs_by_state.items())) or "none"
    table.add_row("runs", runs)
    console.print(table)
