"""A finished CleanRL run's model as an operator: the plugin's card and command, and the process that
serves the model in the bundle, playing episodes that gym_gui steps in its own environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gym_gui_sdk.operator import (
    OperatorCard,
    OperatorError,
    OperatorProcess,
    OperatorRefused,
    SpaceSpec,
    Turn,
)

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import LaunchContext, OperatorPlan, OperatorSource, worker_catalog
from gym_gui.workers.process_env import worker_base_env
from tests.fixtures import SHARED_BUNDLES
from workers.cleanrl_worker.tests.support import _processes_mentioning, cleanrl_config

FINAL = "checkpoints/final.cleanrl_model"
SEED = 7


def _launcher(home: Home) -> Any:
    from gym_gui_cleanrl_worker.plugin import CleanRLLauncher

    return CleanRLLauncher(LaunchContext(home, worker_catalog().bundle_directory(Path(SHARED_BUNDLES))))


def _trained(client: DaemonClient, config: RunConfig) -> str:
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


@pytest.fixture(scope="module")
def runs(cleanrl_daemon: tuple[DaemonClient, Home]) -> dict[str, str]:
    """PPO on CartPole-v1 and PPO (continuous, observations normalised) on Pendulum-v1, briefly trained."""
    client, _home = cleanrl_daemon
    small = {"num-envs": 1, "num-steps": 256}
    return {
        "ppo": _trained(client, cleanrl_config("ppo", "CartPole-v1", 512, params=small)),
        "continuous": _trained(
            client, cleanrl_config("ppo_continuous_action", "Pendulum-v1", 1024, params=small)
        ),
    }


def _source(home: Home, run_id: str, model: Path | None = None) -> OperatorSource:
    run_dir = RunDir(home.run_dir(run_id))
    return OperatorSource(run_id, run_dir.read_config(), model or run_dir.path / FINAL, FINAL)


def _start(plan: OperatorPlan, log: Path) -> OperatorProcess:
    return OperatorProcess(plan.argv, worker_base_env({}) | plan.env, log, name="ppo")


def _in_bundle(python: Path, code: str, *args: str, payload: Any = None) -> Any:
    """What ``code`` prints last as JSON, run in the bundle with ``payload`` as JSON on its stdin."""
    result = subprocess.run(
        [str(python), "-c", code, *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _play(operator: OperatorProcess, env_id: str, seeds: list[int]) -> list[dict[str, Any]]:
    """One episode per seed, all at once (one slot each, every open slot in each request), stepped in
    gym_gui's own gymnasium: each episode's observations, the operator's actions and its return."""
    envs = [gym.make(env_id) for _ in seeds]
    episodes: list[dict[str, Any]] = []
    observations = {}
    for slot, (env, seed) in enumerate(zip(envs, seeds, strict=True)):
        operator.begin(slot, seed)
        observations[slot] = env.reset(seed=seed)[0]
        episodes.append({"observations": [], "actions": [], "return": 0.0})
    while observations:
        turns = [Turn(slot, obs) for slot, obs in observations.items()]
        decisions = operator.act(turns)
        for turn, decision in zip(turns, decisions, strict=True):
            episode = episodes[turn.slot]
            episode["observations"].append(np.asarray(turn.observation).tolist())
            episode["actions"].append(decision.action)
            obs, reward, terminated, truncated, _ = envs[turn.slot].step(
                np.asarray(decision.action, dtype=np.float32)
                if isinstance(decision.action, list)
                else decision.action
            )
            episode["return"] += float(reward)
            if terminated or truncated:
                operator.end(turn.slot)
                del observations[turn.slot]
            else:
                observations[turn.slot] = obs
    return episodes


ACT = """
import json, sys
import numpy as np
from gym_gui_cleanrl_worker.evaluate import load_policy
policy = load_policy(sys.argv[1], sys.argv[2], sys.argv[3])
print(json.dumps([[np.asarray(policy.act(obs)).tolist() for obs in episode] for episode in json.load(sys.stdin)]))
"""


def test_a_ppo_model_plays_cartpole_in_gym_guis_env_as_its_policy_does_two_episodes_at_once(
    cleanrl_daemon: tuple[DaemonClient, Home], runs: dict[str, str], cleanrl_python: Path, tmp_path: Path
) -> None:
    _client, home = cleanrl_daemon
    source = _source(home, runs["ppo"])
    operator = _start(_launcher(home).operator(source), tmp_path / "operator.log")
    try:
        card = operator.card
        assert (card.name, card.kind, card.source_run, card.env_ids) == (
            "ppo",
            "cleanrl",
            runs["ppo"],
            ("CartPole-v1",),
        )
        assert (card.observation, card.action) == (SpaceSpec("Box", shape=(4,)), SpaceSpec("Discrete", n=2))
        assert card.deterministic
        episodes = _play(operator, "CartPole-v1", [SEED, SEED + 1])
        # An observation the network cannot take is refused in words, and the operator goes on.
        with pytest.raises(OperatorError) as refused:
            operator.act([Turn(0, [0.1, 0.2])])
        assert str(refused.value) == (
            "ppo: ppo on CartPole-v1 expects Box(4,) observations; it was given an observation of shape (2,)"
        )
        assert operator.act([Turn(0, episodes[0]["observations"][0])])[0].action == episodes[0]["actions"][0]
    finally:
        operator.close()
    assert all(isinstance(action, int) for episode in episodes for action in episode["actions"])
    # The same model, loaded by the evaluation's loader, acts alike on every observation.
    policy_actions = _in_bundle(
        cleanrl_python,
        ACT,
        *(str(source.model), "CartPole-v1", "ppo"),
        payload=[episode["observations"] for episode in episodes],
    )
    assert [episode["actions"] for episode in episodes] == policy_actions
    # And the evaluation CLI, stepping the script's own env from the same seed, earns the same return.
    evaluation = subprocess.run(
        [
            str(cleanrl_python),
            "-m",
            "gym_gui_cleanrl_worker.evaluate",
            "--model",
            str(source.model),
            *("--algo", "ppo", "--env-id", "CartPole-v1"),
            "--episodes",
            "1",
            "--seed",
            str(SEED),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert evaluation.returncode == 0, evaluation.stderr
    assert json.loads(evaluation.stdout.splitlines()[-1])["mean_return"] == episodes[0]["return"]


# CleanRL's continuous PPO steps NormalizeObservation, then clips observations to ±10, and ClipAction:
# the operator does the same to gym_gui's raw observations, with the statistics saved in the model.
NORMALISED = """
import json, sys
import numpy as np, torch
from gym_gui_cleanrl_worker.evaluate import load_policy
policy = load_policy(sys.argv[1], "Pendulum-v1", "ppo_continuous_action")
rms = torch.load(sys.argv[1], weights_only=True)["env"]["obs_rms"]
observations = np.array(json.load(sys.stdin))
normalised = np.clip((observations - np.array(rms["mean"])) / np.sqrt(np.array(rms["var"]) + 1e-8), -10, 10)
space = policy.env.action_space
print(json.dumps([np.clip(policy.act(obs), space.low, space.high).tolist() for obs in normalised]))
"""


def test_a_continuous_ppo_model_normalises_raw_observations_with_its_saved_statistics(
    cleanrl_daemon: tuple[DaemonClient, Home], runs: dict[str, str], cleanrl_python: Path, tmp_path: Path
) -> None:
    _client, home = cleanrl_daemon
    source = _source(home, runs["continuous"])
    plan = _launcher(home).operator(source)
    assert (plan.card.observation, plan.card.action) == (
        SpaceSpec("Box", shape=(3,)),
        SpaceSpec("Box", shape=(1,)),
    )
    operator = _start(plan, tmp_path / "operator.log")
    try:
        assert (operator.card.observation, operator.card.action) == (plan.card.observation, plan.card.action)
        [episode] = _play(operator, "Pendulum-v1", [SEED])
    finally:
        operator.close()
    expected = _in_bundle(cleanrl_python, NORMALISED, str(source.model), payload=episode["observations"])
    assert len(episode["actions"]) == len(expected) == 200
    np.testing.assert_allclose(episode["actions"], expected, rtol=1e-5, atol=1e-6)
    # The statistics matter: the raw observations would have given other actions.
    raw = _in_bundle(
        cleanrl_python,
        ACT,
        *(str(source.model), "Pendulum-v1", "ppo_continuous_action"),
        payload=[episode["observations"]],
    )[0]
    assert not np.allclose(np.asarray(raw).ravel(), np.asarray(episode["actions"]).ravel())


def test_a_file_that_is_no_model_is_refused_with_the_loaders_message(
    cleanrl_daemon: tuple[DaemonClient, Home], runs: dict[str, str], tmp_path: Path
) -> None:
    _client, home = cleanrl_daemon
    garbage = tmp_path / "final.cleanrl_model"
    garbage.write_text("not a model at all\n")
    plan = _launcher(home).operator(_source(home, runs["ppo"], garbage))
    with pytest.raises(OperatorRefused) as refused:
        _start(plan, tmp_path / "operator.log")
    message = str(refused.value)
    assert message.startswith(f"ppo: cannot read model {garbage}: UnpicklingError"), message
    assert "\n" not in message


def test_the_plugins_card_says_what_the_model_acts_on_without_starting_it(
    cleanrl_daemon: tuple[DaemonClient, Home], runs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gym_gui_cleanrl_worker import interpreter

    client, home = cleanrl_daemon
    launcher = _launcher(home)
    source = _source(home, runs["ppo"])
    asked: list[list[str]] = []
    real_run = subprocess.run

    def counted(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        asked.append(list(args))  # the bundle's interpreter still answers: this only counts
        return real_run(args, **kwargs)

    monkeypatch.setattr(interpreter.subprocess, "run", counted)
    plan = launcher.operator(source)
    # One question to the bundle's env table, kept for the next card of a model on the same env.
    assert [args[1:] for args in asked] == [
        ["-m", "gym_gui_cleanrl_worker.describe", "--algo", "ppo", "--spaces", "CartPole-v1"]
    ]
    assert launcher.operator(source) == plan and len(asked) == 1
    assert _processes_mentioning(str(source.model)) == []
    assert plan.card == OperatorCard(
        name="ppo",
        kind="cleanrl",
        source_run=runs["ppo"],
        observation=SpaceSpec("Box", shape=(4,)),
        action=SpaceSpec("Discrete", n=2),
        env_ids=("CartPole-v1",),
    )
    assert plan.card.problem("FrozenLake-v1", SpaceSpec("Discrete", n=16), SpaceSpec("Discrete", n=4)) == (
        "ppo on CartPole-v1 expects Box(4,) observations; FrozenLake-v1 gives Discrete(16)"
    )
    python = str(worker_catalog().bundle_directory(Path(SHARED_BUNDLES)).python("cleanrl"))
    module = "gym_gui_cleanrl_worker.operator"
    # The script the model is loaded into and its env come from the run's config, not from the file.
    assert plan.argv == [
        *(python, "-m", module, "--model", str(source.model), "--source-run", runs["ppo"]),
        *("--algo", "ppo", "--env-id", "CartPole-v1"),
    ]
    # Atari scripts feed their networks stacked small grey frames: a raw Atari env cannot feed them.
    atari = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo_atari",
            "env_id": "BreakoutNoFrameskip-v4",
            "budget": {"timesteps": 1},
        }
    )
    card = launcher.operator(OperatorSource("an-atari-run", atari, source.model, FINAL)).card
    assert card.observation == SpaceSpec("Box", shape=(4, 84, 84))
    assert card.problem(
        "BreakoutNoFrameskip-v4", SpaceSpec("Box", shape=(210, 160, 3)), SpaceSpec("Discrete", n=4)
    ) == (
        "ppo_atari on BreakoutNoFrameskip-v4 expects Box(4, 84, 84) observations; "
        "BreakoutNoFrameskip-v4 gives Box(210, 160, 3)"
    )
    # What is no operator is refused, saying why.
    evaluation = client.evaluation_config(runs["ppo"], 1)
    with pytest.raises(
        ConfigError, match=f"run {runs['ppo']}-eval is a CleanRL evaluate run, not a training run"
    ):
        launcher.operator(OperatorSource(f"{runs['ppo']}-eval", evaluation, source.model, FINAL))
    with pytest.raises(ConfigError, match=f"run {runs['ppo']} saved no model for an operator to act with"):
        launcher.operator(OperatorSource(runs["ppo"], source.config, None, ""))
