"""A finished run published to the Hugging Face Hub in one commit: its model, its card, what made it
(hyperparameters, command line, package set), its training curves and a replay of one evaluation."""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np
from gym_gui_sdk.encoding import loads_observation
from huggingface_hub import CommitOperationAdd, EvalResult, HfApi, ModelCardData, get_token
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, GymGuiError, StorageError, UnknownEnv
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.datasets import same_as_stored
from gym_gui.envs.catalog import env_environment
from gym_gui.envs.check import make_env, render_fps
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import Manifest, RunDir, SavedModel, saved_model_refusal
from gym_gui.storage.telemetry import TelemetryReader

# What gym_gui's own cards are recognised by (the card's library_name), and the file beside the card
# that says, as data, what the model is (kind, algorithm, env, file, sha256, evaluation).
LIBRARY = "gym_gui"
DESCRIPTION = "gym_gui.json"
README = "README.md"
REPLAY = "replay.gif"
METRICS = "metrics.csv"
REQUIREMENTS = "requirements.txt"
EVENT_FILES = "tensorboard"
# A replay longer than this many frames keeps its first ones: a model card shows a preview, and a
# GIF of thousands of frames is megabytes the reader never watches.
MAX_REPLAY_FRAMES = 500
# The stages a publish goes through, in order (PublishProgress.stage indexes them): the window's
# progress bar and the command line's lines both follow them.
STAGES = ("checking", "evaluating", "writing the card", "uploading")
DATASET_STAGES = ("checking", "uploading")  # a dataset's push: its recorded digests, then the commit
# How often the evaluation's progress is read while it plays (the CLI's own bar reads as often).
POLL_SECONDS = 0.25


class HubError(GymGuiError):
    """The Hub refused, or could not be reached: one line (a failed upload has published nothing)."""


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` as the Hub takes it (``ORG/NAME``).

    Raises:
        ConfigError: naming --repo and what is wrong with it.
    """
    if repo_id.count("/") != 1:
        raise ConfigError(f"--repo {repo_id!r}: give the Hub repository as ORG/NAME")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise ConfigError(f"--repo {repo_id!r}: {str(exc).splitlines()[0]}") from None
    return repo_id


def require_token(doing: str) -> None:
    """Refuse, before anything starts, when huggingface_hub has no token (HF_TOKEN or its stored login);
    the token itself stays the client's: gym_gui never reads it into anything it writes.

    Raises:
        ConfigError: saying where the token is looked for.
    """
    if not get_token():
        raise ConfigError(
            f"{doing} needs a Hugging Face token: HF_TOKEN or a `hf auth login`; gym_gui never stores it"
        )


def final_model(files: RunDir, run_id: str) -> SavedModel:
    """The run's final model (else its last checkpoint), checked against the digest it was saved with.

    Raises:
        ConfigError: the run saved no model, or its file is gone or changed.
    """
    try:
        models = files.saved_models()
    except StorageError as exc:
        raise ConfigError(str(exc)) from None
    if not models:
        raise ConfigError(f"run {run_id} saved no model to publish")
    finals = [model for model in models if model.kind == "model"]
    model = (finals or models)[-1]
    path = files.artifact_path(model.path)
    assert path is not None  # saved_models skips paths that leave the run
    refusal = saved_model_refusal(run_id, model, path)
    if refusal:
        raise ConfigError(refusal)
    return model


@dataclass(frozen=True)
class Evaluation:
    """The returns of an evaluation run, one per episode, and the seed of its first episode."""

    run_id: str
    seed: int | None
    returns: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        return float(np.std(self.returns))

    def text(self) -> str:
        """As the Hub's cards write a mean reward (CleanRL's, RL Zoo's): ``mean +/- std``."""
        return f"{self.mean:.2f} +/- {self.std:.2f}"


def read_evaluation(files: RunDir) -> Evaluation:
    """The episodes an evaluation run stored.

    Raises:
        ConfigError: it stored none.
    """
    reader = TelemetryReader(files.telemetry_path)
    try:
        episodes = reader.episodes()
    finally:
        reader.close()
    if not episodes:
        raise ConfigError(f"evaluation run {files.run_id} stored no episode")
    return Evaluation(files.run_id, episodes[0].seed, tuple(e.total_reward for e in episodes))


def replay_gif(files: RunDir, config: RunConfig) -> tuple[bytes | None, str]:
    """A GIF of the evaluation run's first episode, played again in gym_gui's environment from its
    stored seed and actions with frames drawn (``rgb_array``), each observation checked against the
    stored one; (None, why) when the env cannot draw frames here or plays differently.
    """
    reader = TelemetryReader(files.telemetry_path)
    try:
        episodes = reader.episodes(limit=1)
        steps = reader.steps(episodes[0].episode) if episodes else []
    finally:
        reader.close()
    if not episodes or not steps:
        return None, "no evaluation episode to replay"
    # Drawn offscreen as a worker draws (SDL's dummy drivers for pygame's envs), or as the env's
    # family says it must be.
    for name, value in {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}.items():
        os.environ.setdefault(name, value)
    os.environ.update(env_environment(config.env_id))
    try:
        env = make_env(config.env_id, render_mode="rgb_array", **config.env_kwargs)
    except UnknownEnv as exc:
        return None, str(exc)
    frames: list[np.ndarray] = []
    try:
        env.reset(seed=episodes[0].seed)
        for number, step in enumerate([None, *steps[: MAX_REPLAY_FRAMES - 1]]):
            if step is not None:
                observation, *_ = env.step(json.loads(step.action))
                if not same_as_stored(observation, loads_observation(step.observation)):
                    return None, f"replaying the episode here gave another observation at step {number - 1}"
            frame = env.render()
            if not isinstance(frame, np.ndarray) or frame.ndim != 3:
                return None, f"{config.env_id} draws no RGB frames"
            frames.append(frame)
    except Exception as exc:  # the env's own code: the card goes without a replay, saying why
        return None, f"the env could not replay the episode: {type(exc).__name__}: {exc}"
    finally:
        env.close()
    import imageio.v3 as iio  # only publishing writes images

    fps = min(render_fps(config.env_id), 50.0)
    data = iio.imwrite("<bytes>", np.stack(frames), extension=".gif", duration=1000 / fps, loop=0)
    assert isinstance(data, bytes)
    return data, f"{len(frames)} frames of episode 0 (seed {episodes[0].seed})"


def training_curves(files: RunDir, manifest: Manifest) -> dict[str, bytes]:
    """The run's TensorBoard event files (under ``tensorboard/``) and every metric it streamed as one
    CSV (tag, step, wall_time, value)."""
    curves: dict[str, bytes] = {}
    events = files.artifact_path(manifest.tensorboard_dir) if manifest.tensorboard_dir else None
    if events is not None and events.is_dir():
        for path in sorted(events.rglob("*")):
            if path.is_file() and not path.is_symlink():
                curves[f"{EVENT_FILES}/{path.relative_to(events).as_posix()}"] = path.read_bytes()
    if files.telemetry_path.exists():
        reader = TelemetryReader(files.telemetry_path)
        try:
            text = io.StringIO()
            writer = csv.writer(text, lineterminator="\n")
            writer.writerow(("tag", "step", "wall_time", "value"))
            for tag in reader.metric_tags():
                for point in reader.metrics(tag):
                    writer.writerow((tag, point.step, point.wall_time, point.value))
        finally:
            reader.close()
        curves[METRICS] = text.getvalue().encode()
    return curves


def model_file_name(config: RunConfig, model: SavedModel) -> str:
    """Where the model goes in the repository: ``{algorithm}{suffix}`` at its root, as CleanRL's own
    uploads name theirs (``ppo.cleanrl_model``), so its tools find it too."""
    return f"{config.algorithm or config.worker}{PurePosixPath(model.path).suffix}"


def description(
    run_id: str, config: RunConfig, manifest: Manifest, model: SavedModel, name: str, evaluation: Evaluation
) -> dict[str, Any]:
    """What ``gym_gui.json`` says: the data an import reads (never code: the kind is looked up among
    the installed ones, and its own loader checks the file)."""
    return {
        "format": 1,
        "run_id": run_id,
        "worker": config.worker,
        "algorithm": config.algorithm or config.worker,
        "env_id": config.env_id,
        "env_kwargs": config.env_kwargs,
        "seed": config.seed,
        "params": config.params,
        "budget": config.budget.model_dump(),
        "command": manifest.command,
        "model": {"path": name, "sha256": model.sha256, "step": model.step},
        "evaluation": {
            "run_id": evaluation.run_id,
            "seed": evaluation.seed,
            "episodes": len(evaluation.returns),
            "returns": list(evaluation.returns),
            "mean": evaluation.mean,
            "std": evaluation.std,
        },
    }


def model_card(
    repo_id: str, facts: Mapping[str, Any], evaluation: Evaluation, packages: list[str], replay: str
) -> str:
    """``README.md``: the Hub's metadata header (library, tags, env, algorithm, the evaluation as
    mean +/- std) and a page saying how the model was trained, how well it plays and how to load it."""
    env_id, algorithm, worker = facts["env_id"], facts["algorithm"], facts["worker"]
    data = ModelCardData(
        library_name=LIBRARY,
        tags=sorted({"reinforcement-learning", LIBRARY, env_id, worker, algorithm}),
        model_name=algorithm,
        env_id=env_id,
        algorithm=algorithm,
        worker=worker,
        eval_results=[
            EvalResult(
                task_type="reinforcement-learning",
                task_name="reinforcement-learning",
                dataset_type=env_id,
                dataset_name=env_id,
                metric_type="mean_reward",
                metric_name="mean_reward",
                metric_value=evaluation.text(),
            )
        ],
    )
    command = shlex.join(facts["command"]) if facts["command"] else "(not recorded)"
    hyperparameters = {
        key: facts[key] for key in ("seed", "budget", "params", "env_kwargs") if facts[key] not in ({}, None)
    }
    returns = ", ".join(f"{value:g}" for value in evaluation.returns)
    lines = [
        "---",
        data.to_yaml(),
        "---",
        "",
        f"# {algorithm} ({worker}) playing {env_id}",
        "",
        f"A model trained with gym_gui, run `{facts['run_id']}`,",
        f"saved at step {facts['model']['step']:,} as `{facts['model']['path']}`"
        f" (sha256 `{facts['model']['sha256'] or 'not recorded'}`).",
        "",
        "## Evaluation",
        "",
        f"Mean return **{evaluation.text()}** over {len(evaluation.returns)} episodes played by gym_gui",
        f"when it was published (evaluation run `{evaluation.run_id}`, seeds from {evaluation.seed}):",
        f"{returns}.",
        "",
        f"Replay (`{REPLAY}`): {replay}." if replay else "No replay: the episode could not be drawn here.",
        "",
        "## Use it",
        "",
        "```sh",
        f"gym-gui import-model hf://{repo_id}",
        "```",
        "",
        "## How it was trained",
        "",
        "```sh",
        command,
        "```",
        "",
        "Hyperparameters:",
        "",
        "```json",
        json.dumps(hyperparameters, indent=2, sort_keys=True),
        "```",
        "",
        f"The package set it trained with is `{REQUIREMENTS}` ({len(packages)} packages); the training"
        f" curves are `{METRICS}` (every metric it streamed) and, where it wrote them, TensorBoard's event"
        f" files under `{EVENT_FILES}/`.",
        "",
    ]
    return "\n".join(lines)


def publication(
    repo_id: str,
    files: RunDir,
    config: RunConfig,
    model: SavedModel,
    evaluation: Evaluation,
    evaluation_files: RunDir,
) -> tuple[dict[str, bytes], str]:
    """Every file of the repository, by its path there; and what became of the replay."""
    manifest = files.read_manifest()
    name = model_file_name(config, model)
    facts = description(files.run_id, config, manifest, model, name, evaluation)
    video, replay = replay_gif(evaluation_files, config)
    packages = list(manifest.environment.packages)
    contents = {
        name: _model_bytes(files, model),
        DESCRIPTION: (json.dumps(facts, indent=2, sort_keys=True) + "\n").encode(),
        REQUIREMENTS: "".join(f"{line}\n" for line in packages).encode(),
        **training_curves(files, manifest),
    }
    if video is not None:
        contents[REPLAY] = video
    contents[README] = model_card(repo_id, facts, evaluation, packages, replay if video else "").encode()
    return contents, replay


def _model_bytes(files: RunDir, model: SavedModel) -> bytes:
    path = files.artifact_path(model.path)
    assert path is not None
    return path.read_bytes()


@dataclass(frozen=True)
class Commit:
    """Where a publish went: the commit's page and the repository's."""

    commit_url: str
    repo_url: str


def commit(
    repo_id: str, contents: Mapping[str, bytes], private: bool, message: str, repo_type: str = "model"
) -> Commit:
    """Upload ``contents`` to repository ``repo_id`` (a model's, or a dataset's) as one commit (creating
    the repository when there is none: ``private`` then says its visibility); returns its URLs.

    The Hub applies a commit whole or not at all. A repository this call created is deleted again
    when the commit fails, so a failed publish leaves nothing behind.

    Raises:
        HubError: the Hub refused or the connection broke, in one line; nothing was published.
    """
    api = HfApi()  # endpoint: HF_ENDPOINT; token: HF_TOKEN or the stored login, the client's own
    created = False
    try:
        if not api.repo_exists(repo_id, repo_type=repo_type):
            api.create_repo(repo_id, private=private, repo_type=repo_type)
            created = True
        operations = [CommitOperationAdd(path, data) for path, data in sorted(contents.items())]
        info = api.create_commit(repo_id, operations, commit_message=message, repo_type=repo_type)
    except Exception as exc:  # the client's HTTP and connection errors alike: one line, nothing left
        if created:
            try:
                api.delete_repo(repo_id, missing_ok=True, repo_type=repo_type)
            except Exception:  # the repository stays, empty: say so
                raise HubError(
                    f"not published to {repo_id}: {first_line(exc)}; the empty repository it created "
                    "could not be deleted"
                ) from None
        raise HubError(f"not published to {repo_id}: {first_line(exc)}; nothing was uploaded") from None
    return Commit(str(info.commit_url), str(info.repo_url))


def first_line(exc: BaseException) -> str:
    """An error's first line (the Hub client's errors run to several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class PublishProgress:
    """Where a publish is: its stage (an index of :data:`STAGES`, of :data:`DATASET_STAGES` for a
    dataset: ``stages`` says how many), a line saying what it does, and, within the stage, how much of
    how much is done (``total`` 0: not counted)."""

    stage: int
    text: str
    done: int = 0
    total: int = 0
    evaluation_run: str = ""  # the evaluation run, once it has started
    stages: int = len(STAGES)

    @property
    def fraction(self) -> float:
        """The share of the whole publish done, from 0 to 1."""
        within = min(self.done / self.total, 1.0) if self.total else 0.0
        return (self.stage + within) / self.stages


@dataclass(frozen=True)
class Published:
    """What a publish did: where, in how many files, the evaluation it played, the replay's note."""

    run_id: str
    repo_id: str
    url: str
    files: int
    repo_url: str
    evaluation: Evaluation
    evaluation_run: RunRecord
    replay: str  # what became of the replay (why there is none, when REPLAY is not among the files)
    has_replay: bool

    def text(self) -> str:
        return (
            f"published {self.run_id} to {self.repo_id}: {self.files} files, mean return "
            f"{self.evaluation.text()} over {len(self.evaluation.returns)} episodes — {self.url}"
        )


def publish_run(
    client: DaemonClient,
    run_id: str,
    repo_id: str,
    *,
    private: bool = False,
    episodes: int = 10,
    progress: Callable[[PublishProgress], None] | None = None,
) -> Published:
    """Publish completed run ``run_id``'s model to ``repo_id``: evaluate it now over ``episodes``
    (an evaluation run the daemon stores), then upload its model, card, curves and replay in one
    commit. ``progress`` is told each stage as it starts and the evaluation's episodes as they end
    (on the calling thread).

    Raises:
        ConfigError: bad --repo, no token, the run is not completed or has no model, or its
            evaluation did not complete; nothing was uploaded.
        HubError: the Hub refused or could not be reached; nothing was published.
    """
    say = progress or (lambda _progress: None)
    say(PublishProgress(0, f"checking {run_id} and the token"))
    check_repo_id(repo_id)
    require_token("publish")
    detail = client.get_run(run_id)
    if detail.record.state is not RunState.COMPLETED:
        raise ConfigError(
            f"run {run_id} is {detail.record.state.value}: only a completed run's model is published"
        )
    files = RunDir(detail.record.run_dir)
    config = files.read_config()
    model = final_model(files, run_id)
    evaluation_config = client.evaluation_config(run_id, episodes, render_fps=0)
    record, _ = client.submit(evaluation_config)
    evaluating = f"evaluating {run_id} over {episodes} episodes: run {record.run_id}"
    say(PublishProgress(1, evaluating, 0, episodes, record.run_id))
    while True:
        played = client.get_run(record.run_id)
        say(PublishProgress(1, evaluating, played.progress.episodes, episodes, record.run_id))
        if played.record.state.terminal:
            break
        time.sleep(POLL_SECONDS)
    final = played.record
    if final.state is not RunState.COMPLETED:
        why = f": {final.reason}" if final.reason else ""
        raise ConfigError(f"not published: the evaluation run {final.run_id} ended {final.state.value}{why}")
    say(PublishProgress(2, f"writing the card and the replay of {final.run_id}", evaluation_run=final.run_id))
    evaluation_files = RunDir(final.run_dir)
    evaluation = read_evaluation(evaluation_files)
    contents, replay = publication(repo_id, files, config, model, evaluation, evaluation_files)
    say(PublishProgress(3, f"uploading {len(contents)} files to {repo_id}", evaluation_run=final.run_id))
    message = f"gym_gui: {config.algorithm or config.worker} on {config.env_id} (run {run_id})"
    info = commit(repo_id, contents, private, message)
    return Published(
        run_id=run_id,
        repo_id=repo_id,
        url=info.commit_url,
        repo_url=info.repo_url,
        files=len(contents),
        evaluation=evaluation,
        evaluation_run=final,
        replay=replay,
        has_replay=REPLAY in contents,
    )
