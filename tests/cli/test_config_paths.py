"""Paths in a run config: the daemon has its own working directory, so only absolute paths reach it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_gui.cli.config import build_config
from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.storage.home import Home
from gym_gui.workers import LaunchContext, worker_catalog


def test_a_relative_scripts_dir_is_refused_naming_the_field(home: Home) -> None:
    launcher = (
        worker_catalog()
        .plugin("cleanrl")
        .launcher(LaunchContext(home, worker_catalog().bundle_directory(home.bundles_dir)))
    )
    assert launcher is not None
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "budget": {"timesteps": 1000},
            "params": {"scripts_dir": "my_cleanrl"},
        }
    )
    with pytest.raises(ConfigError, match=r"params\.scripts_dir.*absolute path.*'my_cleanrl'"):
        launcher.validate(config)
    # Written before it was a parameter, it is the same parameter.
    legacy = parse_run_config(
        {**config.model_dump(mode="json"), "params": {}, "source": {"scripts_dir": "x"}}
    )
    assert legacy.params == {"scripts_dir": "x"}
    with pytest.raises(ConfigError, match=r"params\.python.*control character"):
        launcher.validate(legacy.model_copy(update={"params": {"python": "/bin/py\x00thon"}}))


@pytest.mark.parametrize("section", ["params", "source"])
def test_paths_in_a_config_file_are_relative_to_the_file(
    section: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "my_cleanrl").mkdir(parents=True)
    file = project / "run.json"
    file.write_text(
        json.dumps(
            {
                "worker": "cleanrl",
                "env_id": "CartPole-v1",
                "algorithm": "ppo",
                "budget": {"timesteps": 1000},
                # "source": where a config written before they were parameters keeps them.
                section: {"scripts_dir": "my_cleanrl", "python": "venv/bin/python"},
            }
        )
    )
    monkeypatch.chdir(tmp_path)  # somewhere else than the file
    config = build_config(Path("project/run.json"), {}, [])
    assert config.params == {
        "scripts_dir": str(project / "my_cleanrl"),
        "python": str(project / "venv/bin/python"),
    }
    # A flag wins over the file, and the CLI makes it absolute where it was typed.
    flagged = build_config(file, {"params.scripts_dir": str(tmp_path / "other")}, [])
    assert flagged.params["scripts_dir"] == str(tmp_path / "other")
