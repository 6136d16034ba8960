"""`gym-gui envs install atari` from a fresh home into a fresh copy of gym_gui's environment: ale-py is
installed, recorded so that `make install` keeps it, and the catalog lists Atari as installed; a family's
pip options reach pip, and pip's exit code, not its words, says whether it installed."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from gym_gui.envs.catalog import ENTRY_POINT_GROUP
from gym_gui.workers.bundle_install import base_python
from tests.fixtures import REPO
from tests.support import assert_one_line_error, gym_gui, plugin_distribution

UV = str(Path(sys.executable).parent / "uv")


def make_install(venv: Path) -> Path:
    """What `make install` does to gym_gui's environment ``venv``: sync it to the lock and the families
    `gym-gui envs install` recorded there, then add the local packages (their bytecode left uncompiled:
    the test's environment runs a few commands once)."""
    python = venv / "bin" / "python"
    local = [REPO / "sdk", *sorted(p.parent for p in (REPO / "workers").glob("*/pyproject.toml")), REPO]
    records = sorted(str(p) for p in (venv / "gym_gui_families").glob("*.txt"))
    for command in (
        [UV, "pip", "sync", "--quiet", "--python", str(python), str(REPO / "requirements.lock"), *records],
        [UV, "pip", "install", "--quiet", "--python", str(python), "--no-deps", *(f"-e{p}" for p in local)],
    ):
        subprocess.run(command, check=True, capture_output=True, timeout=600)
    return python


@pytest.mark.usefixtures("own_cleanrl_bundle")
def test_install_atari_into_a_fresh_app_environment(tmp_path: Path) -> None:
    subprocess.run([UV, "venv", "--quiet", "--python", base_python(), str(tmp_path / "app")], check=True)
    python = make_install(tmp_path / "app")
    home = tmp_path / "home"
    assert subprocess.run([python, "-c", "import ale_py"], capture_output=True).returncode != 0

    listed = json.loads(gym_gui("envs", "--family", "atari", "--json", home=home, python=python).stdout)
    assert listed["envs"] == []  # ALE's games are read from ale-py, once it is installed
    assert listed["families"] == [
        {
            "name": "atari",
            "title": "Atari (ALE)",
            "installed": False,
            "needs": "install it with `gym-gui envs install atari`",
            "envs": 0,
        }
    ]

    installed = gym_gui("envs", "install", "atari", home=home, python=python, timeout=600)
    assert installed.returncode == 0, installed.stderr
    lines = installed.stdout.splitlines()
    assert any(
        line.startswith("installed ale-py==0.12.") and "into gym_gui's environment" in line for line in lines
    )
    # The CleanRL bundle is built (make bundles): it gets the extra too.
    assert "bundle cleanrl has extra atari" in lines
    record = (tmp_path / "app" / "gym_gui_families" / "atari.txt").read_text().splitlines()
    assert next(line for line in record if not line.startswith("#")).startswith("ale-py==0.12.")

    envs = json.loads(gym_gui("envs", "--family", "atari", "--json", home=home, python=python).stdout)["envs"]
    assert "ALE/Breakout-v5" in {env["env_id"] for env in envs}
    assert all(env["installed"] and env["needs"] == "" for env in envs)

    # make install syncs the lock and the recorded families: Atari stays.
    make_install(tmp_path / "app")
    assert subprocess.run([python, "-c", "import ale_py"], capture_output=True).returncode == 0
    again = gym_gui("envs", "install", "atari", home=home, python=python)
    assert again.returncode == 0 and "Atari (ALE) is installed in gym_gui's environment" in again.stdout


def wheel(folder: Path, name: str, requires: tuple[str, ...] = ()) -> Path:
    """A real wheel of distribution ``name`` 1.0 (one empty module of its name) requiring ``requires``."""
    module = name.replace("-", "_")
    path = folder / f"{module}-1.0-py3-none-any.whl"
    info = f"{module}-1.0.dist-info"
    files = {
        f"{module}/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{file},,\n" for file in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as archive:
        for file, text in files.items():
            archive.writestr(file, text)
    return path


def overlay_environment(venv: Path) -> Path:
    """A fresh environment that sees gym_gui's (this interpreter's site-packages, through a .pth file)
    but installs into its own: a family installed there leaves gym_gui's environment as it was."""
    subprocess.run([UV, "venv", "--quiet", "--python", base_python(), str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    app_site = sysconfig.get_paths()["purelib"]
    (Path(site) / "zz_gym_gui.pth").write_text(f"import site; site.addsitedir({app_site!r})\n")
    return python


def test_install_options_reach_pip_and_an_error_line_of_a_pip_that_exits_0_is_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NLE pins gymnasium==1.2.0 while gym_gui runs 1.4, so its family installs with --no-deps; pip then
    # prints an "ERROR:" line about that pin on a later install that touches it, and exits 0. Here
    # tp-pinned pins tp-plain==2.0, which no index has, and tp_plain installs tp-plain 1.0 afterwards.
    pinned = wheel(tmp_path, "tp-pinned", ("tp-plain==2.0",))
    plain = wheel(tmp_path, "tp-plain")
    families = textwrap.dedent(
        f"""\
        from gym_gui.core.envs import EnvFamily

        PINNED = EnvFamily(name="tp_pinned", title="Pinned", import_module="tp_pinned",
                           packages=({str(pinned)!r},), install_options=("--no-deps", "--no-index"))
        RESOLVED = EnvFamily(name="tp_resolved", title="Resolved", import_module="tp_pinned",
                             packages=({str(pinned)!r},), install_options=("--no-index",))
        PLAIN = EnvFamily(name="tp_plain", title="Plain", import_module="tp_plain",
                          packages=({str(plain)!r},), install_options=("--no-index",))
        """
    )
    entry_points = {
        "tp_pinned": "tp_families:PINNED",
        "tp_resolved": "tp_families:RESOLVED",
        "tp_plain": "tp_families:PLAIN",
    }
    site = plugin_distribution(
        tmp_path / "site", "tp-families", ENTRY_POINT_GROUP, entry_points, {"tp_families.py": families}
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    python = overlay_environment(tmp_path / "app")
    home = tmp_path / "home"

    def install(name: str) -> subprocess.CompletedProcess[str]:
        return gym_gui("envs", "install", name, home=home, python=python, timeout=300)

    # Without --no-deps pip resolves tp-plain==2.0, finds none, and the install keeps nothing.
    assert_one_line_error(
        install("tp_resolved"),
        "family tp_resolved: pip could not install ",
        "tp-plain==2.0",
        "(nothing was kept;",
    )
    assert not (tmp_path / "app" / "gym_gui_families" / "tp_resolved.txt").exists()

    pinned_install = install("tp_pinned")
    assert pinned_install.returncode == 0, pinned_install.stderr
    assert "installed tp-pinned==1.0 into gym_gui's environment" in pinned_install.stdout.splitlines()
    records = tmp_path / "app" / "gym_gui_families"
    assert (records / "tp_pinned.txt").read_text().splitlines()[1:] == ["tp-pinned==1.0"]

    plain_install = install("tp_plain")
    assert plain_install.returncode == 0, plain_install.stderr
    assert "installed tp-plain==1.0 into gym_gui's environment" in plain_install.stdout.splitlines()
    log = (records / "tp_plain.log").read_text()
    assert "ERROR: pip's dependency resolver" in log and "tp-pinned 1.0 requires tp-plain==2.0" in log
