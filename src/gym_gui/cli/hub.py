"""`gym-gui publish`: a finished run's model, evaluated now, published to the Hugging Face Hub in one commit."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from gym_gui.cli.app import app, connect, console
from gym_gui.cli.follow import print_end
from gym_gui.core.ids import validate_run_id


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
    stages: list[int] = []

    def say(progress: hub.PublishProgress) -> None:
        # A line per stage (the window's dialog shows the same stages as its progress bar).
        if progress.stage > 0 and progress.stage not in stages:
            stages.append(progress.stage)
            console.print(escape(progress.text), highlight=False, soft_wrap=True)

    with connect() as client:
        published = hub.publish_run(client, run_id, repo_id, private=private, episodes=episodes, progress=say)
    print_end(published.evaluation_run)
    if not published.has_replay:
        console.print(f"no replay in the card: {escape(published.replay)}", highlight=False, soft_wrap=True)
    console.print(escape(published.text()), highlight=False, soft_wrap=True)
