"""The d4rl stand-in in the corl bundle: the run's dataset in D4RL's shapes, exactly as Minari holds it, and
D4RL's normalised score from the dataset's reference returns."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gym_gui_corl_worker.scripts import STANDIN
from gym_gui_corl_worker.transitions import DATASET_VAR, meta_of, write_transitions

from gym_gui.storage.home import Home
from gym_gui.workers import worker_catalog
from workers.corl_worker.tests.support import episodes_of, make_dataset

# What a script of the bundle reports of the stand-in: the arrays' digests and the scores it normalises.
PROBE = """
import hashlib, json, sys
import d4rl, gym
env = gym.make("Pendulum-v1")
data = d4rl.qlearning_dataset(env)
flat = env.get_dataset()
scores = [float(env.get_normalized_score(score)) for score in (-1200.0, -600.0, -130.0)]
answer = {
    "keys": sorted(data),
    "shapes": {k: list(v.shape) for k, v in data.items()},
    "digests": {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in data.items()},
    "same_flat": all((flat[k] == data[k]).all() for k in data),
    "scores": scores,
    "module": d4rl.get_normalized_score("Pendulum-v1", -600.0),
    "refs": [env.ref_min_score, env.ref_max_score],
    "infos": [d4rl.infos.REF_MIN_SCORE, d4rl.infos.REF_MAX_SCORE],
    "file": d4rl.__file__,
}
try:
    d4rl.qlearning_dataset(gym.make("MountainCarContinuous-v0"))
except Exception as exc:
    answer["other_env"] = str(exc)
print(json.dumps(answer))
"""


@pytest.fixture
def corl_python() -> Path:
    """The corl bundle's Python; the suite fails (never skips) when the bundle is missing."""
    bundles = worker_catalog().bundle_directory(Home().bundles_dir)
    status = bundles.status("corl")
    if not status.installed:
        pytest.fail(f"the corl bundle is needed by these tests: {status.reason}")
    return bundles.python("corl")


def probe(python: Path, transitions: Path) -> dict[str, Any]:
    result = subprocess.run(
        [str(python), "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", DATASET_VAR: str(transitions), "PYTHONPATH": str(STANDIN)},
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.splitlines()[-1]))


def digest(array: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@pytest.mark.parametrize("refs", [{}, {"ref_min_score": -1200.0, "ref_max_score": -130.0}])
def test_the_stand_in_gives_every_step_of_the_minari_dataset_and_its_normalised_score(
    home: Home, tmp_path: Path, corl_python: Path, refs: dict[str, float]
) -> None:
    dataset = make_dataset(home, "pendulum/probe-v0", "Pendulum-v1", 3, seed=11, **refs)
    transitions = tmp_path / "transitions.npz"
    meta = meta_of(
        "pendulum/probe-v0", "Pendulum-v1", refs.get("ref_min_score"), refs.get("ref_max_score"), ""
    )
    assert write_transitions(home.datasets_dir / "pendulum/probe-v0" / "data", transitions, meta) == 600

    answer = probe(corl_python, transitions)
    assert Path(answer["file"]).parent.parent == STANDIN  # gym_gui's d4rl, no other
    episodes = episodes_of(dataset)
    expected = {
        "observations": np.concatenate([e.observations[:-1] for e in episodes]).astype(np.float32),
        "next_observations": np.concatenate([e.observations[1:] for e in episodes]).astype(np.float32),
        "actions": np.concatenate([e.actions for e in episodes]).astype(np.float32),
        "rewards": np.concatenate([e.rewards for e in episodes]).astype(np.float32),
        "terminals": np.concatenate([e.terminations for e in episodes]).astype(bool),
        "timeouts": np.concatenate([e.truncations for e in episodes]).astype(bool),
    }
    assert answer["keys"] == sorted(expected)
    assert answer["digests"] == {name: digest(array) for name, array in expected.items()}
    assert answer["shapes"]["observations"] == [600, 3] and answer["shapes"]["actions"] == [600, 1]
    assert answer["same_flat"]
    if refs:  # D4RL's (score - min) / (max - min)
        assert answer["scores"] == pytest.approx([0.0, 600 / 1070, 1.0])
        assert answer["refs"] == [-1200.0, -130.0]
        assert answer["infos"] == [{"Pendulum-v1": -1200.0}, {"Pendulum-v1": -130.0}]
    else:  # the raw return / 100: CORL's "D4RL score" (× 100) reads as the return itself
        assert answer["scores"] == pytest.approx([-12.0, -6.0, -1.3])
        assert answer["refs"] == [None, None] and answer["infos"] == [{}, {}]
    assert answer["module"] == pytest.approx(answer["scores"][1])
    assert answer["other_env"] == (
        "the run's dataset 'pendulum/probe-v0' was recorded on Pendulum-v1, "
        "and the script asks for the data of MountainCarContinuous-v0"
    )
