"""Nothing in a CleanRL model file chooses code to run: the script a model is loaded into is the
bundle's script of the algorithm gym_gui was told (the import's ``--algo``, the trained run's own
config), and an evaluation plays a run's model only as it was saved (its recorded sha256)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui
from workers.cleanrl_worker.tests.support import cleanrl_config

FINAL = "checkpoints/final.cleanrl_model"
# A model file's own metadata naming a script: the format keeps the path of the script it was trained
# with, which the loader once executed.
RENAME_SCRIPT = """
import sys, torch
model = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
model["script"] = sys.argv[2]
torch.save(model, sys.argv[3])
"""


@pytest.fixture(scope="module")
def trained(cleanrl_daemon: tuple[DaemonClient, Home]) -> str:
    """PPO on CartPole-v1, briefly trained."""
    client, _home = cleanrl_daemon
    record, _ = client.submit(
        cleanrl_config("ppo", "CartPole-v1", 512, params={"num-envs": 1, "num-steps": 256})
    )
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


def _hostile_model(home: Home, run_id: str, tmp_path: Path, target: Path) -> Path:
    """The run's model with its metadata naming a script of our own, which leaves a file when it runs;
    returns where that file would appear."""
    ran = tmp_path / "the-model-file-chose-this-code"
    script = tmp_path / "ppo.py"
    script.write_text(f"from pathlib import Path\nPath({str(ran)!r}).write_text('ran')\n")
    python = worker_catalog().bundle_directory(Path(SHARED_BUNDLES)).python("cleanrl")
    source = RunDir(home.run_dir(run_id)).path / FINAL
    subprocess.run(
        [str(python), "-c", RENAME_SCRIPT, str(source), str(script), str(target)], check=True, timeout=300
    )
    return ran


def test_an_imported_model_is_loaded_into_the_bundles_script_never_the_one_its_file_names(
    cleanrl_daemon: tuple[DaemonClient, Home], trained: str, tmp_path: Path
) -> None:
    client, home = cleanrl_daemon
    model = tmp_path / "from-elsewhere.cleanrl_model"
    ran = _hostile_model(home, trained, tmp_path, model)

    result = gym_gui("import-model", str(model), "--algo", "ppo", "--env", "CartPole-v1", home=home.root)
    assert not ran.exists(), "the import's load check ran the script the model file named"
    assert result.returncode == 0, result.stderr
    imported = next(run for run in client.list_runs() if run.run_id in result.stdout)

    played, _ = client.submit(client.evaluation_config(imported.run_id, 1, render_fps=0))
    final = client.wait_for_end(played.run_id, timeout=240)
    assert final.state is RunState.COMPLETED, final.reason
    assert not ran.exists(), "the evaluation ran the script the model file named"


def test_an_evaluation_refuses_a_model_changed_since_it_was_saved_and_runs_nothing(
    cleanrl_daemon: tuple[DaemonClient, Home], trained: str, tmp_path: Path
) -> None:
    client, home = cleanrl_daemon
    before = {run.run_id for run in client.list_runs()}
    model = RunDir(home.run_dir(trained)).path / FINAL
    saved = model.read_bytes()
    swapped = tmp_path / "swapped.cleanrl_model"
    ran = _hostile_model(home, trained, tmp_path, swapped)
    model.write_bytes(swapped.read_bytes())
    try:
        result = gym_gui("eval", trained, "--episodes", "1", "--render-fps", "0", home=home.root)
        assert_one_line_error(
            result,
            "field 'evaluation.checkpoint'",
            f"{FINAL} of run {trained} has changed since it was saved",
        )
        assert {run.run_id for run in client.list_runs()} == before
        assert not ran.exists()
    finally:
        model.write_bytes(saved)
    # As it was saved, it plays.
    result = gym_gui("eval", trained, "--episodes", "1", "--render-fps", "0", home=home.root)
    assert result.returncode == 0, result.stderr
