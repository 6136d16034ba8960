"""The home directory layout, its defaults and run-id checks."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs
import pytest

from gym_gui.core.errors import InvalidRunId
from gym_gui.storage.home import Home


def test_root_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GYM_GUI_HOME", str(tmp_path / "from_env"))
    assert Home().root == (tmp_path / "from_env").resolve()


def test_root_defaults_to_platform_user_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GYM_GUI_HOME", raising=False)
    assert Home().root == Path(platformdirs.user_data_dir("gym_gui")).resolve()


def test_explicit_root_wins_over_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GYM_GUI_HOME", str(tmp_path / "from_env"))
    assert Home(tmp_path / "explicit").root == (tmp_path / "explicit").resolve()


def test_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `make test` shares one bundles dir across homes; this checks a home's own.
    monkeypatch.delenv("GYM_GUI_BUNDLES", raising=False)
    home = Home(tmp_path)
    root = tmp_path.resolve()
    assert home.runs_dir == root / "runs"
    assert home.registry_path == root / "registry.sqlite"
    assert home.daemon_json == root / "daemon.json"
    assert home.daemon_log == root / "daemon.log"
    assert home.daemon_lock == root / "daemon.lock"
    assert home.bundles_dir == root / "bundles"
    assert home.run_dir("CartPole-v1__random__1__17") == root / "runs" / "CartPole-v1__random__1__17"


def test_construction_creates_nothing(tmp_path: Path) -> None:
    Home(tmp_path / "h")
    assert not (tmp_path / "h").exists()


def test_ensure_creates_private_root_and_subdirectories(tmp_path: Path) -> None:
    home = Home(tmp_path / "a" / "h").ensure()
    assert stat.S_IMODE(os.stat(home.root).st_mode) == 0o700
    assert home.runs_dir.is_dir()
    assert home.bundles_dir.is_dir()
    assert home.ensure() == home  # idempotent


@pytest.mark.parametrize(
    "bad", ["", ".", "..", "../x", "a/b", "a\\b", ".hidden", "-x", "a b", "x" * 201, "é", "a\x00b"]
)
def test_run_dir_rejects_unsafe_ids(home: Home, bad: str) -> None:
    with pytest.raises(InvalidRunId):
        home.run_dir(bad)


def test_run_dir_rejects_a_link_out_of_runs(home: Home, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (home.runs_dir / "escape").symlink_to(outside)
    with pytest.raises(InvalidRunId, match="outside the runs directory"):
        home.run_dir("escape")


def test_a_home_has_one_id_made_on_first_use_and_kept(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    assert home.known_home_id() is None and not home.root.exists()  # looking makes nothing
    made = home.home_id
    assert made == Home(tmp_path / "h").home_id == Home(tmp_path / "h").known_home_id()
    assert made.rsplit("-", 1)[0] and len(made.rsplit("-", 1)[1]) == 8
    assert Home(tmp_path / "other").home_id != made
    home.home_id_path.write_text("../not an id\n")  # a damaged file is replaced, never used
    assert home.home_id != "../not an id" and home.home_id == home.home_id_path.read_text().strip()
