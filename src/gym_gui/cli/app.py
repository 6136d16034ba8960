"""The `gym-gui` typer app and what every command shares: the consoles, the home, the daemon client,
how states and times are shown, and the entry point that turns every error into one line."""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from typer._click import exceptions as click_errors  # typer carries its own click

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord
from gym_gui.storage.home import Home

if TYPE_CHECKING:
    from gym_gui.protocol.client import DaemonClient

app = typer.Typer(
    help="gym_gui: a research cockpit for reinforcement learning. With no command, `gym-gui` opens the cockpit window.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _command_line() -> None:
    # A callback keeps `gym-gui NAME …` a group even when a command's module registers one command
    # only (`gym-gui algorithms`, `gym-gui compare`, loaded alone): without it Typer makes that
    # command the whole program and NAME an unexpected argument.
    pass


# No emoji codes: a run's reason or a parameter may hold ":name:" text, and it is shown as it is.
console = Console(emoji=False)
err_console = Console(stderr=True, emoji=False)
# Piped or redirected, output is as wide as its values: a script or a log file gets every value of a
# table whole, where rich would fit it to 80 columns and cut cells with "…".
WHOLE_WIDTH = 100_000
if not console.is_terminal:
    console.width = WHOLE_WIDTH

JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON document instead of the table, for scripts (README: Output for scripts).",
    ),
]

_STATE_STYLE = {
    "QUEUED": "dim",
    "STARTING": "cyan",
    "RUNNING": "bold cyan",
    "PAUSED": "yellow",
    "COMPLETED": "green",
    "FAILED": "bold red",
    "CANCELLED": "magenta",
    "LOST": "red",
    "PRUNED": "cyan",
}


def open_home() -> Home:
    """This shell's home (``GYM_GUI_HOME`` or the platform's default), its directories made."""
    home = Home()
    home.ensure()
    return home


def connect(autostart: bool = True, daemon_args: list[str] | None = None) -> DaemonClient:
    """A client of the home's daemon (started with ``daemon_args`` when none runs, unless ``autostart``
    is False)."""
    # Imported here: gRPC and the wire messages are paid for by the commands that call the daemon.
    from gym_gui.protocol.client import DaemonClient

    home = open_home()
    client = DaemonClient.connect(home.root, autostart=autostart, daemon_args=daemon_args)
    # A running daemon keeps the settings and options it started with: say so when this shell's or
    # the home's differ.
    for note in home.daemon_differences(client.info):
        err_console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False, soft_wrap=True)
    return client


def clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters on a terminal, where a table must fit; whole otherwise."""
    if console.is_terminal and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def print_json(document: object) -> None:
    """Print ``document`` as one JSON document on stdout (a listing's ``--json``): records as objects,
    states as their names, paths as text, times as Unix seconds."""
    print(json.dumps(document, indent=2, default=_plain), flush=True)


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not shown as JSON")


def state_markup(state: str) -> str:
    """A run state in its colour, as rich markup."""
    return f"[{_STATE_STYLE.get(state, '')}]{state}[/]"


def when(stamp: float) -> str:
    """A Unix time as local date and time ("-" for none)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def elapsed(info: RunRecord) -> str:
    """How long a run has run (so far, while it runs)."""
    if not info.started_at:
        return "-"
    seconds = (info.ended_at or time.time()) - info.started_at
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}m"


def main(argv: list[str] | None = None) -> None:
    """Entry point: one clear line and a non-zero exit for every error.

    gym_gui's own errors exit 1; usage errors (an unknown option, a missing or malformed argument)
    exit 2 as click's do, but on one line that names the command to ask for help.
    """
    try:
        code = app(args=argv, prog_name="gym-gui", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()  # a group called without a command: its help is the answer
        sys.exit(exc.exit_code)
    except click_errors.UsageError as exc:
        where = f" (`{exc.ctx.command_path} --help` lists what it takes)" if exc.ctx is not None else ""
        _error(f"{exc.format_message()}{where}")
        sys.exit(exc.exit_code)
    except click_errors.ClickException as exc:
        _error(exc.format_message())
        sys.exit(exc.exit_code)
    except typer.Abort:
        _error("aborted")
        sys.exit(1)
    except GymGuiError as exc:
        _error(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def _error(message: str) -> None:
    # One line whatever the terminal width: a user greps for it, a script reads it.
    text = " ".join(message.split())
    err_console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)
