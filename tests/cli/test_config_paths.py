"""Paths in a run config: the daemon has its own working directory, so only absolute paths reach it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_gui.cli import build_config
from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError


def test_a_relative_scripts_dir_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"source\.scripts_dir.*absolute path.*'my_cleanrl'"):
        parse_run_config(
            {
                "worker": "cleanrl",
                "env_id": "CartPole-v1",
                "budget": {"timesteps": 1000},
                "source": {"scripts_dir": "my_cleanrl"},
            }
        )


def test_paths_in_a_config_file_are_relative_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
                "source": {"scripts_dir": "my_cleanrl", "python": "venv/bin/python"},
            }
        )
    )
    monkeypatch.chdir(tmp_path)  # somewhere else than the file
    config = build_config(Path("project/run.json"), {}, [])
    assert config.source.scripts_dir == str(project / "my_cleanrl")
    assert config.source.python == str(project / "venv/bin/python")
    # A flag wins over the file, and the CLI makes it absolute where it was typed.
    flagged = build_config(file, {"source.scripts_dir": str(tmp_path / "other")}, [])
    assert flagged.source.scripts_dir == str(tmp_path / "other")
