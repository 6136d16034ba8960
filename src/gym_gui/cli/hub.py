"""`gym-gui publish`: a finished run's model, evaluated now, published to the Hugging Face Hub in one commit."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from gym_gui.cli.app import app, connect, console
from gym_gui.cli.follow import follow, print_end
from gym_gui.core.errors import ConfigError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.states import RunState
from gym_gui.storage.run_dir import RunDir


@app.command()
def publish(
    run: Annotated[str, typer.Argument(help="A finished run whose model to publish.")],
    repo: Annotated[str, typer.Option(help="The Hub model repository, ORG/NAME (created when missing).")],
    private: Annotated[bool, typer.Option(help="Create the repository private.")] = False,
    episodes: Annotated[
        int, typer.Option(min=1, help="Episodes the model plays now, for the card's mean ± std.")
    ] = 10,
) -> None:
    """Publish a run's model to the Hugging Face Hub in one commit: the model file, a model card
    (README.md with the Hub's metadata: library, tags, env, algorithm, the mean ± std return of
    --episodes played now), gym_gui.json (what an import reads), the hyperparameters and command line,
    the package set, the training curves and a replay of one evaluation episode.

    The token is huggingface_hub's (HF_TOKEN or `hf auth login`); HF_ENDPOINT names another Hub.
    gym_gui never stores it. A failed upload publishes nothing.
    """
    from gym_gui.hub import publish as hub  # huggingface_hub only for the command that uses it

    run_id = validate_run_id(run)
    repo_id = hub.check_repo_id(repo)
    hub.require_token("publish")
    with connect() as client:
        detail = client.get_run(run_id)
        if detail.record.state is not RunState.COMPLETED:
            raise ConfigError(
                f"run {run_id} is {detail.record.state.value}: only a completed run's model is published"
            )
        files = RunDir(detail.record.run_dir)
        config = files.read_config()
        model = hub.final_model(files, run_id)
        evaluation_config = client.evaluation_config(run_id, episodes, render_fps=0)
        record, _ = client.submit(evaluation_config)
        console.print(f"evaluating {run_id} over {episodes} episodes: run [bold]{record.run_id}[/]")
        final = follow(client, record.run_id, evaluation_config)
    print_end(final)
    if final.state is not RunState.COMPLETED:
        raise ConfigError(f"not published: the evaluation run {final.run_id} ended {final.state.value}")
    evaluation_files = RunDir(final.run_dir)
    evaluation = hub.read_evaluation(evaluation_files)
    contents, replay = hub.publication(repo_id, files, config, model, evaluation, evaluation_files)
    if hub.REPLAY not in contents:
        console.print(f"no replay in the card: {escape(replay)}", highlight=False, soft_wrap=True)
    message = f"gym_gui: {config.algorithm or config.worker} on {config.env_id} (run {run_id})"
    url = hub.commit(repo_id, contents, private, message)
    console.print(
        f"published {run_id} to {repo_id}: {len(contents)} files, mean return {evaluation.text()} "
        f"over {len(evaluation.returns)} episodes — {escape(url)}",
        highlight=False,
        soft_wrap=True,
    )
