"""`gym-gui publish` and `gym-gui import-model hf://…` through the real huggingface_hub client and a loopback
Hub: a CleanRL PPO model and a Spade BDI Q-table go up in one commit with their card and come back as
runs that play the same returns from the same seed; a failed upload publishes nothing; the token is
never written; a CleanRL upload's script is never fetched; a pushed dataset is what Minari's own
client downloads."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from huggingface_hub import CommitOperationAdd, HfApi

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.hub_server import FakeHub
from tests.support import assert_one_line_error, files_containing, gym_gui, module_daemon

TOKEN = "hf_loopback_publish_token_0123456789"
# What huggingface_hub asks of a Hub by itself when it thinks an AI agent runs it (best-effort, never
# one of gym_gui's calls).
CLIENT_TELEMETRY = {"GET /api/agent-harnesses"}


@dataclass(frozen=True)
class Trained:
    client: DaemonClient
    home: Home
    runs: dict[str, str]  # kind -> its finished training run


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trained]:
    root = tmp_path_factory.mktemp("hub_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as (client, home):
        configs = {
            "cleanrl": {
                "worker": "cleanrl",
                "algorithm": "ppo",
                "env_id": "CartPole-v1",
                "seed": 1,
                "budget": {"timesteps": 2048},
                "params": {"num-steps": 128},
            },
            "spade_bdi": {
                "worker": "spade_bdi",
                "env_id": "FrozenLake-v1",
                "seed": 1,
                "env_kwargs": {"is_slippery": False},
                "budget": {"episodes": 300},
            },
        }
        runs = {kind: client.submit(parse_run_config(config))[0].run_id for kind, config in configs.items()}
        for run_id in runs.values():
            final = client.wait_for_end(run_id, timeout=400)
            assert final.state is RunState.COMPLETED, final.reason
        yield Trained(client, home, runs)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A loopback Hub the commands reach through HF_ENDPOINT with HF_TOKEN; HF_HOME (the client's cache
    and stored login) is the test's own, searched for the token afterwards."""
    with FakeHub(TOKEN) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
        yield server


def _returns(client: DaemonClient, run_id: str, seed: int, episodes: int = 3) -> list[float]:
    """The returns of the episodes the run's model plays from ``seed``, in an evaluation run."""
    config = client.evaluation_config(run_id, episodes, seed=seed, render_fps=0)
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(final.run_dir).telemetry_path)
    try:
        return [episode.total_reward for episode in reader.episodes()]
    finally:
        reader.close()


def _card(readme: bytes) -> dict[str, object]:
    _, header, _ = readme.decode().split("---\n", 2)
    data = yaml.safe_load(header)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    ("kind", "model_file", "algorithm"),
    [("cleanrl", "ppo.cleanrl_model", "ppo"), ("spade_bdi", "spade_bdi.json", "spade_bdi")],
)
def test_a_published_model_comes_back_as_a_run_that_plays_the_same_returns(
    trained: Trained, hub: FakeHub, tmp_path: Path, kind: str, model_file: str, algorithm: str
) -> None:
    run_id, home = trained.runs[kind], trained.home
    files = RunDir(home.run_dir(run_id))
    repo_id = f"gg-team/{kind}-model"

    published = gym_gui("publish", run_id, "--repo", repo_id, "--episodes", "3", home=home.root, timeout=400)
    assert published.returncode == 0, published.stderr
    assert f"published {run_id} to {repo_id}" in published.stdout

    repo = hub.repo(repo_id)
    assert repo is not None and not repo.private and len(repo.commits) == 1  # one commit, everything in it
    stored = repo.files
    assert {"README.md", "gym_gui.json", model_file, "requirements.txt", "metrics.csv", "replay.gif"} <= set(
        stored
    )
    manifest = files.read_manifest()
    final_model = next(model for model in files.saved_models() if model.kind == "model")
    assert stored[model_file] == (files.path / final_model.path).read_bytes()
    assert stored["requirements.txt"].decode().splitlines() == manifest.environment.packages
    assert stored["replay.gif"].startswith(b"GIF89a")
    metrics = list(csv.reader(io.StringIO(stored["metrics.csv"].decode())))
    assert metrics[0] == ["tag", "step", "wall_time", "value"] and len(metrics) > 1
    if kind == "cleanrl":  # CleanRL's own event files, as TensorBoard reads them
        assert any(name.startswith("tensorboard/events.out.tfevents.") for name in stored)

    facts = json.loads(stored["gym_gui.json"])
    evaluation = facts["evaluation"]
    assert (
        facts["worker"] == kind and facts["algorithm"] == algorithm and facts["command"] == manifest.command
    )
    assert len(evaluation["returns"]) == 3
    card = _card(stored["README.md"])
    assert card["library_name"] == "gym_gui" and card["env_id"] == facts["env_id"]
    assert card["algorithm"] == algorithm and {"reinforcement-learning", facts["env_id"]} <= set(card["tags"])  # type: ignore[arg-type]
    [result] = card["model-index"][0]["results"]  # type: ignore[index]
    assert result["dataset"]["name"] == facts["env_id"]
    assert result["metrics"][0]["value"] == f"{evaluation['mean']:.2f} +/- {evaluation['std']:.2f}"
    readme = stored["README.md"].decode()
    assert " ".join(manifest.command[:2]) in readme and f"hf://{repo_id}" in readme

    imported = gym_gui("import-model", f"hf://{repo_id}", home=home.root, timeout=300)
    assert imported.returncode == 0, imported.stderr
    assert f"{kind} {algorithm} on {facts['env_id']}" in imported.stdout
    new_run = next(word for word in imported.stdout.split() if f"__{algorithm}-import__" in word)
    record = trained.client.get_run(new_run).record
    assert record.state is RunState.COMPLETED and record.worker == kind
    # The run says where its model came from: the repository at the commit it was downloaded from.
    origin = f"hf://{repo_id}@{repo.head}"
    assert record.reason == f"imported from {origin}"
    assert RunDir(record.run_dir).read_manifest().imported_from == origin
    # The imported model plays what the card says the published one played, and what it plays now.
    assert _returns(trained.client, new_run, evaluation["seed"]) == evaluation["returns"]
    assert _returns(trained.client, new_run, seed=11) == _returns(trained.client, run_id, seed=11)

    # The token went to the Hub and nowhere else: not the home, the client's own directory, the output.
    assert hub.tokens_seen == {TOKEN}
    assert set(hub.unknown) <= CLIENT_TELEMETRY
    assert files_containing(home.root, TOKEN.encode()) == []
    assert files_containing(tmp_path / "hf_home", TOKEN.encode()) == []
    for result_ in (published, imported):
        assert TOKEN not in result_.stdout + result_.stderr


def test_a_failed_upload_publishes_nothing_and_says_so_in_one_line(trained: Trained, tmp_path: Path) -> None:
    run_id = trained.runs["spade_bdi"]
    with FakeHub(TOKEN, fail={"commit": 500}) as hub, pytest.MonkeyPatch.context() as env:
        env.setenv("HF_ENDPOINT", hub.url)
        env.setenv("HF_TOKEN", TOKEN)
        env.setenv("HF_HOME", str(tmp_path / "hf_home"))
        result = gym_gui(
            "publish", run_id, "--repo", "gg-team/broken", "--episodes", "1", home=trained.home.root
        )
        assert_one_line_error(result, "not published to gg-team/broken", "500", "nothing was uploaded")
        # The repository it made for the commit is gone again: nothing half-published.
        assert hub.refused == [("commit", 500)] and hub.repo("gg-team/broken") is None
        assert TOKEN not in result.stdout + result.stderr


def test_the_token_of_a_stored_login_publishes_and_is_copied_nowhere(
    trained: Trained, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hf_home = tmp_path / "hf_home"
    hf_home.mkdir()
    (hf_home / "token").write_text(TOKEN)  # where `hf auth login` keeps it
    with FakeHub(TOKEN) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.setenv("HF_HOME", str(hf_home))
        run_id = trained.runs["spade_bdi"]
        result = gym_gui(
            "publish",
            run_id,
            "--repo",
            "gg-team/login",
            "--private",
            "--episodes",
            "1",
            home=trained.home.root,
        )
        assert result.returncode == 0, result.stderr
        repo = hub.repo("gg-team/login")
        assert repo is not None and repo.private and hub.tokens_seen == {TOKEN}
    assert files_containing(trained.home.root, TOKEN.encode()) == []
    assert files_containing(hf_home, TOKEN.encode()) == [hf_home / "token"]  # the client's, as it was


def test_publish_without_a_token_is_refused_before_anything_runs(
    trained: Trained, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no_login"))
    before = len(trained.client.list_runs(include_archived=True))
    result = gym_gui("publish", trained.runs["cleanrl"], "--repo", "gg-team/x", home=trained.home.root)
    assert_one_line_error(result, "publish needs a Hugging Face token: HF_TOKEN", "gym_gui never stores it")
    assert_one_line_error(
        gym_gui("publish", trained.runs["cleanrl"], "--repo", "not a repo", home=trained.home.root), "--repo"
    )
    assert len(trained.client.list_runs(include_archived=True)) == before  # no evaluation was started


def test_cleanrls_own_upload_imports_and_its_script_is_never_fetched(
    trained: Trained, hub: FakeHub, tmp_path: Path
) -> None:
    """A repository as CleanRL's --upload-model leaves it: ``{exp_name}.cleanrl_model``, a card whose
    header says library cleanrl and the env in its model-index, the script beside them."""
    files = RunDir(trained.home.run_dir(trained.runs["cleanrl"]))
    model = next(model for model in files.saved_models() if model.kind == "model")
    marker = tmp_path / "the-script-ran"
    card = {
        "tags": [
            "CartPole-v1",
            "deep-reinforcement-learning",
            "reinforcement-learning",
            "custom-implementation",
        ],
        "library_name": "cleanrl",
        "model-index": [
            {
                "name": "PPO",
                "results": [
                    {
                        "task": {"type": "reinforcement-learning", "name": "reinforcement-learning"},
                        "dataset": {"name": "CartPole-v1", "type": "CartPole-v1"},
                        "metrics": [{"type": "mean_reward", "value": "9.00 +/- 0.00", "name": "mean_reward"}],
                    }
                ],
            }
        ],
    }
    readme = f"---\n{yaml.safe_dump(card)}---\n# (CleanRL) **PPO** Agent Playing **CartPole-v1**\n"
    HfApi(endpoint=hub.url, token=TOKEN).create_repo("cleanrl/CartPole-v1-ppo-seed1")
    HfApi(endpoint=hub.url, token=TOKEN).create_commit(
        "cleanrl/CartPole-v1-ppo-seed1",
        [
            CommitOperationAdd("README.md", readme.encode()),
            CommitOperationAdd("ppo.cleanrl_model", (files.path / model.path).read_bytes()),
            CommitOperationAdd("ppo.py", f"open({str(marker)!r}, 'w').write('ran')\n".encode()),
        ],
        commit_message="pushing model",
    )
    root = trained.home.root
    assert_one_line_error(
        gym_gui("import-model", str(tmp_path / "a.cleanrl_model"), home=root),
        "--env is needed to import a model file",
    )
    refused = gym_gui("import-model", "hf://cleanrl/CartPole-v1-ppo-seed1", "--env", "Acrobot-v1", home=root)
    assert_one_line_error(
        refused, "--env Acrobot-v1: the card of hf://cleanrl/CartPole-v1-ppo-seed1 says CartPole-v1"
    )

    imported = gym_gui("import-model", "hf://cleanrl/CartPole-v1-ppo-seed1", home=root, timeout=300)
    assert imported.returncode == 0, imported.stderr
    assert "cleanrl ppo on CartPole-v1" in imported.stdout and "COMPLETED" in imported.stdout
    assert not marker.exists()
    assert not list((tmp_path / "hf_home").rglob("ppo.py"))  # never downloaded, so never run


def test_a_pushed_dataset_is_what_minaris_own_client_downloads(
    trained: Trained, hub: FakeHub, tmp_path: Path
) -> None:
    root = trained.home.root
    played = gym_gui(
        "train", "--worker", "random", "--env", "CartPole-v1", "--episodes", "3", "--seed", "2", home=root
    )
    assert played.returncode == 0, played.stderr
    run_id = next(word for word in played.stdout.split() if word.startswith("CartPole-v1__random__"))
    created = gym_gui("dataset", "create", "cartpole/random-v0", "--from", run_id, home=root)
    assert created.returncode == 0, created.stderr

    assert_one_line_error(
        gym_gui("dataset", "push", "cartpole/random-v0", "--repo", "gg-team/other", home=root),
        "--repo gg-team/other: Minari's remote keeps dataset cartpole/random-v0 in the repository gg-team/cartpole",
    )
    pushed = gym_gui("dataset", "push", "cartpole/random-v0", "--repo", "gg-team/cartpole", home=root)
    assert pushed.returncode == 0, pushed.stderr
    repo = hub.repo("gg-team/cartpole", "dataset")
    assert repo is not None and len(repo.commits) == 1
    assert json.loads(repo.files["namespace_metadata.json"])["datasets"] == ["cartpole/random-v0"]

    # Minari's own command line, its Hub remote pointed at the organisation (its namespace step reads
    # MINARI_REMOTE, not the remote an hf:// id names), into a Minari root of its own.
    downloaded = tmp_path / "minari_root"
    env = {**os.environ, "MINARI_REMOTE": "hf://gg-team", "MINARI_DATASETS_PATH": str(downloaded)}
    env.pop("HF_TOKEN")  # a public dataset: anyone downloads it
    fetched = subprocess.run(
        [str(Path(sys.executable).parent / "minari"), "download", "cartpole/random-v0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    local = trained.home.datasets_dir / "cartpole" / "random-v0"
    theirs = downloaded / "cartpole" / "random-v0"
    ours = {p.relative_to(local): p.read_bytes() for p in local.rglob("*") if p.is_file()}
    assert {p.relative_to(theirs): p.read_bytes() for p in theirs.rglob("*") if p.is_file()} == ours
    assert files_containing(downloaded, TOKEN.encode()) == []
