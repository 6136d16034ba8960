"""The suite's root: its fixtures and hooks (tests/fixtures.py) apply under tests/ and every kind's workers/<kind>/tests/."""

from __future__ import annotations

pytest_plugins = ["tests.fixtures"]
