"""Fixtures for the CleanRL worker tests: the real cleanrl bundle's interpreter (`make test` installs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_gui.storage.home import Home
from gym_gui.workers import BundleDirectory


@pytest.fixture
def cleanrl_python() -> Path:
    """The cleanrl bundle's Python; the suite fails (never skips) when the bundle is missing."""
    manager = BundleDirectory(Home().bundles_dir)
    status = manager.status("cleanrl")
    if not status.installed:
        pytest.fail(f"the cleanrl bundle is needed by these tests: {status.reason}")
    return manager.python("cleanrl")
