"""Suite-wide fixtures: every test runs against its own temporary GYM_GUI_HOME."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# One pre-installed bundles directory (`make bundles` with GYM_GUI_BUNDLES set, as `make test` does)
# shared by every temporary home: building the cleanrl bundle per test would take minutes each.
SHARED_BUNDLES = os.environ.get("GYM_GUI_BUNDLES") or str(REPO / ".bundles")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may touch the real user data directory.
    monkeypatch.setenv("GYM_GUI_HOME", str(tmp_path / "gym_gui_home"))
    monkeypatch.setenv("GYM_GUI_BUNDLES", SHARED_BUNDLES)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    # Two cores run the tests, the daemon and a worker at once: torch's own threads only fight them.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
