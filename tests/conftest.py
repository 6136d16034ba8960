"""Suite-wide fixtures: every test runs against its own temporary GYM_GUI_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may touch the real user data directory.
    monkeypatch.setenv("GYM_GUI_HOME", str(tmp_path / "gym_gui_home"))
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
