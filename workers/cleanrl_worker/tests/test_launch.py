"""Real CleanRL runs through the in-bundle launcher and evaluator (bundle interpreter as a subprocess)."""

from __future__ import annotations

import functools
import json
import math
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

MARKER = "[gym_gui] "
STARTUP_TIMEOUT = 60.0
RUN_TIMEOUT = 120.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    # One intra-op thread: on a shared 2-core machine torch's thread pool makes these tiny nets 5x slower.
    env["OMP_NUM_THREADS"] = "1"
    env["SDL_VIDEODRIVER"] = "dummy"
    env["WANDB_MODE"] = "disabled"
    return env


@functools.cache
def _script(python: Path, name: str) -> Path:
    """Path of a script of the bundle's cleanrl package (asked of the bundle: the app venv has no cleanrl)."""
    # find_spec locates the file without importing the script (which would pull in torch).
    out = subprocess.run(
        [str(python), "-c", f"import importlib.util as u; print(u.find_spec('cleanrl.{name}').origin)"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=STARTUP_TIMEOUT,
        check=False,
    )
    if out.returncode != 0:
        pytest.fail(f"cleanrl.{name} is not importable in the bundle: {out.stderr[-2000:]}")
    return Path(out.stdout.strip().splitlines()[-1])


def _launch_cmd(python: Path, script: Path, run_dir: Path, flags: list[str], *extra: str) -> list[str]:
    return [
        str(python),
        "-m",
        "gym_gui_cleanrl_worker.launch",
        "--script",
        str(script),
        "--run-dir",
        str(run_dir),
        *extra,
        "--",
        "--cuda",
        "False",
        *flags,
    ]


def _launch(
    python: Path, name: str, run_dir: Path, flags: list[str], *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _launch_cmd(python, _script(python, name), run_dir, flags, *extra),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_TIMEOUT,
        check=False,
    )


def _markers(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line[len(MARKER) :]) for line in stdout.splitlines() if line.startswith(MARKER)]


def _event_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("runs/*/events.out.tfevents*"))


def _assert_completed(proc: subprocess.CompletedProcess[str], run_dir: Path) -> list[dict[str, object]]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    markers = _markers(proc.stdout)
    assert markers[0]["started"] is True and isinstance(markers[0]["pid"], int)
    final = [m for m in markers if m.get("final")]
    assert final == [
        {"checkpoint": "checkpoints/final.cleanrl_model", "step": final[0]["step"], "final": True}
    ]
    assert (run_dir / "checkpoints" / "final.cleanrl_model").is_file()
    assert _event_files(run_dir), f"no TensorBoard event file under {run_dir}/runs"
    return markers


def _evaluate_in_bundle(python: Path, model: Path, env_id: str, algo: str, episodes: int = 1) -> list[float]:
    """Library use, as the worker does: load_policy + play_episodes with rendering and an on_step callback."""
    code = (
        "import json, sys\n"
        "from gym_gui_cleanrl_worker.evaluate import load_policy, play_episodes\n"
        "policy = load_policy(sys.argv[1], sys.argv[3], sys.argv[4])\n"
        "steps, frames = [], []\n"
        "def on_step(ep, step, obs, action, reward, term, trunc, info, frame):\n"
        "    steps.append((ep, step, bool(term or trunc)))\n"
        "    if frame is not None: frames.append(frame.shape)\n"
        "returns = play_episodes(policy, int(sys.argv[2]), 7, on_step, render_fps=1e9)\n"
        "policy.close()\n"
        "print(json.dumps({'returns': returns, 'steps': len(steps), 'ends': sum(s[2] for s in steps),\n"
        "                  'frame': list(frames[0]) if frames else None}))\n"
    )
    out = subprocess.run(
        [str(python), "-c", code, str(model), str(episodes), env_id, algo],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ends"] == episodes and result["steps"] >= episodes
    assert result["frame"] is not None and result["frame"][2] == 3, "no rgb frame was rendered"
    returns = result["returns"]
    assert len(returns) == episodes and all(math.isfinite(r) for r in returns)
    return returns


def test_ppo_trains_checkpoints_and_evaluates(cleanrl_python: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "ppo"
    proc = _launch(
        cleanrl_python,
        "ppo",
        run_dir,
        ["--env-id", "CartPole-v1", "--total-timesteps", "2048"],
        "--checkpoint-every",
        "512",
    )
    markers = _assert_completed(proc, run_dir)
    assert markers[-1]["step"] == 2048
    periodic = [m["step"] for m in markers if "checkpoint" in m and not m.get("final")]
    assert periodic == [512, 1024, 1536, 2048]
    for step in periodic:
        assert (run_dir / "checkpoints" / f"step_{step}.cleanrl_model").is_file()
    # The script's own stdout is passed through untouched for the worker to parse.
    assert "SPS:" in proc.stdout and "episodic_return=" in proc.stdout

    out = subprocess.run(
        [
            str(cleanrl_python),
            "-m",
            "gym_gui_cleanrl_worker.evaluate",
            "--model",
            str(run_dir / "checkpoints" / "final.cleanrl_model"),
            *("--algo", "ppo", "--env-id", "CartPole-v1"),
            "--episodes",
            "2",
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    episodes = [line for line in lines if "episode" in line]
    assert [e["episode"] for e in episodes] == [0, 1]
    assert all(math.isfinite(e["return"]) and e["length"] >= 1 for e in episodes)


@pytest.mark.parametrize(
    ("algo", "flags"),
    [
        # dqn/ddpg use gymnasium; c51/sac hand old gym spaces to SB3's ReplayBuffer and need compat.
        (
            "dqn",
            [
                "--env-id",
                "CartPole-v1",
                "--total-timesteps",
                "1500",
                "--learning-starts",
                "200",
                "--buffer-size",
                "1000",
            ],
        ),
        (
            "c51",
            [
                "--env-id",
                "CartPole-v1",
                "--total-timesteps",
                "1000",
                "--learning-starts",
                "200",
                "--buffer-size",
                "1000",
            ],
        ),
        (
            "sac_continuous_action",
            [
                "--env-id",
                "Pendulum-v1",
                "--total-timesteps",
                "600",
                "--learning-starts",
                "200",
                "--batch-size",
                "32",
            ],
        ),
        (
            "ppo_continuous_action",
            ["--env-id", "Pendulum-v1", "--total-timesteps", "512", "--num-steps", "256"],
        ),
    ],
)
def test_script_runs_and_its_model_plays(
    cleanrl_python: Path, tmp_path: Path, algo: str, flags: list[str]
) -> None:
    run_dir = tmp_path / algo
    proc = _launch(cleanrl_python, algo, run_dir, flags)
    _assert_completed(proc, run_dir)
    assert "not supported" not in proc.stderr
    _evaluate_in_bundle(cleanrl_python, run_dir / "checkpoints" / "final.cleanrl_model", flags[1], algo)


class _Lines:
    """Reads a process's stdout on a thread so the test can wait for a line with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)

    def wait_line(self, predicate: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if predicate(line):
                return line
        pytest.fail(f"no matching line within {timeout}s; stdout so far: {self.seen[-20:]}")

    def wait_marker(self, predicate: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        line = self.wait_line(
            lambda text: text.startswith(MARKER) and predicate(json.loads(text[len(MARKER) :])),
            timeout,
        )
        return json.loads(line[len(MARKER) :])


def _wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)  # a poll interval, not the wait itself
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


@dataclass
class _LongRun:
    proc: subprocess.Popen[str]
    lines: _Lines
    run_dir: Path
    stderr: Path


@pytest.fixture
def long_ppo(cleanrl_python: Path, tmp_path: Path) -> Iterator[_LongRun]:
    run_dir = tmp_path / "long"
    stderr = tmp_path / "long.stderr"
    # Small rollouts so scalars (and so requested checkpoints) come several times a second.
    flags = [
        "--env-id",
        "CartPole-v1",
        "--total-timesteps",
        "50000000",
        "--num-envs",
        "1",
        "--num-steps",
        "64",
    ]
    with stderr.open("w") as err:  # a file, not a pipe nobody drains
        proc = subprocess.Popen(
            _launch_cmd(cleanrl_python, _script(cleanrl_python, "ppo"), run_dir, flags),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=_env(),
        )
    try:
        yield _LongRun(proc, _Lines(proc.stdout), run_dir, stderr)  # type: ignore[arg-type]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_sigusr1_checkpoints_and_sigterm_stops_keeping_model_and_metrics(long_ppo: _LongRun) -> None:
    proc, lines, run_dir = long_ppo.proc, long_ppo.lines, long_ppo.run_dir
    started = lines.wait_marker(lambda m: bool(m.get("started")), STARTUP_TIMEOUT)
    assert started["pid"] == proc.pid
    _wait_for(lambda: _event_files(run_dir), STARTUP_TIMEOUT, "the first TensorBoard event file")
    # ppo prints SPS right after logging an update's losses: from here on there are metrics to keep.
    lines.wait_line(lambda text: text.startswith("SPS:"), STARTUP_TIMEOUT)
    # Live: the losses reach the event file while training runs, not only when the writer is closed.
    _wait_for(
        lambda: b"losses/value_loss" in _event_files(run_dir)[0].read_bytes(), 20, "losses in the event file"
    )

    proc.send_signal(signal.SIGUSR1)
    requested = lines.wait_marker(lambda m: bool(m.get("requested")), 30)
    assert (run_dir / requested["checkpoint"]).is_file()

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143, long_ppo.stderr.read_text()[-3000:]
    interrupted = lines.wait_marker(lambda m: bool(m.get("interrupted")), 10)
    assert interrupted["checkpoint"] == "checkpoints/interrupted.cleanrl_model"
    assert interrupted["step"] >= requested["step"]
    assert (run_dir / "checkpoints" / "interrupted.cleanrl_model").stat().st_size > 0
    # The writer was closed on the way out: the scalars logged so far are in the event file.
    events = _event_files(run_dir)[0].read_bytes()
    assert b"charts/episodic_return" in events and b"losses/value_loss" in events


def test_rejected_flag_fails_with_argparse_error(cleanrl_python: Path, tmp_path: Path) -> None:
    proc = _launch(cleanrl_python, "ppo", tmp_path / "bad_flag", ["--no-such-flag", "1"])
    assert proc.returncode == 2
    assert "ppo.py: error: unrecognized arguments: --no-such-flag 1" in proc.stderr
    assert not (tmp_path / "bad_flag" / "checkpoints").exists()


def test_unknown_env_id_fails_with_gym_message(cleanrl_python: Path, tmp_path: Path) -> None:
    proc = _launch(
        cleanrl_python, "ppo", tmp_path / "bad_env", ["--env-id", "NoSuchEnv-v9", "--total-timesteps", "512"]
    )
    assert proc.returncode != 0
    assert "Environment `NoSuchEnv` doesn't exist" in proc.stderr
    assert not (tmp_path / "bad_env" / "checkpoints").exists()


TOY_SCRIPT = """
import argparse, json, os, sys
import torch
from torch.utils.tensorboard import SummaryWriter

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=1)
parser.add_argument("--cuda", default="False")
args = parser.parse_args()
writer = SummaryWriter("runs/toy")
net = torch.nn.Linear(2, 1)
target_net = torch.nn.Linear(2, 1)
for global_step in range(args.n):
    writer.add_scalar("toy/value", float(global_step), global_step)
print(json.dumps({"name": __name__, "file": __file__, "cwd": os.getcwd(), "argv": sys.argv[1:],
                  "flush_secs": writer.flush_secs}))
writer.close()
"""


def test_script_runs_as_main_in_run_dir_with_periodic_checkpoints(
    cleanrl_python: Path, tmp_path: Path
) -> None:
    script = tmp_path / "toy.py"
    script.write_text(TOY_SCRIPT)
    run_dir = tmp_path / "toy_run"
    proc = subprocess.run(
        _launch_cmd(cleanrl_python, script, run_dir, ["--n", "35"], "--checkpoint-every", "10"),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith('{"name"')))
    assert report == {
        "name": "__main__",
        "file": str(script),
        "cwd": str(run_dir),
        "argv": ["--cuda", "False", "--n", "35"],
        "flush_secs": 2,  # torch's default of 120 s would keep the worker's tailing minutes behind
    }
    markers = [m for m in _markers(proc.stdout) if "checkpoint" in m]
    assert [(m["checkpoint"], m["step"]) for m in markers] == [
        ("checkpoints/step_10.cleanrl_model", 10),
        ("checkpoints/step_20.cleanrl_model", 20),
        ("checkpoints/step_30.cleanrl_model", 30),
        ("checkpoints/final.cleanrl_model", 34),
    ]
    code = (
        "import json, sys, torch\n"
        "m = torch.load(sys.argv[1], weights_only=True)\n"
        "print(json.dumps({k: m[k] for k in ('format', 'algo', 'script', 'global_step', 'args')}\n"
        "                 | {'modules': {n: v['class'] for n, v in m['modules'].items()},\n"
        "                    'keys': sorted(m['modules']['net']['state_dict'])}))\n"
    )
    out = subprocess.run(
        [str(cleanrl_python), "-c", code, str(run_dir / "checkpoints" / "final.cleanrl_model")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == {
        "format": 1,
        "algo": "toy",
        "script": str(script),
        "global_step": 34,
        "args": {"n": 35, "cuda": "False"},
        "modules": {"net": "Linear"},  # target copies are not saved
        "keys": ["bias", "weight"],
    }


def test_compat_lets_sb3_buffers_take_old_gym_spaces(cleanrl_python: Path) -> None:
    code = (
        "import sys\n"
        "from gym_gui_cleanrl_worker import compat\n"
        "compat.install(); compat.install()  # idempotent\n"
        "assert 'stable_baselines3' not in sys.modules  # patched on import, not imported eagerly\n"
        "import gym, numpy as np\n"
        "from gymnasium import spaces as gs\n"
        "from stable_baselines3.common.buffers import ReplayBuffer, DictReplayBuffer\n"
        "compat.install()\n"
        "box = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)\n"
        "for act in (gym.spaces.Discrete(4), gym.spaces.MultiDiscrete([2, 3]), gym.spaces.MultiBinary(5), box):\n"
        "    rb = ReplayBuffer(16, box, act, 'cpu', handle_timeout_termination=True)\n"
        "    assert isinstance(rb.observation_space, gs.Box) and type(rb.action_space).__module__.startswith('gymnasium')\n"
        "# c51_atari asks for both, which SB3 refuses: the memory saving is kept, timeouts not handled.\n"
        "rb = ReplayBuffer(16, box, box, 'cpu', optimize_memory_usage=True, handle_timeout_termination=True)\n"
        "assert rb.optimize_memory_usage and not rb.handle_timeout_termination\n"
        "obs = gym.spaces.Dict({'a': box, 'b': gym.spaces.Discrete(2)})\n"
        "drb = DictReplayBuffer(16, observation_space=obs, action_space=gym.spaces.Discrete(2))\n"
        "assert isinstance(drb.observation_space, gs.Dict) and isinstance(drb.observation_space['b'], gs.Discrete)\n"
        "t = compat.to_gymnasium_space(gym.spaces.Tuple((box, gym.spaces.Discrete(3, start=1))))\n"
        "assert isinstance(t, gs.Tuple) and t[1].start == 1 and t[0].dtype == np.float32\n"
        "import stable_baselines3.common.buffers as b\n"
        "assert not hasattr(b.ReplayBuffer.__init__.__wrapped__, '__gym_gui_compat__')  # wrapped once\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [str(cleanrl_python), "-c", code],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
