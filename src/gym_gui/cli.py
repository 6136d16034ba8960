"""`gym-gui`: the command line of gym_gui — train, inspect, watch and manage runs through the daemon."""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from gym_gui_sdk.json_object import json_object
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from typer._click import exceptions as click_errors  # typer carries its own click

from gym_gui.core.config import RunConfig, WarmStart, parse_run_config, run_config_schema
from gym_gui.core.controls import Control
from gym_gui.core.daemon_file import read_daemon_file, setting_differences
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.ids import validate_run_id, validate_sweep_id
from gym_gui.core.records import (
    ArtifactRecord,
    BundleProgress,
    EpisodeRecord,
    EventRecord,
    LaunchPreview,
    MetricBatch,
    Resumed,
    RunRecord,
    Starved,
    StateTransition,
    StepBatch,
    SweepRecord,
    TelemetryEvent,
)
from gym_gui.core.rerun import RERUN_EVENT
from gym_gui.core.states import RunState, SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.protocol.errors import DaemonError
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.sweeps.optimise import TRIAL_REASON_ATTR
from gym_gui.sweeps.spec import load_spec, parse_spec
from gym_gui.sweeps.study import StudyError, StudyView, TrialRow, read_study, storage_url
from gym_gui.workers import (
    BundleDirectory,
    TorchBuild,
    TorchVariant,
    secrets_from_environment,
    worker_catalog,
)
from gym_gui.workers.wandb_sync import sync_offline_runs

app = typer.Typer(
    help="gym_gui: a research cockpit for reinforcement learning. With no command, `gym-gui` opens the cockpit window.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
daemon_app = typer.Typer(help="Start, stop and inspect the trainer daemon.", no_args_is_help=True)
app.add_typer(daemon_app, name="daemon")
bundles_app = typer.Typer(
    help="Install and check worker bundles (the pinned virtual environments workers run in).",
    no_args_is_help=True,
)
app.add_typer(bundles_app, name="bundles")

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
    "PRUNED": "cyan",
}


def _home() -> Home:
    home = Home()
    home.ensure()
    return home


def _client(autostart: bool = True) -> DaemonClient:
    home = _home()
    client = DaemonClient.connect(home.root, autostart=autostart)
    # A running daemon keeps the settings it started with: say so when this shell's differ.
    for note in setting_differences(client.info.settings, home.daemon_settings()):
        err_console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False, soft_wrap=True)
    return client


def _state(state: str) -> str:
    return f"[{_STATE_STYLE.get(state, '')}]{state}[/]"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def _elapsed(info: RunRecord) -> str:
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

    home = _home()
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
    home = _home()
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


# ------------------------------------------------------------------ bundles


def _bundles() -> BundleDirectory:
    return worker_catalog().bundle_directory(_home().bundles_dir)


@bundles_app.command("install")
def bundles_install(
    name: Annotated[str, typer.Argument(help="Bundle name, e.g. cleanrl.")],
    force: Annotated[bool, typer.Option(help="Rebuild even when it is installed.")] = False,
    cuda: Annotated[
        bool | None,
        typer.Option(
            "--cuda/--cpu",
            help="Which build of torch: --cpu (CPU-only, the default for a new bundle) or --cuda "
            "(PyPI's CUDA build, Linux, several GB). Without either, an installed bundle keeps its build; "
            "naming the other one rebuilds it.",
        ),
    ] = None,
) -> None:
    """Build a bundle's venv (a no-op when it is installed, its requirements have not changed and it
    holds the torch build asked for)."""
    manager = _bundles()
    torch = None if cuda is None else TorchVariant.CUDA if cuda else TorchVariant.CPU
    held = manager.status(name).torch
    if torch is not None and held is not None and held.variant is not torch:
        console.print(
            f"bundle {name} holds {held.text()}; rebuilding it with torch's {torch.label} build",
            markup=False,
            soft_wrap=True,
        )
    started = time.monotonic()
    steps: list[int] = []
    if console.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(f"bundle {name}", total=None)

            def show(update: BundleProgress) -> None:
                steps.append(update.step)
                done = update.step if update.phase == "installed" else max(update.step - 1, 0)
                progress.update(task, total=update.total, completed=done, description=f"{update.message}…")
                if update.phase == "installing":
                    progress.console.print(f"{update.text()}…", markup=False, highlight=False)

            status = manager.install(name, progress=show, force=force, torch=torch)
    else:
        # Logs and `make` output get one line per step instead of a redrawn bar.
        def show_line(update: BundleProgress) -> None:
            steps.append(update.step)
            if update.phase != "installed":  # said once below, with where
                console.print(
                    f"bundle {name}: {update.text()}…", markup=False, highlight=False, soft_wrap=True
                )

        status = manager.install(name, progress=show_line, force=force, torch=torch)
    built = f" with {status.torch.text()}" if status.torch is not None else ""
    if any(steps):
        elapsed = time.monotonic() - started
        console.print(
            f"bundle {name} installed at {status.path} in {elapsed:.1f}s{built}", markup=False, soft_wrap=True
        )
    else:
        console.print(
            f"bundle {name} is installed at {status.path} ({status.reason}){built}",
            markup=False,
            soft_wrap=True,
        )


@bundles_app.command("list")
def bundles_list(
    names: Annotated[
        list[str] | None, typer.Argument(help="Bundle names, e.g. cleanrl (default: every known bundle).")
    ] = None,
) -> None:
    """Known bundles (all, or the ones named): installed or not, the torch build they hold, where, and why."""
    bundles = _bundles()
    statuses = bundles.list()
    if names:
        known = {status.name: status for status in statuses}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigError(f"unknown bundle {unknown[0]!r}; known bundles: {', '.join(sorted(known))}")
        statuses = [known[name] for name in dict.fromkeys(names)]
    # Paths and reasons are what a user copies: fold them rather than cut them with an ellipsis.
    table = Table(
        "bundle", "installed", "torch", Column("path", overflow="fold"), Column("status", overflow="fold")
    )
    for status in statuses:
        installed = "[green]yes[/]" if status.installed else "[red]no[/]"
        torch = escape(_torch_cell(status.torch))
        table.add_row(status.name, installed, torch, escape(str(status.path)), escape(status.reason))
    console.print(table)


def _torch_cell(build: TorchBuild | None) -> str:
    """The torch build a bundle holds, for a bundle list; one installed before builds were recorded is marked."""
    if build is None:
        return ""
    return build.text() if build.recorded else f"{build.text()}, not recorded"


@bundles_app.command("check")
def bundles_check(name: Annotated[str, typer.Argument(help="Bundle name, e.g. cleanrl.")]) -> None:
    """Import the bundle's key packages in its venv; one line saying what is missing (exit 1 if anything)."""
    result = _bundles().check(name)
    console.print(result.message, markup=False, highlight=False, soft_wrap=True)
    if not result.ok:
        raise typer.Exit(1)


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


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> None:
    """Set each dotted field path of ``overrides`` (``budget.episodes``) in ``data`` to its value,
    making the sections it passes through; a None value is a flag not given and sets nothing."""
    for path, value in overrides.items():
        if value is None:
            continue
        *parents, leaf = path.split(".")
        node = data
        for part in parents:
            child = node.get(part)
            node[part] = child = dict(child) if isinstance(child, dict) else {}
            node = child
        node[leaf] = value


# The parameters `gym-gui train` has flags of its own for, which name files: a script checkout and its
# interpreter (--scripts-dir, --python). Typed relative, they are made absolute where they were typed:
# the daemon has another working directory.
PATH_PARAMS = ("scripts_dir", "python")


def build_config(config_file: Path | None, overrides: dict[str, Any], params: list[str]) -> RunConfig:
    """A RunConfig from a JSON file and/or flags: ``overrides`` maps dotted field paths
    (``budget.episodes``) to flag values (None: not given); flags win over the file."""
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            text = config_file.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        data = json_object(
            text,
            lambda why: ConfigError(f"config file {config_file} is not valid JSON: {why}"),
            lambda _: ConfigError(f"config file {config_file} must hold a JSON object"),
        )
        # Paths in a config file are relative to the file, as a user who keeps both together expects
        # (a config written before they were params keeps them under ``source``).
        base = config_file.resolve().parent
        for section in ("params", "source"):
            values = data.get(section)
            for key in PATH_PARAMS:
                if isinstance(values, dict) and isinstance(values.get(key), str) and values[key]:
                    values[key] = str(base / Path(values[key]).expanduser())
    apply_overrides(data, overrides)
    if params:
        data["params"] = {**(data.get("params") or {}), **dict(_parse_param(p) for p in params)}
    if not data.get("budget"):
        data["budget"] = _default_budget(data.get("worker"))
    return parse_run_config(data)


def executor_overrides(
    kind: str | None, ray_address: str | None, cpus: float | None = None, gpus: float | None = None
) -> dict[str, Any]:
    """The ``executor`` section's flags as :func:`build_config`'s dotted overrides (None: not given)."""
    return {
        "executor.kind": kind,
        "executor.ray_address": ray_address,
        "executor.cpus": cpus,
        "executor.gpus": gpus,
    }


def _default_budget(kind: object) -> dict[str, int] | None:
    """The budget of a run that names none: its worker kind's own (``WorkerSpec.default_budget``)."""
    catalog = worker_catalog()
    if not isinstance(kind, str) or kind not in catalog:
        return None  # the config's own check names the missing or unknown worker
    spec = catalog.spec(kind)
    if spec.default_budget is None:
        raise ConfigError(
            f"field 'budget': {spec.display_name} has no default budget: "
            "give --episodes or --total-timesteps (or budget in --config)"
        )
    bound, count = spec.default_budget
    return {bound: count}


# Where a run executes: `train` and `sweep start` take the same two options.
ExecutorOption = Annotated[
    str | None, typer.Option(help="Where the worker runs: local (default) or ray (a Ray job).")
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(metavar="ADDR", help="With --executor ray: the Ray head's dashboard, e.g. head:8265."),
]


@app.command()
def train(
    worker: Annotated[str | None, typer.Option(help="Worker kind (random, cleanrl, …).")] = None,
    env: Annotated[str | None, typer.Option(help="Environment id, e.g. FrozenLake-v1.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the first episode.")] = None,
    episodes: Annotated[
        int | None,
        typer.Option(help="Episodes to run (neither this nor --total-timesteps: the kind's default budget)."),
    ] = None,
    total_timesteps: Annotated[int | None, typer.Option(help="Environment steps to run.")] = None,
    algo: Annotated[str | None, typer.Option(help="Algorithm, e.g. ppo for CleanRL.")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(help="Algorithm parameter name=value, by the script's own name (repeatable)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="RunConfig JSON file; flags override its values.")
    ] = None,
    scripts_dir: Annotated[
        Path | None, typer.Option(help="Your own CleanRL checkout (a directory of scripts).")
    ] = None,
    python: Annotated[Path | None, typer.Option(help="The interpreter to run --scripts-dir with.")] = None,
    gpu: Annotated[
        bool | None, typer.Option("--gpu/--no-gpu", help="Use a GPU when one is available.")
    ] = None,
    gpu_mandatory: Annotated[bool | None, typer.Option(help="Fail before launch without a GPU.")] = None,
    wandb: Annotated[str | None, typer.Option(help="W&B tracking: disabled, offline or online.")] = None,
    wandb_project: Annotated[str | None, typer.Option(help="W&B project.")] = None,
    wandb_entity: Annotated[str | None, typer.Option(help="W&B entity.")] = None,
    wandb_base_url: Annotated[
        str | None,
        typer.Option(
            envvar="WANDB_BASE_URL", help="A self-hosted W&B server's address; default: W&B's cloud."
        ),
    ] = None,
    capture_video: Annotated[bool | None, typer.Option(help="Record videos of the agent.")] = None,
    checkpoint_every: Annotated[int | None, typer.Option(help="Save a checkpoint every N steps.")] = None,
    warm_start: Annotated[
        str | None,
        typer.Option(
            metavar="RUN[:CHECKPOINT]",
            help="Start from another run's saved model (CleanRL ppo and dqn families): its final model, "
            "or the checkpoint named by its path inside that run.",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Show what would run, launch nothing.")] = False,
    notes: Annotated[str | None, typer.Option(help="Free text kept with the run.")] = None,
    render_fps: Annotated[
        float | None, typer.Option(help="Frames per second for pixel environments.")
    ] = None,
    detach: Annotated[bool, typer.Option(help="Submit and return at once.")] = False,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    cpus: Annotated[float | None, typer.Option(help="CPUs the run's Ray job reserves (default 1).")] = None,
    gpus: Annotated[float | None, typer.Option(help="GPUs the run's Ray job reserves (default 0).")] = None,
) -> None:
    """Start a run and follow it with a progress bar (or --detach).

    A W&B API key is taken from WANDB_API_KEY in this shell's environment, else from a `wandb login`
    (~/.netrc) for the run's W&B server; an LLM endpoint's key from LLM_API_KEY. Each is handed to
    the run's worker only and never written anywhere. WANDB_BASE_URL in this shell is the server
    when --wandb-base-url is not given.
    """
    run_config = build_config(
        config,
        {
            "worker": worker,
            "env_id": env,
            "seed": seed,
            "budget.episodes": episodes,
            "budget.timesteps": total_timesteps,
            "algorithm": algo,
            # The daemon runs elsewhere: paths are made absolute here, where they were typed.
            "params.scripts_dir": str(scripts_dir.expanduser().resolve()) if scripts_dir else None,
            "params.python": str(python.expanduser().absolute()) if python else None,
            "resources.gpu": gpu,
            "resources.gpu_mandatory": gpu_mandatory,
            "tracking.wandb_mode": wandb,
            "tracking.wandb_project": wandb_project,
            "tracking.wandb_entity": wandb_entity,
            "tracking.wandb_base_url": wandb_base_url,
            "params.capture-video": capture_video,
            "checkpoints.every_steps": checkpoint_every,
            "warm_start.run_id": WarmStart.reference(warm_start)["run_id"] if warm_start else None,
            "warm_start.checkpoint": WarmStart.reference(warm_start)["checkpoint"] if warm_start else None,
            "dry_run": dry_run or None,
            "notes": notes,
            "telemetry.render_fps": render_fps,
            **executor_overrides(executor, ray_address, cpus, gpus),
        },
        param or [],
    )
    plan: LaunchPreview | None = None
    with _client() as client:
        if run_config.dry_run:
            # The daemon resolves a dry run before it replies: the reply is its end and its plan.
            record, plan = client.dry_run(run_config, secrets_from_environment(run_config))
            final = client.get_run(record.run_id).record
        else:
            record, _ = client.submit(run_config, secrets_from_environment(run_config))
            console.print(f"run [bold]{record.run_id}[/] {_state(record.state.value)}")
            if detach:
                return
            final = follow(client, record.run_id, run_config)
    _print_end(final)
    if plan is not None:
        _print_plan(plan)
    if final.state is not RunState.COMPLETED:
        raise typer.Exit(1)


def _print_plan(plan: LaunchPreview) -> None:
    """A dry run's plan: the exact command, the script it runs, where, and its environment (redacted)."""
    console.print("command:", shlex.join(plan.argv), highlight=False, soft_wrap=True)
    if plan.script_argv:
        console.print("script:", shlex.join(plan.script_argv), highlight=False, soft_wrap=True)
    console.print("as typed:", plan.display, highlight=False, soft_wrap=True)
    console.print("working directory:", plan.cwd, highlight=False)
    for key, value in sorted(plan.env.items()):
        console.print(f"  {key}={value}", highlight=False, soft_wrap=True)


def follow(client: DaemonClient, run_id: str, config: RunConfig) -> RunRecord:
    """Show a progress bar until the run ends, and the run's warnings as they happen; returns its final record."""
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
    warnings = _RunWarnings()
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(run_id[:48], total=total, state="")
        while True:
            detail = client.get_run(run_id)
            progress_ = detail.progress
            done = progress_.episodes if by_episodes else max(progress_.steps, progress_.global_step)
            progress.update(task, completed=done, state=_state(detail.record.state))
            # Above the bar, when they happen: a warning explains what the run does next.
            warnings.show(detail.record.run_dir, progress.console)
            if detail.record.state.terminal:
                break
            time.sleep(0.25)
    warnings.show(detail.record.run_dir, console)
    return detail.record


class _RunWarnings:
    """The WARNING and ERROR events of a run (GPU fallback, W&B offline, a refused step …), each shown once."""

    LEVELS = ("WARNING", "ERROR")

    def __init__(self) -> None:
        self.seen = 0  # events read so far (their ids have no gaps)

    def show(self, run_dir: str, where: Console) -> None:
        path = RunDir(run_dir).telemetry_path if run_dir else None
        if path is None or not path.exists():
            return
        try:
            reader = TelemetryReader(path)
            try:
                events = reader.events(self.seen)
            finally:
                reader.close()
        except GymGuiError:
            return  # not initialised yet: the next look finds them
        self.seen += len(events)
        for event in events:
            if event.level in self.LEVELS:
                where.print(f"[yellow]{event.level}:[/] {escape(event.message)}", soft_wrap=True)


def _print_end(info: RunRecord) -> None:
    reason = f": {escape(info.reason)}" if info.reason else ""
    console.print(f"run [bold]{info.run_id}[/] {_state(info.state)}{reason}", soft_wrap=True)


@app.command("eval")
def eval_(
    run: Annotated[str, typer.Argument(help="A trained run (CleanRL) whose model to play.")],
    checkpoint: Annotated[
        str | None, typer.Option(help="Checkpoint path inside the run (default: its final model).")
    ] = None,
    episodes: Annotated[int, typer.Option(help="Episodes to play.")] = 5,
    seed: Annotated[int | None, typer.Option(help="Seed of the first episode (default: the run's).")] = None,
    render_fps: Annotated[float, typer.Option(help="Frames per second stored for replay (0: none).")] = 30.0,
    real_time: Annotated[
        bool, typer.Option(help="Play at the env's own frame rate (to watch it live), not flat out.")
    ] = False,
    env: Annotated[
        str | None,
        typer.Option(help="Environment to play (default: the run's; the daemon refuses any other)."),
    ] = None,
    detach: Annotated[bool, typer.Option(help="Submit and return at once.")] = False,
) -> None:
    """Watch a trained agent play: a telemetry-lane run whose every step is stored and replayable."""
    run_id = validate_run_id(run)
    with _client() as client:
        config = client.evaluation_config(run_id, episodes, checkpoint, seed, render_fps, real_time, env)
        record, _ = client.submit(config)
        console.print(f"run [bold]{record.run_id}[/] {_state(record.state.value)}")
        if detach:
            return
        final = follow(client, record.run_id, config)
    _print_end(final)
    if final.state is not RunState.COMPLETED:
        raise typer.Exit(1)


@app.command()
def rerun(
    run: Annotated[str, typer.Argument(help="The run to run again.")],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Re-run even when today's package set differs from the run's.")
    ] = False,
    detach: Annotated[bool, typer.Option(help="Submit and return at once.")] = False,
) -> None:
    """Run a run again: its stored config, so the same seed, with the package set it ran with.

    The package set the re-run would get today is compared with the one the run's manifest recorded
    first; a difference is listed (old → new) and needs confirming. When the re-run ends it says
    whether its episodic returns are identical to the original's.
    """
    run_id = validate_run_id(run)
    with _client() as client:
        config = client.rerun_config(run_id)
        secrets = secrets_from_environment(config)
        changes = client.preview(config, secrets).package_changes
        if changes:
            console.print(f"the package set differs from the one {run_id} ran with (old → new):")
            for change in changes:
                console.print(f"  {escape(change.text())}", highlight=False)
            try:
                confirmed = yes or typer.confirm("Re-run with today's packages?")
            except typer.Abort:  # no terminal to ask on
                confirmed = False
            if not confirmed:
                raise ConfigError(
                    f"not re-run: {len(changes)} packages differ from those {run_id} ran with; "
                    "pass --yes to re-run with today's"
                )
        record, _ = client.submit(config, secrets)
        console.print(f"run [bold]{record.run_id}[/] {_state(record.state.value)} (re-runs {run_id})")
        if detach:
            return
        final = follow(client, record.run_id, config)
    _print_end(final)
    verdict = _rerun_verdict(final.run_dir)
    if verdict is not None:
        console.print(escape(verdict), highlight=False, soft_wrap=True)
    if final.state is not RunState.COMPLETED:
        raise typer.Exit(1)


def _rerun_verdict(run_dir: str) -> str | None:
    """What the daemon found when the re-run ended: whether its returns match the original's."""
    path = RunDir(run_dir).telemetry_path if run_dir else None
    if path is None or not path.exists():
        return None
    reader = TelemetryReader(path)
    try:
        events = [event for event in reader.events() if event.kind == RERUN_EVENT]
    finally:
        reader.close()
    return events[-1].message if events else None


@app.command("import-model")
def import_model(
    file: Annotated[Path, typer.Argument(help="The model file, e.g. a .cleanrl_model saved by a run.")],
    env: Annotated[str, typer.Option(help="The environment it was trained on, e.g. CartPole-v1.")],
    algo: Annotated[str, typer.Option(help="The algorithm (script) that trained it, e.g. ppo.")],
    worker: Annotated[
        str | None, typer.Option(help="Worker kind (default: the one installed kind that runs scripts).")
    ] = None,
) -> None:
    """Store a model file as a finished run of its own (checked by loading it first), to evaluate or browse."""
    worker = worker or _scripts_worker()
    with _client() as client:
        record = client.import_model(str(file.absolute()), worker, algo, env)
    console.print(
        f"run [bold]{record.run_id}[/] {_state(record.state.value)}: {escape(record.reason)}", soft_wrap=True
    )


def _scripts_worker() -> str:
    """The one installed worker kind whose runs are chosen from a list of scripts (algorithms)."""
    kinds = [plugin.spec.kind for plugin in worker_catalog().plugins() if plugin.form.variant_label]
    if len(kinds) == 1:
        return kinds[0]
    if not kinds:
        raise ConfigError("no installed worker kind offers algorithms; `gym-gui workers` lists the kinds")
    raise ConfigError(f"several worker kinds offer algorithms ({', '.join(kinds)}): choose one with --worker")


@app.command()
def algorithms(
    worker: Annotated[
        str | None, typer.Option(help="Worker kind (default: the one installed kind that runs scripts).")
    ] = None,
    algo: Annotated[str | None, typer.Option(help="Show this algorithm's own arguments.")] = None,
    scripts_dir: Annotated[Path | None, typer.Option(help="Your own CleanRL checkout.")] = None,
    python: Annotated[Path | None, typer.Option(help="The interpreter for --scripts-dir.")] = None,
) -> None:
    """The algorithms a worker offers (from the scripts present), or one algorithm's arguments."""
    worker = worker or _scripts_worker()
    with _client() as client:
        description = client.describe_worker(
            worker,
            algorithm=algo or "",
            scripts_dir=str(scripts_dir.resolve()) if scripts_dir else "",
            python=str(python.absolute()) if python else "",
        )
    if not description.bundle_installed and python is None:
        raise ConfigError(
            f"the {description.bundle} bundle is not installed; run `gym-gui bundles install {description.bundle}`"
        )
    form = description.form
    if algo:
        table = Table("flag", "type", "default", "help", title=f"{algo} ({form.note or '?'})")
        for param in form.parameters:
            choices = f" {list(param.choices)}" if param.choices else ""
            table.add_row(
                param.command_flag,
                f"{param.type}{choices}",
                json.dumps(param.default),
                escape(param.help),
            )
        console.print(table)
        if form.envs is not None:  # the worker's word on what the script trains on in its bundle
            trains = ", ".join(form.trainable_envs()) or "none"
            console.print(f"{algo} trains on here: {trains}", markup=False, highlight=False)
        return
    table = Table("algorithm", "environments", "default env", "runnable")
    for variant in form.variants:
        runnable = "yes" if variant.runnable else f"[dim]no: {escape(variant.reason)}[/]"
        table.add_row(variant.name, variant.summary, variant.default_env, runnable)
    console.print(table)


@app.command()
def workers() -> None:
    """The worker kinds installed as plugins: roster name, lane, controls, default budget, bundle — and
    broken plugins with their error."""
    catalog = worker_catalog()
    bundles = _bundles()
    table = Table(
        "kind",
        "roster name",
        "lane",
        "controls",
        "default budget",
        "bundle",
        Column("status", overflow="fold"),
    )
    for plugin in catalog.plugins():
        spec = plugin.spec
        controls = [name for name, on in dataclasses.asdict(spec.capabilities).items() if on]
        if plugin.bundle is None:
            bundle = spec.bundle
        else:
            bundle = spec.bundle + ("" if bundles.installed(plugin.bundle.name) else " (not installed)")
        status = "available" if spec.available else f"[dim]unavailable: {escape(spec.unavailable_reason)}[/]"
        budget = "" if spec.default_budget is None else "{1} {0}".format(*spec.default_budget)
        table.add_row(
            spec.kind, spec.display_name, spec.lane.value, ", ".join(controls), budget, bundle, status
        )
    console.print(table)
    # Whole lines, not table cells: an import error is read in full, not folded into a column.
    for broken in catalog.broken:
        console.print(
            f"[red]broken[/] plugin {escape(broken.name)} ({escape(broken.source)}): {escape(broken.error)}",
            soft_wrap=True,
        )


wandb_app = typer.Typer(help="Weights & Biases runs of gym_gui runs.", no_args_is_help=True)
app.add_typer(wandb_app, name="wandb")


@wandb_app.command("sync")
def wandb_sync(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Upload a run's offline W&B data to its W&B server (key: WANDB_API_KEY or `wandb login`; never stored)."""
    run_id = validate_run_id(run)
    home = _home()
    with _client() as client:
        worker = client.get_run(run_id).record.worker

    def show(step: int, total: int, name: str) -> None:
        console.print(f"{step}/{total} wandb sync {name}…", markup=False, highlight=False)

    console.print(sync_offline_runs(home.run_dir(run_id), worker, home.bundles_dir, show), markup=False)


@app.command()
def runs(all_: Annotated[bool, typer.Option("--all", help="Include archived runs.")] = False) -> None:
    """The runs table."""
    with _client() as client:
        infos = client.list_runs(include_archived=all_)
    table = Table("run", "worker", "env", "state", "sweep", "created", "elapsed", "reason")
    for info in infos:
        name = info.run_id + (" [dim](archived)[/]" if info.archived else "")
        table.add_row(
            name,
            info.worker,
            info.env_id,
            _state(info.state),
            f"{info.sweep_id} #{info.trial}" if info.sweep_id else "-",
            _when(info.created_at),
            _elapsed(info),
            escape(info.reason[:60]),
        )
    console.print(table)


@app.command()
def show(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Everything about one run: state history, progress, episodes and where its files are."""
    run_id = validate_run_id(run)
    with _client() as client:
        detail = client.get_run(run_id)
    info = detail.record
    table = Table(show_header=False, box=None)
    table.add_row("run", info.run_id)
    table.add_row("worker", f"{info.worker} ({info.lane} lane)")
    table.add_row("env", info.env_id)
    table.add_row("state", _state(info.state) + (f": {escape(info.reason)}" if info.reason else ""))
    if info.warning:
        table.add_row("warning", f"[yellow]{escape(info.warning)}[/]")
    if info.exit_code is not None:
        table.add_row("exit code", str(info.exit_code))
    table.add_row("created", _when(info.created_at))
    table.add_row("elapsed", _elapsed(info))
    table.add_row("directory", info.run_dir)
    if info.sweep_id:
        table.add_row("sweep", f"{info.sweep_id}, trial {info.trial}")
    table.add_row("archived", "yes" if info.archived else "no")
    telemetry = RunDir(info.run_dir).telemetry_path
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
    _RunWarnings().show(info.run_dir, console)
    history = Table("time", "from", "to", "reason", title="state history")
    for change in detail.history:
        history.add_row(
            _when(change.time),
            change.from_state.value if change.from_state else "-",
            _state(change.to_state),
            escape(change.reason),
        )
    console.print(history)


@app.command()
def watch(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Follow a run live: episodes, metrics and state changes as they arrive."""
    run_id = validate_run_id(run)
    with _client() as client:
        # A warning given before watching began (disk low …) is said first; later ones arrive as events.
        warning = client.get_run(run_id).record.warning
        if warning:
            console.print(f"[yellow]WARNING:[/] {escape(warning)}", soft_wrap=True)
        stream = client.subscribe(run_id, credits=8)
        view = _WatchView(run_id)
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
        console.print(f"run [bold]{run_id}[/] {_state(view.final.to_state)}{reason}", soft_wrap=True)


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


@app.command()
def cancel(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Cancel a run (SIGTERM to its process group, SIGKILL after a grace period)."""
    run_id = validate_run_id(run)
    with _client() as client:
        client.cancel(run_id)
        final = client.wait_for_end(run_id, timeout=60)
    console.print(f"run [bold]{run_id}[/] {_state(final.state.value)}")


@app.command()
def pause(
    run: Annotated[str, typer.Argument(help="Run id.")],
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the worker to pause.")] = 30.0,
) -> None:
    """Pause a run: its worker keeps its process and stops stepping until `gym-gui resume`."""
    _change_state(validate_run_id(run), Control.PAUSE, RunState.PAUSED, timeout)


@app.command()
def resume(
    run: Annotated[str, typer.Argument(help="Run id.")],
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the worker to resume.")] = 30.0,
) -> None:
    """Resume a paused run: it goes on from the step it was paused at."""
    _change_state(validate_run_id(run), Control.RESUME, RunState.RUNNING, timeout)


def _change_state(run_id: str, control: Control, target: RunState, timeout: float) -> None:
    """Send ``control`` and wait until the worker has reported the run ``target`` (or it ended)."""
    with _client() as client:
        client.control(run_id, control)
        record = client.wait_for_state(run_id, target, timeout=timeout)
    if record.state is not target:
        reason = f": {record.reason}" if record.reason else ""
        raise GymGuiError(f"run {run_id} ended ({record.state.value}{reason}) before it was {target.value}")
    console.print(f"run [bold]{run_id}[/] {_state(record.state.value)}")


@app.command()
def checkpoint(
    run: Annotated[str, typer.Argument(help="Run id.")],
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for the checkpoint to be reported (0: do not wait).")
    ] = 120.0,
) -> None:
    """Ask a run's worker to save a checkpoint now, then print where it was saved."""
    run_id = validate_run_id(run)
    path = RunDir(_home().run_dir(run_id)).telemetry_path
    with _client() as client:
        before = {a.path for a in _checkpoints(path)}
        client.control(run_id, Control.CHECKPOINT)
        console.print(f"checkpoint asked of run [bold]{run_id}[/]")
        if timeout <= 0:
            return
        deadline = time.monotonic() + timeout
        # The worker saves at its next training step and reports the file; storage holds the report.
        while True:
            fresh = [a for a in _checkpoints(path) if a.path not in before and _requested(a)]
            if fresh:
                saved = fresh[-1]
                break
            info = client.get_run(run_id).record
            if info.state.terminal:
                raise GymGuiError(f"run {run_id} ended ({info.state.value}) before a checkpoint was reported")
            if time.monotonic() > deadline:
                raise GymGuiError(f"run {run_id} reported no checkpoint within {timeout:.0f}s")
            time.sleep(0.25)
    console.print(
        f"checkpoint saved: {escape(str(path.parent / saved.path))} (step {saved.step})",
        highlight=False,
        soft_wrap=True,
    )


def _checkpoints(path: Path) -> list[ArtifactRecord]:
    """The checkpoint artifacts a run has reported so far (none while its storage is not set up)."""
    if not path.exists():
        return []
    try:
        reader = TelemetryReader(path)
    except GymGuiError:
        return []
    try:
        return [a for a in reader.artifacts() if a.kind == "checkpoint"]
    finally:
        reader.close()


def _requested(artifact: ArtifactRecord) -> bool:
    try:
        return json.loads(artifact.meta or "{}").get("requested") is True
    except (ValueError, AttributeError):
        return False


@app.command("render-rate")
def render_rate(
    run: Annotated[str, typer.Argument(help="Run id.")],
    fps: Annotated[float, typer.Argument(help="Frames per second for pixel environments (0: none).")],
) -> None:
    """Change how many frames a second a running pixel-env run renders for the live view and replay."""
    run_id = validate_run_id(run)
    with _client() as client:
        client.control(run_id, Control.RENDER_RATE, render_fps=fps)
    console.print(f"run [bold]{run_id}[/]: render rate {fps:g} frames/s")


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
    target = output or Path.cwd() / f"{run_id}.tar.gz"
    RunDir(_home().run_dir(run_id)).export(target)
    console.print(f"exported {run_id} to {target}")


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


# ------------------------------------------------------------------ sweeps

sweep_app = typer.Typer(help="Optuna sweeps whose trials are runs.", no_args_is_help=True)
app.add_typer(sweep_app, name="sweep")
_SWEEP_STYLE = {
    SweepState.RUNNING: "bold cyan",
    SweepState.STOPPING: "yellow",
    SweepState.COMPLETED: "green",
    SweepState.STOPPED: "magenta",
    SweepState.FAILED: "bold red",
}
_TRIAL_STYLE = {"COMPLETE": "green", "PRUNED": "cyan", "FAIL": "bold red", "RUNNING": "bold cyan"}


@sweep_app.command("start")
def sweep_start(
    spec: Annotated[Path, typer.Argument(help="The sweep spec: a JSON or YAML file.")],
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the trials as they end; print the best.")
    ] = False,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
) -> None:
    """Start a sweep: its trials are runs the daemon queues like any other (--executor and
    --ray-address override the spec's base config, so every trial runs there)."""
    checked = load_spec(spec)
    if executor is not None or ray_address is not None:
        data = checked.model_dump(mode="json")
        apply_overrides(data["config"], executor_overrides(executor, ray_address))
        checked = parse_spec(data)
    with _client() as client:
        record = client.start_sweep(checked.model_dump_json())
        console.print(
            f"sweep {record.sweep_id} started: study {record.study} in {record.storage}",
            markup=False,
            highlight=False,
        )
        if wait:
            _follow_sweep(client, record.sweep_id)


def _follow_sweep(client: DaemonClient, sweep_id: str) -> None:
    told: set[int] = set()
    here = Home().known_home_id()
    while True:
        detail = client.get_sweep(sweep_id)
        view = _study_of(detail.study)
        for trial in sorted(view.trials, key=lambda t: t.number):
            if trial.number in told or trial.state in ("RUNNING", "WAITING"):
                continue
            told.add(trial.number)
            console.print(
                f"trial {trial.number} {_trial_state(trial.state)} {_values(trial)} "
                f"{escape(_params(trial.params))} runs {_runs(trial, here)}",
                highlight=False,
            )
        if detail.record.state.ended:
            console.print(
                f"sweep {sweep_id} {_sweep_state(detail.record.state)}: {escape(detail.record.reason)}"
            )
            _print_best(view)
            return
        time.sleep(1.0)


@sweep_app.command("show")
def sweep_show(
    sweep: Annotated[str | None, typer.Argument(help="Sweep id; none: the table of sweeps.")] = None,
    storage: Annotated[
        str | None,
        typer.Option("--storage", help="A study made elsewhere: its storage (URL or SQLite file)."),
    ] = None,
    study: Annotated[str | None, typer.Option("--study", help="With --storage: the study's name.")] = None,
) -> None:
    """The sweeps; a sweep's trials (best first); or any Optuna study (--storage, no daemon needed)."""
    if storage is not None:
        if sweep is not None:
            raise ConfigError("give a sweep id or --storage, not both")
        _print_trials(read_study(storage_url(storage), study))
        return
    if study is not None:
        raise ConfigError("--study names a study of --storage; give --storage too")
    with _client() as client:
        if sweep is None:
            _print_sweeps(client.list_sweeps())
            return
        detail = client.get_sweep(validate_sweep_id(sweep))
    record = detail.record
    table = Table(show_header=False, box=None)
    table.add_row("sweep", record.sweep_id)
    table.add_row(
        "state", _sweep_state(record.state) + (f": {escape(record.reason)}" if record.reason else "")
    )
    table.add_row("study", f"{record.study} in {escape(record.storage)}")
    table.add_row("directory", record.directory)
    console.print(table)
    _print_trials(_study_of(detail.study))


@sweep_app.command("best")
def sweep_best(sweep: Annotated[str, typer.Argument(help="Sweep id.")]) -> None:
    """The best trial of a sweep (the Pareto front of a multi-objective one): parameters, value(s), runs."""
    with _client() as client:
        detail = client.get_sweep(validate_sweep_id(sweep))
    _print_best(_study_of(detail.study))


@sweep_app.command("stop")
def sweep_stop(sweep: Annotated[str, typer.Argument(help="Sweep id.")]) -> None:
    """No new trials; the running trials' runs are cancelled; the sweep is recorded stopped."""
    with _client() as client:
        record = client.stop_sweep(validate_sweep_id(sweep))
    console.print(f"sweep {record.sweep_id} {_sweep_state(record.state)}: {escape(record.reason)}")


def _study_of(data: dict[str, Any]) -> StudyView:
    if "error" in data:
        raise StudyError(str(data["error"]))
    return StudyView.from_data(data)


def _sweep_state(state: SweepState) -> str:
    return f"[{_SWEEP_STYLE[state]}]{state.value}[/]"


def _trial_state(state: str) -> str:
    return f"[{_TRIAL_STYLE.get(state, 'dim')}]{state}[/]"


def _values(trial: TrialRow) -> str:
    return ", ".join(f"{v:.6g}" for v in trial.values) if trial.values else "-"


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _print_sweeps(records: list[SweepRecord]) -> None:
    table = Table("sweep", "state", "study", "storage", "created", "reason")
    for record in records:
        table.add_row(
            record.sweep_id,
            _sweep_state(record.state),
            record.study,
            escape(record.storage),
            _when(record.created_at),
            escape(record.reason[:60]),
        )
    console.print(table)


def _runs(trial: TrialRow, here: str | None) -> str:
    """A trial's runs; another home's trial is named by that home (its runs are not in this one)."""
    if here is not None and trial.elsewhere(here):
        return f"in home {trial.home}"
    return ", ".join(trial.run_ids) or "-"


def _print_trials(view: StudyView) -> None:
    here = Home().known_home_id()
    best = {trial.number for trial in view.best()}
    directions = ", ".join(view.directions)
    table = Table("", "trial", "state", f"value ({directions})", "params", "runs", "reason", title=view.name)
    for trial in view.ranked():
        reason = trial.user_attrs.get(TRIAL_REASON_ATTR, "")
        table.add_row(
            "[bold green]best[/]" if trial.number in best else "",
            str(trial.number),
            _trial_state(trial.state),
            _values(trial),
            escape(_params(trial.params)),
            escape(_runs(trial, here)),
            escape(str(reason)[:80]),
        )
    console.print(table)


def _print_best(view: StudyView) -> None:
    best = view.best()
    if not best:
        console.print(f"study {view.name}: no trial has completed yet", markup=False, highlight=False)
        return
    for trial in best:
        console.print(
            f"best trial {trial.number}: value {_values(trial)}\n"
            f"  params {_params(trial.params)}\n"
            f"  runs {_runs(trial, Home().known_home_id())}",
            markup=False,
            highlight=False,
        )


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


if __name__ == "__main__":
    main()
