"""The picker's Install action: a family not installed here is installed from the window (its package
into gym_gui's environment, with a progress bar), then listed; a failed install says pip's error and
keeps nothing."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.envs import catalog
from gym_gui.ui.control_panel import EnvPicker
from tests.envs.test_families import DOC, ENV_MODULE
from tests.support import on_sys_path, plugin_distribution

FAMILY_MODULE = """\
from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

FAMILY = EnvFamily(
    name="tp_lakes",
    title="Third-party lakes",
    import_module="tp_lakes_env",
    entries=(
        env_entry_of(
            "TpLake-v0", "tp_lakes", "A tiny lake", RenderKind.GRID, realtime=False,
            keys=(KeyBinding("Left", 0, "move left"),),
        ),
    ),
    packages=({wheel!r},),
    docs="tp_lakes",
)
MISSING = EnvFamily(
    name="tp_missing",
    title="Missing",
    import_module="gym_gui_no_such_module",
    packages=("gym-gui-no-such-distribution==9.9.9",),
)
"""


def wheel(root: Path) -> Path:
    """A real wheel of the module that registers TpLake-v0 (pip installs it without an index)."""
    root.mkdir(parents=True, exist_ok=True)
    info = "tp_lakes_env-1.0.dist-info"
    files = {
        "tp_lakes_env.py": ENV_MODULE,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: tp-lakes-env\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: gym_gui tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip("=")

    record = "".join(f"{name},sha256={digest(text)},{len(text.encode())}\n" for name, text in files.items())
    path = root / "tp_lakes_env-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, f"{info}/RECORD": record + f"{info}/RECORD,,\n"}.items():
            archive.writestr(name, text)
    return path


@pytest.fixture
def lakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The tp_lakes and tp_missing families installed as plugins; what installing them added to gym_gui's
    environment is removed afterwards."""
    module = FAMILY_MODULE.format(wheel=str(wheel(tmp_path / "wheels")))
    entry_points = {"tp_lakes": "tp_lakes:FAMILY", "tp_missing": "tp_lakes:MISSING"}
    files = {"tp_lakes/__init__.py": module, "tp_lakes/tplake-v0.md": DOC}
    site = plugin_distribution(
        tmp_path / "site", "tp-families", catalog.ENTRY_POINT_GROUP, entry_points, files
    )
    on_sys_path(monkeypatch, site)
    catalog.families.cache_clear()
    try:
        yield
    finally:
        subprocess.run(
            [sys.executable, "-m", "pip", "uninstall", "--yes", "tp-lakes-env"], capture_output=True
        )
        for name in ("tp_lakes", "tp_missing"):
            for suffix in (".txt", ".log", ".lock"):
                (catalog.records_dir() / f"{name}{suffix}").unlink(missing_ok=True)
        sys.modules.pop("tp_lakes_env", None)
        catalog.forget_installed()
        catalog.families.cache_clear()


def lines(picker: EnvPicker) -> list[str]:
    return [picker.combo.itemText(row) for row in range(picker.combo.count())]


@pytest.mark.usefixtures("lakes")
def test_install_from_the_picker_lists_the_familys_envs(qtbot: QtBot) -> None:
    picker = EnvPicker()
    qtbot.addWidget(picker)
    assert "not installed: install it with `gym-gui envs install tp_lakes`" in lines(picker)
    assert "TpLake-v0" not in lines(picker)
    installer = picker.installer
    assert installer.isVisibleTo(picker)
    installer._fill_menu()
    offered = [action.data() for action in installer.menu.actions()]
    assert "tp_lakes" in offered and "tp_missing" in offered

    installer.install("tp_lakes")
    assert not installer.button.isEnabled() and installer.progress.isVisibleTo(installer)
    qtbot.waitUntil(installer.button.isEnabled, timeout=120_000)
    assert "installed tp-lakes-env==1.0 into gym_gui's environment" in installer.status.text()
    assert not installer.progress.isVisibleTo(installer)
    # The picker now lists the family's env, whose Game Info is its doc.
    assert "TpLake-v0" in lines(picker)
    assert "not installed: install it with `gym-gui envs install tp_lakes`" not in lines(picker)
    picker.set_env("TpLake-v0")
    assert "A 2x2 lake." in picker.info.toPlainText()
    assert (catalog.records_dir() / "tp_lakes.txt").read_text().splitlines()[-1] == "tp-lakes-env==1.0"


@pytest.mark.usefixtures("lakes")
def test_a_failed_install_from_the_picker_says_pips_error(qtbot: QtBot) -> None:
    picker = EnvPicker()
    qtbot.addWidget(picker)
    installer = picker.installer
    installer.install("tp_missing")
    qtbot.waitUntil(installer.button.isEnabled, timeout=120_000)
    text = installer.status.text()
    assert text.startswith(
        "family tp_missing: pip could not install gym-gui-no-such-distribution==9.9.9: ERROR: "
    )
    assert "nothing was kept" in text
    assert not (catalog.records_dir() / "tp_missing.txt").exists()
    assert "not installed: install it with `gym-gui envs install tp_missing`" in lines(picker)
