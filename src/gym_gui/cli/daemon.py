"""`gym-gui daemon start|stop|status`: the trainer daemon of this home."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

from gym_gui.cli.app import app, console, open_home
from gym_gui.core.daemon_file import read_daemon_file
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
) -> None:
    """Start the daemon of this GYM_GUI_HOME (or say where the running one is)."""
    from gym_gui.daemon.tls import check_bind

    home = open_home()
    check_bind(bind, tls)  # refused here, before a daemon is started to refuse it
    args = ["--host", bind, "--port", str(port)]
    if tls is not None:
        args.append("--tls" if tls else "--no-tls")
    if foreground:
        from gym_gui.daemon.__main__ import main as daemon_main

        raise typer.Exit(daemon_main(["--home", str(home.root), *args]))
    with DaemonClient.connect(home.root, daemon_args=args) as client:
        health = client.health()
    secure = " over TLS (CA: " + client.info.tls_ca + ")" if client.info.tls_ca else ""
    console.print(f"daemon running at {health.address}{secure} (pid {health.pid}); log: {health.log_path}")


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
    """Address, uptime, runs by state and the log path of the daemon."""
    home = open_home()
    try:
        client = DaemonClient.connect(home.root, autostart=False)
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
    table.add_row("max concurrent runs", str(health.max_concurrent))
    runs = ", ".join(f"{state}: {n}" for state, n in sorted(health.runs_by_state.items())) or "none"
    table.add_row("runs", runs)
    console.print(table)
