"""`gym-gui runs`, `show` and `watch`: the runs table, one run in full, a run live."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gym_gui.cli.app import (
    JsonOption,
    app,
    clipped,
    connect,
    console,
    elapsed,
    err_console,
    print_json,
    state_markup,
    when,
)
from gym_gui.core.ids import validate_run_id
from gym_gui.core.records import (
    BundleProgress,
    EpisodeRecord,
    EventRecord,
    MetricBatch,
    MetricPoint,
    Resumed,
    Starved,
    StateTransition,
    StepBatch,
    TelemetryEvent,
)
from gym_gui.core.run_query import RunQuery, parse_states

# Run directories, their databases and the follow helpers are imported by the commands that read
# them (show, watch): `runs` answers without them (gym_gui/cli/__init__.py).


# How many runs `gym-gui runs` shows unless asked for more: the newest, a screen's worth.
RUNS_SHOWN = 50


@app.command()
def runs(
    all_: Annotated[
        bool, typer.Option("--all", help="Every run, archived ones included (no limit unless --limit).")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=0, help=f"Show the newest N runs (default {RUNS_SHOWN}; 0: every one)."),
    ] = None,
    state: Annotated[
        str, typer.Option("--state", help="Only runs in these states, comma-separated (FAILED,CANCELLED).")
    ] = "",
    worker: Annotated[str, typer.Option("--worker", help="Only runs of this worker kind.")] = "",
    env: Annotated[str, typer.Option("--env", help="Only runs on this environment id.")] = "",
    sweep: Annotated[str, typer.Option("--sweep", help="Only the trials of this sweep.")] = "",
    text: Annotated[
        str,
        typer.Option("--text", help="Only runs with this text in their id, worker, env, sweep or reason."),
    ] = "",
    json_: JsonOption = False,
) -> None:
    """The runs table: the newest runs, oldest of them first."""
    query = RunQuery(
        include_archived=all_,
        states=parse_states(state, "--state"),
        worker=worker,
        env_id=env,
        sweep_id=sweep,
        text=text,
        descending=True,
        limit=limit if limit is not None else 0 if all_ else RUNS_SHOWN,
    )
    with connect() as client:
        page = client.list_page(query)
    infos = page.runs[::-1]
    cut = f"{len(infos):,} of {page.total:,} runs shown; --all for every one" if page.next else ""
    if json_:
        print_json(infos)
        if cut:
            err_console.print(cut, highlight=False)
        return
    table = Table("run", "worker", "env", "state", "sweep", "created", "elapsed", "reason")
    for info in infos:
        name = info.run_id + (" [dim](archived)[/]" if info.archived else "")
        table.add_row(
            name,
            info.worker,
            info.env_id,
            state_markup(info.state),
            f"{info.sweep_id} #{info.trial}" if info.sweep_id else "-",
            when(info.created_at),
            elapsed(info),
            escape(clipped(info.reason, 60)),
        )
    console.print(table)
    if cut:
        console.print(cut, highlight=False)


@app.command()
def show(run: Annotated[str, typer.Argument(help="Run id.")], json_: JsonOption = False) -> None:
    """Everything about one run: state history, progress, episodes and where its files are."""
    run_id = validate_run_id(run)
    with connect() as client:
        detail = client.get_run(run_id)
    info = detail.record
    stored = _stored_telemetry(info.run_dir)
    if json_:
        print_json({"run": info, "history": detail.history, "telemetry": stored})
        return
    table = Table(show_header=False, box=None)
    table.add_row("run", info.run_id)
    table.add_row("worker", f"{info.worker} ({info.lane} lane)")
    table.add_row("env", info.env_id)
    table.add_row("state", state_markup(info.state) + (f": {escape(info.reason)}" if info.reason else ""))
    if info.warning:
        table.add_row("warning", f"[yellow]{escape(info.warning)}[/]")
    if info.exit_code is not None:
        table.add_row("exit code", str(info.exit_code))
    table.add_row("created", when(info.created_at))
    table.add_row("elapsed", elapsed(info))
    table.add_row("directory", info.run_dir)
    if info.sweep_id:
        table.add_row("sweep", f"{info.sweep_id}, trial {info.trial}")
    table.add_row("archived", "yes" if info.archived else "no")
    if stored is not None:
        differ = stored.episodes_differing
        check = "[green]match[/]" if not differ else f"[red]{len(differ)} episodes differ[/]"
        table.add_row("episodes", str(stored.episodes))
        table.add_row(
            "steps stored", f"{stored.steps_stored} (episode lengths sum to {stored.episode_steps}: {check})"
        )
        if stored.last_return is not None:
            table.add_row("return", f"mean {stored.mean_return:.3f}, last {stored.last_return:.3f}")
        if stored.agent_returns:
            means = ", ".join(f"{agent} {value:.3f}" for agent, value in stored.agent_returns.items())
            table.add_row("agents' mean returns", escape(means))
        table.add_row("metrics", ", ".join(stored.metrics) or "none")
    console.print(table)
    for event in stored.warnings if stored is not None else []:
        console.print(f"[yellow]{event.level}:[/] {escape(event.message)}", soft_wrap=True)
    history = Table("time", "from", "to", "reason", title="state history")
    for change in detail.history:
        history.add_row(
            when(change.time),
            change.from_state.value if change.from_state else "-",
            state_markup(change.to_state),
            escape(change.reason),
        )
    console.print(history)


@dataclass(frozen=True)
class StoredTelemetry:
    """What a run's telemetry database holds, as `gym-gui show` tells it."""

    episodes: int
    steps_stored: int
    episode_steps: int  # the steps its episodes say they took, summed
    episodes_differing: list[int]  # episodes whose stored steps are not the steps they say they took
    mean_return: float | None
    last_return: float | None
    # A multi-agent run's mean return of each agent over its episodes, in the env's agent order.
    agent_returns: dict[str, float]
    metrics: list[str]  # the tags of its metrics
    warnings: list[EventRecord]  # its WARNING and ERROR events (GPU fallback, W&B offline …)


def _stored_telemetry(run_dir: str) -> StoredTelemetry | None:
    """What the run's database holds; None while it has none."""
    from gym_gui.cli.follow import RunWarnings
    from gym_gui.storage.run_dir import RunDir
    from gym_gui.storage.telemetry import TelemetryReader

    telemetry = RunDir(run_dir).telemetry_path if run_dir else None
    if telemetry is None or not telemetry.exists():
        return None
    reader = TelemetryReader(telemetry)
    try:
        per_episode = reader.steps_per_episode()
        episodes = reader.episodes()
        stored = reader.step_count()
        tags = reader.metric_tags()
        events = reader.events()
    finally:
        reader.close()
    returns = [e.total_reward for e in episodes]
    by_agent: dict[str, list[float]] = {}
    for episode in episodes:
        for agent, value in episode.agent_returns:
            by_agent.setdefault(agent, []).append(value)
    return StoredTelemetry(
        episodes=len(episodes),
        steps_stored=stored,
        episode_steps=sum(e.steps for e in episodes),
        episodes_differing=[e.episode for e in episodes if per_episode.get(e.episode, 0) != e.steps],
        mean_return=sum(returns) / len(returns) if returns else None,
        last_return=returns[-1] if returns else None,
        agent_returns={agent: sum(values) / len(values) for agent, values in by_agent.items()},
        metrics=list(tags),
        warnings=[event for event in events if event.level in RunWarnings.LEVELS],
    )


@app.command()
def watch(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Follow a run live: episodes, metrics and state changes as they arrive."""
    from rich.live import Live

    run_id = validate_run_id(run)
    with connect() as client:
        # A warning given before watching began (disk low …) is said first; later ones arrive as events.
        record = client.get_run(run_id).record
        if record.warning:
            console.print(f"[yellow]WARNING:[/] {escape(record.warning)}", soft_wrap=True)
        stream = client.subscribe(run_id, credits=8)
        view = _WatchView(run_id)
        # What the run stored before watching began (all of it, for a run that has ended), then live.
        for point in _stored_metrics(record.run_dir):
            view.metrics[point.tag] = (point.step, point.value)
            if not console.is_terminal:
                print(f"{point.tag}={point.value:.4g} @ {point.step}", flush=True)
        try:
            if console.is_terminal:
                with Live(view.render(), console=console, refresh_per_second=8) as live:
                    for event in stream:
                        if view.apply(event):
                            stream.grant(1)
                        live.update(view.render())
                        if view.ended:
                            break
            else:
                # Piped or logged: one plain line per thing that happened, as it happens.
                for event in stream:
                    if view.apply(event):
                        stream.grant(1)
                    for line in view.lines(event):
                        print(line, flush=True)
                    if view.ended:
                        break
        finally:
            stream.close()
    if view.final is not None:
        reason = f": {escape(view.final.reason)}" if view.final.reason else ""
        console.print(f"run [bold]{run_id}[/] {state_markup(view.final.to_state)}{reason}", soft_wrap=True)


def _stored_metrics(run_dir: str) -> list[MetricPoint]:
    """The last stored point of each of a run's metrics; none while it has no telemetry."""
    from gym_gui.storage.run_dir import RunDir
    from gym_gui.storage.telemetry import TelemetryReader

    files = RunDir(run_dir) if run_dir else None
    if files is None or not files.has_telemetry():
        return []
    reader = TelemetryReader(files.telemetry_path)
    try:
        return reader.latest_metrics()
    finally:
        reader.close()


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
        self.final: StateTransition | None = None
        self.messages: list[str] = []
        self.bundle: BundleProgress | None = None  # the install of the bundle the run waits for

    def apply(self, event: TelemetryEvent) -> bool:
        """Fold ``event`` in; True when it cost a credit."""
        if isinstance(event, StepBatch):
            self.steps += len(event.rows)
            return True
        if isinstance(event, EpisodeRecord):
            self.episodes += 1
            self.returns.append(event.total_reward)
        elif isinstance(event, MetricBatch):
            for m in event.points:
                self.metrics[m.tag] = (m.step, m.value)
        elif isinstance(event, StateTransition):
            self.state = event.to_state.value
            if event.to_state.terminal:
                self.ended = True
                self.final = event
        elif isinstance(event, Starved):
            self.starved = True
        elif isinstance(event, Resumed):
            self.starved = False
        elif isinstance(event, EventRecord):
            self.bundle = BundleProgress.from_data(event.data) or self.bundle
            self.messages = [*self.messages[-4:], _event_line(event)]
        return False

    def lines(self, event: TelemetryEvent) -> list[str]:
        """Plain text for ``event`` (steps are summarised by the episodes they make)."""
        if isinstance(event, EpisodeRecord):
            return [f"episode {event.episode}: return {event.total_reward:.4g} in {event.steps} steps"]
        if isinstance(event, MetricBatch):
            return [f"{m.tag}={m.value:.4g} @ {m.step}" for m in event.points]
        if isinstance(event, StateTransition):
            reason = f": {event.reason}" if event.reason else ""
            return [f"state {event.to_state.value}{reason}"]
        if isinstance(event, EventRecord):
            return [_event_line(event)]
        if isinstance(event, Starved):
            return ["STARVED"]
        if isinstance(event, Resumed):
            return ["RESUMED"]
        return []

    def render(self) -> Table:
        table = Table(show_header=False, title=self.run_id)
        table.add_row("state", state_markup(self.state) + ("  [yellow]STARVED[/]" if self.starved else ""))
        table.add_row("episodes", str(self.episodes))
        if self.returns:
            recent = self.returns[-100:]
            table.add_row(
                "return",
                f"last {self.returns[-1]:.3f}, mean of last {len(recent)} {sum(recent) / len(recent):.3f}",
            )
        for tag, (step, value) in sorted(self.metrics.items()):
            table.add_row(tag, f"{value:.4g} @ {step}")
        if self.bundle is not None:
            table.add_row("bundle", f"{self.bundle.bundle}: {self.bundle.text()}")
        for message in self.messages:
            table.add_row("event", message)
        return table


def _event_line(event: EventRecord) -> str:
    """An event as a line; a bundle install's progress from its fields (step, total, phase, message)."""
    progress = BundleProgress.from_data(event.data)
    if progress is not None:
        return f"{event.level}: bundle {progress.bundle}: {progress.text()}"
    return f"{event.level}: {event.message}"
