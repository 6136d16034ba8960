"""Worker bundles: status, the completion marker, the import check, real installs, the lock, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.records import BundleProgress
from gym_gui.storage.home import Home
from gym_gui.workers import bundles as bundles_module
from gym_gui.workers.bundles import BundleDirectory, BundleError, BundleSpec

REPO = Path(__file__).resolve().parents[2]
HINT = "gym-gui bundles install cleanrl"
CLEANRL_IMPORTS = [
    "torch",
    "gymnasium",
    "gym",
    "cleanrl",
    "tensorboard",
    "gym_gui_sdk",
    "gym_gui_cleanrl_worker",
    "mujoco",
]


def make_venv(path: Path) -> Path:
    """A real, empty venv (no pip: fast) at ``path``; returns its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    (site,) = (path / "lib").glob("python3*/site-packages")
    return site


def tiny_spec(tmp_path: Path, requirement: str = "six==1.17.0") -> BundleSpec:
    """A bundle built like cleanrl's but small: one wheel from this machine's index and the SDK, editable."""
    requirements = tmp_path / "tiny.txt"
    requirements.write_text(f"# a tiny bundle for the tests\n{requirement}\n")
    return BundleSpec(
        name="tiny",
        requirements=str(requirements),
        local_packages=(str(REPO / "sdk"),),
        check_imports=("six", "gym_gui_sdk"),
    )


def write_marker(manager: BundleDirectory, name: str, spec_hash: str) -> None:
    manager.marker_path(name).write_text(json.dumps({"spec_hash": spec_hash, "installed_at": time.time()}))


def gym_gui(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gym_gui", *args], capture_output=True, text=True, timeout=300, env=full_env
    )


# ------------------------------------------------------------------ where bundles live


def test_gym_gui_bundles_overrides_the_homes_bundles_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(tmp_path / "shared"))
    assert Home(tmp_path / "a").bundles_dir == Home(tmp_path / "b").bundles_dir == tmp_path / "shared"
    monkeypatch.setenv("GYM_GUI_BUNDLES", "")
    assert Home(tmp_path / "a").bundles_dir == tmp_path / "a" / "bundles"
    monkeypatch.delenv("GYM_GUI_BUNDLES")
    assert Home(tmp_path / "a").bundles_dir == tmp_path / "a" / "bundles"


def test_source_root_is_this_checkout() -> None:
    assert bundles_module.source_root() == REPO
    assert (REPO / "bundles" / "cleanrl.txt").is_file()


# ------------------------------------------------------------------ status and marker


def test_a_never_installed_bundle_says_how_to_install_it(tmp_path: Path) -> None:
    manager = BundleDirectory(tmp_path / "bundles")
    status = manager.status("cleanrl")
    assert not status.installed
    assert status.path == tmp_path / "bundles" / "cleanrl"
    assert status.python == status.path / "bin" / "python"
    assert HINT in status.reason
    assert not manager.installed("cleanrl")
    assert [s.name for s in manager.list()] == ["cleanrl", "spade_bdi"]
    with pytest.raises(BundleError, match=HINT):
        manager.require("cleanrl")
    with pytest.raises(BundleError, match=HINT):
        manager.freeze("cleanrl")
    check = manager.check("cleanrl")
    assert not check.ok and check.missing == CLEANRL_IMPORTS
    assert HINT in check.message and "\n" not in check.message


def test_an_unknown_bundle_is_refused_with_the_known_names(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="unknown bundle 'nope'; known bundles: cleanrl, spade_bdi"):
        BundleDirectory(tmp_path).status("nope")


def test_the_marker_decides_installed(tmp_path: Path) -> None:
    spec = tiny_spec(tmp_path)
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": spec})
    make_venv(manager.path("tiny"))

    # A venv without the marker is what an interrupted install leaves.
    status = manager.status("tiny")
    assert not status.installed
    assert "incomplete" in status.reason and "gym-gui bundles install tiny" in status.reason

    write_marker(manager, "tiny", manager.spec_hash("tiny"))
    assert manager.installed("tiny")

    # Changing the pinned requirements makes the install stale.
    Path(spec.requirements or "").write_text("six==1.16.0\n")
    status = manager.status("tiny")
    assert not status.installed and "out of date" in status.reason

    manager.marker_path("tiny").write_text("{not json")
    assert "incomplete" in manager.status("tiny").reason


def test_an_interrupted_install_leaves_the_bundle_not_installed(tmp_path: Path) -> None:
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": tiny_spec(tmp_path)})
    make_venv(manager.path("tiny"))
    write_marker(manager, "tiny", manager.spec_hash("tiny"))
    assert manager.installed("tiny")

    class Interrupted(Exception):
        pass

    def interrupt_after_the_venv(update: BundleProgress) -> None:
        if update.step == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        manager.install("tiny", progress=interrupt_after_the_venv, force=True)
    assert manager.python("tiny").exists()  # the new venv was made …
    assert not manager.marker_path("tiny").exists()  # … but never marked complete
    status = manager.status("tiny")
    assert not status.installed and "incomplete" in status.reason


def test_a_failing_pip_step_names_the_step_the_log_and_pips_complaint(tmp_path: Path) -> None:
    # --no-index keeps the failure local: pip looks only at this machine's wheel directories.
    spec = tiny_spec(tmp_path, requirement="--no-index\ngym-gui-no-such-package==0.0.0")
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": spec})
    with pytest.raises(BundleError) as caught:
        manager.install("tiny")
    text = str(caught.value)
    assert "step 3/5 installing pinned requirements" in text
    assert str(manager.log_path("tiny")) in text
    assert "gym-gui-no-such-package" in text  # the tail of pip's own output
    assert "gym-gui bundles install tiny" in text
    assert not manager.marker_path("tiny").exists()
    assert not manager.installed("tiny")


# ------------------------------------------------------------------ check


def test_check_names_every_missing_import_in_one_line(tmp_path: Path) -> None:
    manager = BundleDirectory(tmp_path / "bundles")
    site = make_venv(manager.path("cleanrl"))
    (site / "torch.py").write_text("")
    (site / "gym.py").write_text("")
    (site / "cleanrl").mkdir()
    (site / "cleanrl" / "__init__.py").write_text("raise ImportError('numpy is too new for this')\n")

    result = manager.check("cleanrl")

    assert not result.ok
    assert result.missing == [
        "gymnasium",
        "cleanrl",
        "tensorboard",
        "gym_gui_sdk",
        "gym_gui_cleanrl_worker",
        "mujoco",
    ]
    assert "\n" not in result.message
    assert result.message.startswith(
        "bundle cleanrl: missing gymnasium, cleanrl, tensorboard, gym_gui_sdk, gym_gui_cleanrl_worker, mujoco"
    )
    assert "No module named 'gymnasium'" in result.message
    assert result.message.endswith(f"run `{HINT}`")
    # The app venv's packages (gymnasium is there) must not leak into the bundle.
    assert "gymnasium" in result.missing


# ------------------------------------------------------------------ real installs


@pytest.fixture(scope="module")
def tiny_installs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two concurrent installs of the tiny bundle: A builds it while B waits on the lock, then C (after both)."""
    tmp = tmp_path_factory.mktemp("tiny")
    manager = BundleDirectory(tmp / "bundles", specs={"tiny": tiny_spec(tmp)})
    a_holds_lock, release_a, b_waits = threading.Event(), threading.Event(), threading.Event()
    a_calls: list[BundleProgress] = []
    b_calls: list[BundleProgress] = []
    results: dict[str, Any] = {}

    def a_progress(update: BundleProgress) -> None:
        a_calls.append(update)
        if update.step == 1:
            a_holds_lock.set()
            assert release_a.wait(120), "the test never released install A"

    def b_progress(update: BundleProgress) -> None:
        b_calls.append(update)
        if update.phase == "waiting":
            b_waits.set()

    def run(key: str, progress: Any) -> None:
        try:
            results[key] = manager.install("tiny", progress=progress)
        except BaseException as exc:
            results[key] = exc

    a = threading.Thread(target=run, args=("a", a_progress))
    a.start()
    assert a_holds_lock.wait(60), "install A never started"
    b = threading.Thread(target=run, args=("b", b_progress))
    b.start()
    assert b_waits.wait(60), "install B did not report waiting for the lock"
    b_was_waiting_while_a_held_the_lock = b.is_alive() and "a" not in results
    release_a.set()
    a.join(300)
    b.join(300)
    marker_after_a = manager.marker_path("tiny").read_text()
    c_calls: list[BundleProgress] = []
    started = time.monotonic()
    results["c"] = manager.install("tiny", progress=c_calls.append)
    return {
        "manager": manager,
        "results": results,
        "a_calls": a_calls,
        "b_calls": b_calls,
        "c_calls": c_calls,
        "c_seconds": time.monotonic() - started,
        "b_waited": b_was_waiting_while_a_held_the_lock,
        "marker_after_a": marker_after_a,
    }


def test_install_reports_numbered_increasing_steps_and_writes_the_marker_last(
    tiny_installs: dict[str, Any],
) -> None:
    manager: BundleDirectory = tiny_installs["manager"]
    first = tiny_installs["results"]["a"]
    assert not isinstance(first, BaseException), first
    assert first.installed, first.reason
    calls: list[BundleProgress] = tiny_installs["a_calls"]
    # Each step as it begins, then the end: fields a viewer reads without parsing any text.
    assert [(u.step, u.phase) for u in calls] == [*((n, "installing") for n in range(1, 6)), (5, "installed")]
    assert {(u.bundle, u.total) for u in calls} == {("tiny", 5)}
    assert [u.message.split(" (")[0] for u in calls[:-1]] == [
        "creating the virtual environment",
        "upgrading pip",
        "installing pinned requirements",
        "installing sdk from the source tree",
        "checking imports",
    ]
    assert calls[2].text().startswith("3/5 installing pinned requirements")
    # What the daemon puts in a bundle event's data reads back as the same progress.
    assert [BundleProgress.from_data(json.dumps(u.data())) for u in calls] == calls
    marker = json.loads(manager.marker_path("tiny").read_text())
    assert marker["spec_hash"] == manager.spec_hash("tiny")
    assert manager.check("tiny").ok
    freeze = manager.freeze("tiny")
    assert "six==1.17.0" in freeze
    # pip writes an editable install of a git checkout as "-e git+file://…#egg=…&subdirectory=sdk".
    assert any(
        line.startswith("-e ") and ("/sdk" in line or "subdirectory=sdk" in line) for line in freeze
    ), freeze
    log = manager.log_path("tiny").read_text()
    assert "## 3/5 installing pinned requirements" in log and "six" in log


def test_a_concurrent_install_waits_on_the_lock_then_finds_it_installed(
    tiny_installs: dict[str, Any],
) -> None:
    assert tiny_installs["b_waited"]
    second = tiny_installs["results"]["b"]
    assert not isinstance(second, BaseException), second
    assert second.installed
    # B announced only that it waited: it did not rebuild what A had just built.
    assert [(u.step, u.phase) for u in tiny_installs["b_calls"]] == [(0, "waiting")]
    assert tiny_installs["b_calls"][0].text() == "waiting for another install of tiny"


def test_installing_an_installed_bundle_is_a_fast_no_op(tiny_installs: dict[str, Any]) -> None:
    manager: BundleDirectory = tiny_installs["manager"]
    assert tiny_installs["results"]["c"].installed
    assert tiny_installs["c_calls"] == []
    assert tiny_installs["c_seconds"] < 5
    assert manager.marker_path("tiny").read_text() == tiny_installs["marker_after_a"]


# ------------------------------------------------------------------ the pre-installed cleanrl bundle


@pytest.fixture
def cleanrl_manager() -> BundleDirectory:
    manager = BundleDirectory(Home().bundles_dir)
    status = manager.status("cleanrl")
    assert status.installed, (
        f"{status.reason}; the suite expects it pre-installed: `make bundles` with "
        f"GYM_GUI_BUNDLES={manager.bundles_dir} (as `make test` does)"
    )
    return manager


def test_the_pre_installed_cleanrl_bundle_is_the_shared_one(cleanrl_manager: BundleDirectory) -> None:
    assert cleanrl_manager.bundles_dir == Path(os.environ["GYM_GUI_BUNDLES"]).resolve()
    assert cleanrl_manager.bundles_dir != Home().root / "bundles"


def test_the_pre_installed_cleanrl_bundle_checks_ok(cleanrl_manager: BundleDirectory) -> None:
    result = cleanrl_manager.check("cleanrl")
    assert result.ok, result.message
    assert result.missing == []


def test_freeze_of_the_cleanrl_bundle_is_exact_and_cached(
    cleanrl_manager: BundleDirectory, monkeypatch: pytest.MonkeyPatch
) -> None:
    freeze = cleanrl_manager.freeze("cleanrl")
    assert "cleanrl==1.2.0" in freeze
    assert any(line.startswith("torch==2.13.0") for line in freeze), freeze
    assert "gymnasium==0.29.1" in freeze and "gym==0.23.1" in freeze

    def no_subprocess(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("freeze ran pip again for the same install")

    monkeypatch.setattr(bundles_module.subprocess, "run", no_subprocess)
    assert cleanrl_manager.freeze("cleanrl") == freeze


# ------------------------------------------------------------------ CLI


def test_cli_bundles_list_and_check() -> None:
    listed = gym_gui("bundles", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "cleanrl" in line)
    assert "yes" in row

    checked = gym_gui("bundles", "check", "cleanrl")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip().startswith("bundle cleanrl: ok")
    assert len(checked.stdout.strip().splitlines()) == 1


def test_cli_check_of_a_missing_bundle_exits_1_with_one_line(tmp_path: Path) -> None:
    checked = gym_gui("bundles", "check", "cleanrl", env={"GYM_GUI_BUNDLES": str(tmp_path / "none")})
    assert checked.returncode == 1
    lines = checked.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bundle cleanrl: not installed")
    assert HINT in lines[0]


def test_cli_install_of_an_unknown_bundle_is_one_error_line(tmp_path: Path) -> None:
    result = gym_gui("bundles", "install", "nope", env={"GYM_GUI_BUNDLES": str(tmp_path / "none")})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: unknown bundle 'nope'")


def test_cli_install_of_the_installed_bundle_is_a_no_op() -> None:
    result = gym_gui("bundles", "install", "cleanrl")
    assert result.returncode == 0, result.stderr
    assert "bundle cleanrl is installed at" in result.stdout
