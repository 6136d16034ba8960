"""Every command line the README quotes runs exactly as written, so the README cannot drift from the CLI.

The command block under "The command line" is parsed; each `gym-gui …` line (alternatives such as
`install|list|check` expanded) must appear in SCRIPT below, which runs it against a temporary home
with RUN and FPS replaced by a real run of the kind the line is about. A README line missing from
SCRIPT, or a SCRIPT line no longer in the README, fails the test by name.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import assert_one_line_error, gym_gui, kill_run_workers, stop_daemon

README = Path(__file__).resolve().parents[2] / "README.md"
RUN_ID = re.compile(r"^run (\S+) ", re.M)


def readme_commands(heading: str = "The command line") -> list[str]:
    """The `gym-gui` lines of the first command block under the README's ``heading``, continuation
    lines joined, alternatives expanded."""
    section = README.read_text().split(f"## {heading}", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, f"README: no sh block under {heading!r}"
    block = re.sub(r"\\\n\s*", "", match.group(1))
    commands: list[str] = []
    for line in block.splitlines():
        command = line.split("  #", 1)[0].strip()
        if not command.startswith("gym-gui"):
            continue
        words = command.split()
        # One word may offer alternatives (`install|list|check`): each is a command of its own.
        forks = [i for i, word in enumerate(words) if "|" in word]
        assert len(forks) <= 1, f"README: more than one set of alternatives in {command!r}"
        if not forks:
            commands.append(" ".join(words))
            continue
        for choice in words[forks[0]].split("|"):
            commands.append(" ".join([*words[: forks[0]], choice, *words[forks[0] + 1 :]]))
    return commands


@dataclass(frozen=True)
class Step:
    command: str  # as the README writes it (alternatives expanded)
    run: str | None = None  # which run RUN stands for (several names: the RUNs in turn)
    code: int = 0  # the exit a user sees when it works as documented
    says: str = ""  # something its output must contain
    input: str | None = None


# In the order a user would meet them; RUN stands for the run named in `run`.
SCRIPT = [
    Step("gym-gui workers", says="CleanRL Worker"),
    Step("gym-gui envs --family atari", says="ALE/Breakout-v5"),
    # make test installed it in the app; the CleanRL bundle gets its extra.
    Step("gym-gui envs install atari", says="bundle cleanrl has extra atari"),
    Step("gym-gui schema", says='"env_id"'),
    Step("gym-gui bundles install cleanrl", says="cleanrl"),
    Step("gym-gui bundles list cleanrl", says="cleanrl"),
    Step("gym-gui bundles check cleanrl", says="ok"),
    Step("gym-gui algorithms", says="ppo"),
    Step("gym-gui algorithms --algo ppo", says="trains on here: CartPole-v0, CartPole-v1"),
    Step(
        "gym-gui train --worker cleanrl --algo ppo --env CartPole-v1 --total-timesteps 20000 "
        "--param learning-rate=3e-4 --checkpoint-every 5000",
        says="COMPLETED",
    ),
    Step("gym-gui eval RUN --episodes 5", run="ppo", says="COMPLETED"),
    Step(
        "gym-gui train --worker cleanrl --algo ppo --env CartPole-v1 --total-timesteps 10000 --warm-start RUN",
        run="ppo",
        says="COMPLETED",
    ),
    Step("gym-gui models", says="final.cleanrl_model"),
    Step("gym-gui operators --env CartPole-v1", says="usable"),
    Step(
        "gym-gui arena RUN random --env CartPole-v1 --episodes 20 --seed 0 --json batch.json",
        run="ppo",
        says="mean return ± 95 % CI",
    ),
    Step(
        "gym-gui arena --env connect_four_v3 --seat player_0=random --seat player_1=random --episodes 20 --seed 0 --swap",
        says="win rate (95 % CI)",
    ),
    Step(
        "gym-gui compare RUN RUN --metric charts/episodic_return --plot returns.png",
        run="ppo warm",
        says="plot written to returns.png",
    ),
    Step(
        "gym-gui train --worker cleanrl --algo dqn --env CartPole-v1 --total-timesteps 20000 --dry-run",
        says="dqn",
    ),
    # The README's ppo run tracked nothing with W&B: one line saying there is nothing to upload.
    Step("gym-gui wandb sync RUN", run="ppo", code=1, says="no offline W&B data"),
    Step("gym-gui train --worker random --env FrozenLake-v1 --episodes 200", says="COMPLETED"),
    Step(
        "gym-gui train --config run.json --seed 3 --detach", says="CartPole-v1__random__3__"
    ),  # the flag won
    Step("gym-gui runs", run="frozenlake", says="FrozenLake-v1"),
    Step("gym-gui show RUN", run="frozenlake", says="COMPLETED"),
    Step("gym-gui watch RUN", run="frozenlake", says="COMPLETED"),
    Step("gym-gui rerun RUN", run="frozenlake", says="identical: 200 episodic returns match"),
    Step("gym-gui dataset create frozenlake/random-v0 --from RUN", run="frozenlake", says="200 episodes"),
    Step(
        "gym-gui eval RUN --episodes 20 --dataset cartpole/ppo-eps30-v0 --epsilon 0.3",
        run="ppo",
        says="dataset cartpole/ppo-eps30-v0: 20 episodes",
    ),
    Step("gym-gui dataset list", says="frozenlake/random-v0"),
    Step("gym-gui dataset show frozenlake/random-v0", says="sha256"),
    Step(
        "gym-gui train --worker d3rlpy --algo discrete_bc --dataset cartpole/ppo-eps30-v0 --steps 2000 "
        "--param eval_episodes=2",
        says="COMPLETED",
    ),
    Step("gym-gui dataset delete cartpole/ppo-eps30-v0", says="deleted"),
    Step("gym-gui pause RUN", run="long_random", says="PAUSED"),
    Step("gym-gui resume RUN", run="long_random", says="RUNNING"),
    Step("gym-gui render-rate RUN FPS", run="long_random"),
    Step("gym-gui checkpoint RUN", run="long_cleanrl", says="checkpoint"),
    Step("gym-gui cancel RUN", run="long_cleanrl"),
    Step("gym-gui archive RUN", run="frozenlake"),
    Step("gym-gui delete RUN", run="detached", input="y\n", says="deleted"),
    Step("gym-gui export RUN -o run.tar.gz", run="frozenlake"),
    Step("gym-gui daemon start"),
    Step("gym-gui daemon status", says="address"),
    Step("gym-gui daemon stop", says="stopped"),
]

# Runs the README's lines are about that no README line starts: long ones, to be live when asked.
SETUP = {
    "long_random": [
        "train", "--worker", "random", "--env", "CartPole-v1", "--total-timesteps", "50000000",
        "--render-fps", "10", "--detach",
    ],
    "long_cleanrl": [
        "train", "--worker", "cleanrl", "--algo", "ppo", "--env", "CartPole-v1",
        "--total-timesteps", "5000000", "--detach",
    ],
}  # fmt: skip


def test_the_script_covers_every_readme_command_line() -> None:
    readme = readme_commands()
    scripted = [step.command for step in SCRIPT]
    assert [c for c in readme if c not in scripted] == [], "README lines this test does not run"
    assert [c for c in scripted if c not in readme] == [], "lines this test runs that the README lost"


def _arguments(step: Step, runs: dict[str, str]) -> list[str]:
    """A README line's arguments as the test runs them: each RUN the run ``step.run`` names (several
    names: one for each RUN in turn), FPS a frame rate."""
    names = (step.run or "").split()
    arguments: list[str] = []
    for arg in shlex.split(step.command)[1:]:
        if arg == "RUN" and names:
            arg = runs[names[0] if len(names) == 1 else names.pop(0)]
        elif arg == "FPS":
            arg = "5"
        arguments.append(arg)
    return arguments


def _run_json(tmp_path: Path) -> None:
    """The run config the README shows, saved as the run.json its command line names."""
    after = README.read_text().split("A run config", 1)[1]
    match = re.search(r"```json\n(.*?)```", after, re.S)
    assert match, "README: no JSON block after 'A run config'"
    (tmp_path / "run.json").write_text(match.group(1))
    json.loads(match.group(1))


# The whole README trains two PPO runs, evaluates, writes datasets and follows long runs: on a busy
# machine (the suite's two processes beside other work) more than the suite's default 300 s guard.
@pytest.mark.timeout(900)
@pytest.mark.usefixtures("own_cleanrl_bundle")
def test_every_readme_command_runs_as_written(home: Home, tmp_path: Path) -> None:
    _run_json(tmp_path)
    runs: dict[str, str] = {}
    client = DaemonClient.connect(home.root)
    try:
        for step in SCRIPT:
            if step.run in SETUP and step.run not in runs:
                started = gym_gui(*SETUP[step.run], home=home.root, cwd=tmp_path)
                assert started.returncode == 0, started.stderr
                runs[step.run] = RUN_ID.findall(started.stdout)[0]
                running = client.wait_for_state(runs[step.run], RunState.RUNNING, timeout=300)
                assert running.state is RunState.RUNNING, running
            if step.command == "gym-gui daemon start":
                # Workers outlive a stopped daemon: the long run ends before the daemon lines.
                client.cancel(runs["long_random"])
                assert client.wait_for_end(runs["long_random"], timeout=120).state is RunState.CANCELLED
            args = _arguments(step, runs)
            if step.run == "detached":
                # Deleting needs a run that has ended; the detached one is short.
                client.wait_for_end(runs["detached"], timeout=300)
            result = gym_gui(*args, home=home.root, cwd=tmp_path, input=step.input, timeout=600)
            if step.code == 1:
                assert_one_line_error(result, step.says)
                continue
            assert result.returncode == step.code, f"{step.command}\n{result.stdout}\n{result.stderr}"
            assert step.says in result.stdout, f"{step.command}: {step.says!r} not in\n{result.stdout}"
            if step.command == "gym-gui cancel RUN":
                assert client.wait_for_end(runs["long_cleanrl"], timeout=120).state is RunState.CANCELLED
            made = RUN_ID.findall(result.stdout)
            if "--warm-start RUN" in step.command:
                runs["warm"] = made[0]
            elif step.command.startswith("gym-gui train --worker cleanrl --algo ppo"):
                runs["ppo"] = made[0]
            elif "FrozenLake-v1 --episodes 200" in step.command:
                runs["frozenlake"] = made[0]
            elif "--config run.json" in step.command:
                runs["detached"] = made[0]
        assert (tmp_path / "run.tar.gz").stat().st_size > 0
        assert len(json.loads((tmp_path / "batch.json").read_text())["operators"][0]["episodes"]) == 20
        assert (tmp_path / "returns.png").read_bytes().startswith(b"\x89PNG")
        assert Home(home.root).run_dir(runs["frozenlake"]).is_dir()
    finally:
        kill_run_workers(home)
        stop_daemon(client)
