"""`gym-gui train`, `eval` and `rerun`: starting runs and following them to their end."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gym_gui.cli.app import app, connect, console, state_markup
from gym_gui.cli.config import (
    ExecutorOption,
    RayAddressOption,
    build_config,
    executor_overrides,
)
from gym_gui.cli.datasets import check_new_dataset, dataset_env, print_recorded, record_from_run
from gym_gui.cli.follow import follow, print_end, print_plan
from gym_gui.core.config import WarmStart
from gym_gui.core.errors import ConfigError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.records import LaunchPreview
from gym_gui.core.rerun import RERUN_EVENT
from gym_gui.core.states import RunState
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.workers import secrets_from_environment


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
    steps: Annotated[
        int | None, typer.Option(help="Gradient steps of an offline run (its budget, as --total-timesteps).")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            help="The dataset an offline run learns from (`gym-gui dataset list`); its env by default."
        ),
    ] = None,
    algo: Annotated[str | None, typer.Option(help="Algorithm, e.g. ppo for CleanRL.")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(help="Algorithm parameter name=value, by the script's own name (repeatable)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="RunConfig JSON file; flags override its values.")
    ] = None,
    scripts_dir: Annotated[
        Path | None, typer.Option(help="Your own checkout of a kind's scripts (CleanRL's, CORL's).")
    ] = None,
    python: Annotated[Path | None, typer.Option(help="The interpreter to run --scripts-dir with.")] = None,
    config_path: Annotated[
        Path | None,
        typer.Option(
            help="A CORL script's pyrallis config file (its configs/offline/…yaml): the script reads it "
            "first, then the run's own values over it."
        ),
    ] = None,
    gpu: Annotated[
        bool | None, typer.Option("--gpu/--no-gpu", help="Use a GPU when one is available.")
    ] = None,
    gpu_mandatory: Annotated[bool | None, typer.Option(help="Fail before launch without a GPU.")] = None,
    tensorboard: Annotated[
        bool | None,
        typer.Option(
            "--tensorboard",
            help="When the run ends, write its episodes and metrics as TensorBoard event files in its "
            "tensorboard/ (any kind; what `gym-gui export-tensorboard` writes).",
        ),
    ] = None,
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
    if steps is not None and total_timesteps is not None:
        raise ConfigError("--steps and --total-timesteps are one budget: give one of them")
    if dataset is not None and env is None and config is None:
        env = dataset_env(dataset)
    run_config = build_config(
        config,
        {
            "worker": worker,
            "env_id": env,
            "seed": seed,
            "budget.episodes": episodes,
            "budget.timesteps": steps if steps is not None else total_timesteps,
            "dataset": dataset,
            "algorithm": algo,
            # The daemon runs elsewhere: paths are made absolute here, where they were typed.
            "params.scripts_dir": str(scripts_dir.expanduser().resolve()) if scripts_dir else None,
            "params.python": str(python.expanduser().absolute()) if python else None,
            "params.config_path": str(config_path.expanduser().resolve()) if config_path else None,
            "resources.gpu": gpu,
            "resources.gpu_mandatory": gpu_mandatory,
            "tracking.tensorboard_export": tensorboard,
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
    with connect() as client:
        if run_config.dry_run:
            # The daemon resolves a dry run before it replies: the reply is its end and its plan.
            record, plan = client.dry_run(run_config, secrets_from_environment(run_config))
            final = client.get_run(record.run_id).record
        else:
            record, _ = client.submit(run_config, secrets_from_environment(run_config))
            console.print(f"run [bold]{record.run_id}[/] {state_markup(record.state.value)}")
            if detach:
                return
            final = follow(client, record.run_id, run_config)
    print_end(final)
    if plan is not None:
        print_plan(plan)
    if final.state is not RunState.COMPLETED:
        raise typer.Exit(1)


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
    dataset: Annotated[
        str | None,
        typer.Option(help="Write the evaluation's episodes as this dataset once it has ended (a Minari id)."),
    ] = None,
    epsilon: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="The share of steps played with a random action (ε-greedy noise)."
        ),
    ] = 0.0,
) -> None:
    """Watch a trained agent play: a telemetry-lane run whose every step is stored and replayable.

    With --dataset the episodes become an offline dataset as soon as the run ends; --epsilon mixes in
    random actions for data of mixed quality.
    """
    run_id = validate_run_id(run)
    if dataset is not None:
        if detach:
            raise ConfigError("--dataset writes the dataset once the run ends: it cannot --detach")
        check_new_dataset(dataset)
    with connect() as client:
        config = client.evaluation_config(
            run_id, episodes, checkpoint, seed, render_fps, real_time, env, epsilon=epsilon
        )
        record, _ = client.submit(config)
        console.print(f"run [bold]{record.run_id}[/] {state_markup(record.state.value)}")
        if detach:
            return
        final = follow(client, record.run_id, config)
    print_end(final)
    if final.state is not RunState.COMPLETED:
        raise typer.Exit(1)
    if dataset is not None:
        print_recorded(record_from_run(dataset, final))


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
    with connect() as client:
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
        console.print(f"run [bold]{record.run_id}[/] {state_markup(record.state.value)} (re-runs {run_id})")
        if detach:
            return
        final = follow(client, record.run_id, config)
    print_end(final)
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
