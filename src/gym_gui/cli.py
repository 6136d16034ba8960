"""`gym-gui`: the command line of gym_gui — train, inspect, watch and manage runs through the daemon."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from gym_gui_sdk import trainer_pb2 as pb
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gym_gui.core.config import RunConfig, parse_run_config, run_config_schema
from gym_gui.core.daemon_file import read_daemon_file
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.protocol.errors import DaemonError
from gym_gui.storage.home import Home
from gym_gui.storage.telemetry import TelemetryReader

app = typer.Typer(
    help="gym_gui: a research cockpit for reinforcement learning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
daemon_app = typer.Typer(help="Start, stop and inspect the trainer daemon.", no_args_is_help=True)
app.add_typer(daemon_app, name="daemon")

console = Console()
err_console = Console(stderr=True)

_STATE_STYLE = {
    "QUEUED": "dim",
    "STARTING": "cyan",
    "RUNNING": "bold cyan",
    "PAUSED": "yellow",
    "COMPLETED": "green",
    "FAILED": "bold red",
    "CANCELLED": "magenta",
    "LOST": "red",
}


def _home() -> Home:
    home = Home()
    home.ensure()
    return home


def _client(autostart: bool = True) -> DaemonClient:
    return DaemonClient.connect(_home().root, autostart=autostart)


def _state(state: str) -> str:
    return f"[{_STATE_STYLE.get(state, '')}]{state}[/]"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def _elapsed(info: pb.RunInfo) -> str:
    if not info.started_at:
        return "-"
    seconds = (info.ended_at or time.time()) - info.started_at
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}m"


# ------------------------------------------------------------------ daemon


@daemon_app.command("start")
def daemon_start(
    foreground: Annotated[
        bool, typer.Option(help="Run in this terminal instead of in the background.")
    ] = False,
) -> None:
    """Start the daemon of this GYM_GUI_HOME (or say where the running one is)."""
    home = _home()
    if foreground:
        from gym_gui.daemon.__main__ import main as daemon_main

        raise typer.Exit(daemon_main(["--home", str(home.root)]))
    with DaemonClient.connect(home.root) as client:
        health = client.health()
    console.print(f"daemon running at {health.address} (pid {health.pid}); log: {health.log_path}")


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon. Running workers keep going; the next daemon picks them up or reconciles them."""
    home = _home()
    try:
        client = DaemonClient.connect(home.root, autostart=False)
    except DaemonError:
        console.print("no daemon is running")
        return
    pid = client.info.pid
    client.shutdown()
    client.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.05)
    console.print(f"daemon (pid {pid}) stopped")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@daemon_app.command("status")
def daemon_status() -> None:
    """Address, uptime, runs by state and the log path of the daemon."""
    home = _home()
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


# ------------------------------------------------------------------ runs


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise ConfigError(f"--param {text!r}: use name=value")
    name, raw = text.split("=", 1)
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return name.strip(), value


def build_config(
    config_file: Path | None,
    worker: str | None,
    env: str | None,
    seed: int | None,
    episodes: int | None,
    total_timesteps: int | None,
    algo: str | None,
    params: list[str],
    dry_run: bool,
    notes: str | None,
    render_fps: float | None,
) -> RunConfig:
    """A RunConfig from a JSON file and/or flags (flags win over the file's values)."""
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            text = config_file.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"config file {config_file} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file {config_file} must hold a JSON object")
    if worker is not None:
        data["worker"] = worker
    if env is not None:
        data["env_id"] = env
    if seed is not None:
        data["seed"] = seed
    if episodes is not None or total_timesteps is not None:
        budget = dict(data.get("budget") or {})
        if episodes is not None:
            budget["episodes"] = episodes
        if total_timesteps is not None:
            budget["timesteps"] = total_timesteps
        data["budget"] = budget
    if algo is not None:
        data["algorithm"] = algo
    if params:
        data["params"] = {**(data.get("params") or {}), **dict(_parse_param(p) for p in params)}
    if dry_run:
        data["dry_run"] = True
    if notes is not None:
        data["notes"] = notes
    if render_fps is not None:
        data["telemetry"] = {**(data.get("telemetry") or {}), "render_fps": render_fps}
    return parse_run_config(data)


@app.command()
def train(
    worker: Annotated[str | None, typer.Option(help="Worker kind (random, cleanrl, …).")] = None,
    env: Annotated[str | None, typer.Option(help="Environment id, e.g. FrozenLake-v1.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the first episode.")] = None,
    episodes: Annotated[int | None, typer.Option(help="Episodes to run.")] = None,
    total_timesteps: Annotated[int | None, typer.Option(help="Environment steps to run.")] = None,
    algo: Annotated[str | None, typer.Option(help="Algorithm (for workers that have several).")] = None,
    param: Annotated[
        list[str] | None, typer.Option(help="Algorithm parameter name=value (repeatable).")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="RunConfig JSON file; flags override its values.")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Show what would run, launch nothing.")] = False,
    notes: Annotated[str | None, typer.Option(help="Free text kept with the run.")] = None,
    render_fps: Annotated[
        float | None, typer.Option(help="Frames per second for pixel environments.")
    ] = None,
    detach: Annotated[bool, typer.Option(help="Submit and return at once.")] = False,
) -> None:
    """Start a run and follow it with a progress bar (or --detach)."""
    run_config = build_config(
        config, worker, env, seed, episodes, total_timesteps, algo, param or [], dry_run, notes, render_fps
    )
    with _client() as client:
        record, _ = client.submit(run_config)
        console.print(f"run [bold]{record.run_id}[/] {_state(record.state.value)}")
        if detach:
            return
        final = follow(client, record.run_id, run_config)
    _print_end(final)
    if final.state != RunState.COMPLETED.value:
        raise typer.Exit(1)


def follow(client: DaemonClient, run_id: str, config: RunConfig) -> pb.RunInfo:
    """Show a progress bar until the run ends; returns its final info."""
    by_episodes = config.budget.episodes is not None
    total = config.budget.episodes if by_episodes else config.budget.timesteps
    unit = "episodes" if by_episodes else "steps"
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TextColumn("{task.fields[state]}"),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(run_id[:48], total=total, state="")
        while True:
            detail = client.get_run(run_id)
            done = detail.progress.episodes if by_episodes else detail.progress.steps
            progress.update(task, completed=done, state=_state(detail.info.state))
            if RunState(detail.info.state).terminal:
                return detail.info
            time.sleep(0.25)


def _print_end(info: pb.RunInfo) -> None:
    reason = f": {info.reason}" if info.reason else ""
    console.print(f"run [bold]{info.run_id}[/] {_state(info.state)}{reason}")


@app.command()
def runs(all_: Annotated[bool, typer.Option("--all", help="Include archived runs.")] = False) -> None:
    """The runs table."""
    with _client() as client:
        infos = client.list_runs(include_archived=all_)
    table = Table("run", "worker", "env", "state", "created", "elapsed", "reason")
    for info in infos:
        name = info.run_id + (" [dim](archived)[/]" if info.archived else "")
        table.add_row(
            name,
            info.worker,
            info.env_id,
            _state(info.state),
            _when(info.created_at),
            _elapsed(info),
            info.reason[:60],
        )
    console.print(table)


@app.command()
def show(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Everything about one run: state history, progress, episodes and where its files are."""
    run_id = validate_run_id(run)
    with _client() as client:
        detail = client.get_run(run_id)
    info = detail.info
    table = Table(show_header=False, box=None)
    table.add_row("run", info.run_id)
    table.add_row("worker", f"{info.worker} ({info.lane} lane)")
    table.add_row("env", info.env_id)
    table.add_row("state", _state(info.state) + (f": {info.reason}" if info.reason else ""))
    if info.has_exit_code:
        table.add_row("exit code", str(info.exit_code))
    table.add_row("created", _when(info.created_at))
    table.add_row("elapsed", _elapsed(info))
    table.add_row("directory", info.run_dir)
    table.add_row("archived", "yes" if info.archived else "no")
    telemetry = Path(info.run_dir) / "telemetry.sqlite"
    if telemetry.exists():
        reader = TelemetryReader(telemetry)
        try:
            per_episode = reader.steps_per_episode()
            episodes = reader.episodes()
            stored = reader.step_count()
            tags = reader.metric_tags()
        finally:
            reader.close()
        declared = sum(e.steps for e in episodes)
        mismatched = [e.episode for e in episodes if per_episode.get(e.episode, 0) != e.steps]
        check = "[green]match[/]" if not mismatched else f"[red]{len(mismatched)} episodes differ[/]"
        table.add_row("episodes", str(len(episodes)))
        table.add_row("steps stored", f"{stored} (episode lengths sum to {declared}: {check})")
        if episodes:
            returns = [e.total_reward for e in episodes]
            table.add_row("return", f"mean {sum(returns) / len(returns):.3f}, last {returns[-1]:.3f}")
        table.add_row("metrics", ", ".join(tags) or "none")
    console.print(table)
    history = Table("time", "from", "to", "reason", title="state history")
    for change in detail.history:
        history.add_row(_when(change.time), change.from_state or "-", _state(change.to_state), change.reason)
    console.print(history)


@app.command()
def watch(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Follow a run live: episodes, metrics and state changes as they arrive."""
    run_id = validate_run_id(run)
    with _client() as client:
        stream = client.subscribe(run_id, credits=8)
        view = _WatchView(run_id)
        try:
            with Live(view.render(), console=console, refresh_per_second=8) as live:
                for event in stream:
                    if view.apply(event):
                        stream.grant(1)
                    live.update(view.render())
                    if view.ended:
                        break
        finally:
            stream.close()
    if view.final is not None:
        reason = f": {view.final.reason}" if view.final.reason else ""
        console.print(f"run [bold]{run_id}[/] {_state(view.final.to_state)}{reason}")


class _WatchView:
    """What `gym-gui watch` shows, updated event by event."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.state = "?"
        self.episodes = 0
        self.steps = 0
        self.returns: list[float] = []
        self.metrics: dict[str, tuple[int, float]] = {}
        self.starved = False
        self.ended = False
        self.final: pb.StateChange | None = None
        self.messages: list[str] = []

    def apply(self, event: pb.TelemetryEvent) -> bool:
        """Fold ``event`` in; True when it cost a credit."""
        body = event.WhichOneof("body")
        if body == "steps":
            self.steps += len(event.steps.step)
            return True
        if body == "episode":
            self.episodes += 1
            self.returns.append(event.episode.total_reward)
        elif body == "metrics":
            for m in event.metrics.metrics:
                self.metrics[m.tag] = (m.step, m.value)
        elif body == "state":
            self.state = event.state.to_state
            if RunState(self.state).terminal:
                self.ended = True
                self.final = event.state
        elif body == "starved":
            self.starved = True
        elif body == "resumed":
            self.starved = False
        elif body == "event":
            self.messages = [*self.messages[-4:], f"{event.event.level}: {event.event.message}"]
        return False

    def render(self) -> Table:
        table = Table(show_header=False, title=self.run_id)
        table.add_row("state", _state(self.state) + ("  [yellow]STARVED[/]" if self.starved else ""))
        table.add_row("episodes", str(self.episodes))
        if self.returns:
            recent = self.returns[-100:]
            table.add_row(
                "return",
                f"last {self.returns[-1]:.3f}, mean of last {len(recent)} {sum(recent) / len(recent):.3f}",
            )
        for tag, (step, value) in sorted(self.metrics.items()):
            table.add_row(tag, f"{value:.4g} @ {step}")
        for message in self.messages:
            table.add_row("event", message)
        return table


@app.command()
def cancel(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Cancel a run (SIGTERM to its process group, SIGKILL after a grace period)."""
    run_id = validate_run_id(run)
    with _client() as client:
        client.cancel(run_id)
        final = client.wait_for_end(run_id, timeout=60)
    console.print(f"run [bold]{run_id}[/] {_state(final.state.value)}")


@app.command()
def archive(
    run: Annotated[str, typer.Argument(help="Run id.")],
    undo: Annotated[bool, typer.Option("--undo", help="Bring an archived run back.")] = False,
) -> None:
    """Hide a run from the runs table (kept on disk; `runs --all` shows it)."""
    with _client() as client:
        info = client.archive(validate_run_id(run), archived=not undo)
    console.print(f"run {info.run_id} {'archived' if info.archived else 'restored'}")


@app.command()
def delete(
    run: Annotated[str, typer.Argument(help="Run id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete a run and its directory (refused while it runs: cancel it first)."""
    run_id = validate_run_id(run)
    if not yes and not typer.confirm(f"Delete run {run_id} and all its files?"):
        raise typer.Exit(1)
    with _client() as client:
        client.delete(run_id)
    console.print(f"run {run_id} deleted")


@app.command()
def export(
    run: Annotated[str, typer.Argument(help="Run id.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Archive path (default: ./RUN.tar.gz).")
    ] = None,
) -> None:
    """Pack a run directory into a .tar.gz (databases copied consistently, even while the run writes)."""
    run_id = validate_run_id(run)
    home = _home()
    run_dir = home.run_dir(run_id)
    if not run_dir.is_dir():
        raise GymGuiError(f"no run directory for {run_id} under {home.runs_dir}")
    target = output or Path.cwd() / f"{run_id}.tar.gz"
    export_run(run_dir, target)
    console.print(f"exported {run_id} to {target}")


def export_run(run_dir: Path, target: Path) -> None:
    """Write ``run_dir`` as ``target`` (.tar.gz) with every SQLite file copied through the backup API."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(target, "w:gz") as tar:
        for path in sorted(run_dir.rglob("*")):
            if path.is_dir() or path.name.endswith(("-wal", "-shm", ".tmp")):
                continue
            arcname = str(Path(run_dir.name) / path.relative_to(run_dir))
            if path.suffix == ".sqlite":
                copy = Path(tmp) / path.name
                source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                dest = sqlite3.connect(copy)
                try:
                    source.backup(dest)
                finally:
                    source.close()
                    dest.close()
                tar.add(copy, arcname=arcname)
            else:
                tar.add(path, arcname=arcname)


@app.command()
def schema() -> None:
    """Print the JSON schema of RunConfig."""
    print(json.dumps(run_config_schema(), indent=2))


@app.command()
def demo(
    episodes: Annotated[int, typer.Option(help="Episodes of the demo run.")] = 100,
) -> None:
    """Start the daemon and run a short random-agent run on FrozenLake with live progress."""
    config = parse_run_config(
        {"worker": "random", "env_id": "FrozenLake-v1", "seed": 0, "budget": {"episodes": episodes}}
    )
    with _client() as client:
        health = client.health()
        console.print(f"daemon at {health.address}, home {health.home}")
        record, _ = client.submit(config)
        final = follow(client, record.run_id, config)
    _print_end(final)
    show(final.run_id)


def main() -> None:
    """Entry point: one clear line and a non-zero exit for every gym_gui error."""
    try:
        app()
    except GymGuiError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
