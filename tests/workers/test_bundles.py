"""Worker bundles: status, the completion marker, the import check, real installs, the lock, and the CLI."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.records import BundleProgress
from gym_gui.storage.home import Home
from gym_gui.workers import bundle_directory, worker_catalog
from gym_gui.workers import bundles as bundles_module
from gym_gui.workers.bundle_directory import BundleDirectory
from gym_gui.workers.bundle_install import TORCH_CPU_INDEX
from gym_gui.workers.bundles import BundleError, BundleExtra, BundleSpec, TorchBuild, TorchVariant

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


def write_marker(manager: BundleDirectory, name: str, spec_hash: str, **more: Any) -> None:
    marker = {"spec_hash": spec_hash, "installed_at": time.time(), **more}
    manager.marker_path(name).write_text(json.dumps(marker))


def torch_version_py(cuda: str | None, version: str) -> str:
    """torch/version.py as torch writes it: the fields a bundle's torch build is read from."""
    return f"from typing import Optional\n__version__ = {version!r}\ncuda: Optional[str] = {cuda!r}\n"


def fake_torch_wheel(directory: Path, version: str, cuda: str | None) -> Path:
    """A tiny wheel named like torch's builds (``torch-2.13.0+cpu``, ``torch-2.13.0``) whose ``torch``
    reports ``version`` and ``torch.version.cuda`` as a real build does: pip handles it as it would torch."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": "from torch import version\n__version__ = version.__version__\n",
        "torch/version.py": torch_version_py(cuda, version),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    path = directory / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        record = []
        for name, text in files.items():
            wheel.writestr(name, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(text.encode())}")
        wheel.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


@pytest.fixture
def torch_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip's only source, for this test: a directory of fake torch wheels (no index is ever asked, so
    no torch build is downloaded)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def torch_spec(tmp_path: Path, requirement: str = "torch==2.13.0") -> BundleSpec:
    """A bundle that pins torch and lets the install choose its build, like cleanrl's (which checks
    torch's import without naming it)."""
    requirements = tmp_path / "torchy.txt"
    requirements.write_text(f"# a bundle with torch for the tests\n{requirement}  # pinned\n")
    return BundleSpec(name="torchy", requirements=str(requirements), torch_build=True)


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


def test_source_root_is_this_checkout_and_each_kind_keeps_its_requirements_in_its_folder() -> None:
    assert bundles_module.source_root() == REPO
    bundles = worker_catalog().bundles()
    assert {"cleanrl", "llm", "spade_bdi"} <= set(bundles)
    for name, spec in bundles.items():
        assert spec.requirements is not None
        requirements = REPO / spec.requirements
        assert requirements.is_file() and requirements.parent.parent == REPO / "workers", name


# ------------------------------------------------------------------ status and marker


def test_a_never_installed_bundle_says_how_to_install_it(tmp_path: Path) -> None:
    manager = worker_catalog().bundle_directory(tmp_path / "bundles")
    status = manager.status("cleanrl")
    assert not status.installed
    assert status.path == tmp_path / "bundles" / "cleanrl"
    assert status.python == status.path / "bin" / "python"
    assert HINT in status.reason
    assert not manager.installed("cleanrl")
    assert [s.name for s in manager.list()] == ["cleanrl", "corl", "d3rlpy", "llm", "spade_bdi"]
    with pytest.raises(BundleError, match=HINT):
        manager.require("cleanrl")
    with pytest.raises(BundleError, match=HINT):
        manager.freeze("cleanrl")
    check = manager.check("cleanrl")
    assert not check.ok and check.missing == CLEANRL_IMPORTS
    assert HINT in check.message and "\n" not in check.message


def test_an_unknown_bundle_is_refused_with_the_known_names(tmp_path: Path) -> None:
    with pytest.raises(
        BundleError, match="unknown bundle 'nope'; known bundles: cleanrl, corl, d3rlpy, llm, spade_bdi"
    ):
        worker_catalog().bundle_directory(tmp_path).status("nope")


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


def test_a_moved_requirements_file_keeps_the_bundle_installed(tmp_path: Path) -> None:
    # The install is stale when the file's text changes, not its place: moving a kind's
    # requirements file rebuilds nothing.
    spec = tiny_spec(tmp_path)
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": spec})
    make_venv(manager.path("tiny"))
    write_marker(manager, "tiny", manager.spec_hash("tiny"))
    moved = tmp_path / "kind" / "requirements.txt"
    moved.parent.mkdir()
    Path(spec.requirements or "").rename(moved)
    manager = BundleDirectory(manager.bundles_dir, specs={"tiny": replace(spec, requirements=str(moved))})
    assert manager.installed("tiny")


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
    manager = worker_catalog().bundle_directory(tmp_path / "bundles")
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


# ------------------------------------------------------------------ torch's build


def pip_commands(manager: BundleDirectory, name: str) -> list[str]:
    """The pip command lines the last install of ``name`` ran, from its log."""
    return [line for line in manager.log_path(name).read_text().splitlines() if line.startswith("$ ")]


def test_a_torch_bundle_gets_the_cpu_build_by_default_keeps_it_and_switches_to_cuda_on_request(
    tmp_path: Path, torch_wheels: Path
) -> None:
    fake_torch_wheel(torch_wheels, "2.13.0+cpu", None)
    fake_torch_wheel(torch_wheels, "2.13.0", "12.8")  # like PyPI's Linux build: CUDA, no label
    manager = BundleDirectory(tmp_path / "bundles", specs={"torchy": torch_spec(tmp_path)})
    pip = f"$ {manager.python('torchy')} -I -m pip install"

    calls: list[BundleProgress] = []
    status = manager.install("torchy", progress=calls.append)

    assert [u.message for u in calls if u.phase == "installing"] == [
        "creating the virtual environment",
        "upgrading pip",
        "installing torch 2.13.0, CPU build",
        f"installing pinned requirements ({tmp_path / 'torchy.txt'})",
        "checking imports and torch's build",
    ]
    # The CPU build by its name; pip's own sources have it, so PyTorch's index is never asked.
    assert pip_commands(manager, "torchy")[2:5] == [
        f"{pip} --dry-run --no-deps --quiet torch==2.13.0+cpu",
        f"{pip} torch==2.13.0+cpu",
        f"{pip} -r {tmp_path / 'torchy.txt'}",
    ]
    log = manager.log_path("torchy").read_text()
    assert "--extra-index-url" not in log
    assert "# pip's own sources have it: PyTorch's CPU index is not needed" in log
    marker = json.loads(manager.marker_path("torchy").read_text())
    assert marker["torch"] == {"variant": "cpu", "extra_index": None, "version": "2.13.0+cpu", "cuda": None}
    assert status.installed and status.torch == TorchBuild("2.13.0+cpu", None)
    check = manager.check("torchy")
    assert check.ok and check.torch == TorchBuild("2.13.0+cpu", None)
    assert check.message == (
        f"bundle torchy: ok (torch import; torch 2.13.0+cpu (CPU build)) at {manager.path('torchy')}"
    )

    # Without a choice, or asking for the build it holds, the install is a no-op.
    again: list[BundleProgress] = []
    manager.install("torchy", progress=again.append)
    manager.install("torchy", progress=again.append, torch=TorchVariant.CPU)
    assert again == []

    # Asking for the other build rebuilds it: PyPI's unlabelled build, which on Linux is CUDA's.
    calls.clear()
    status = manager.install("torchy", progress=calls.append, torch=TorchVariant.CUDA)
    assert calls[0].message == "creating the virtual environment"
    assert calls[2].message == "installing torch 2.13.0, CUDA build (several GB)"
    assert pip_commands(manager, "torchy")[2:4] == [
        f"{pip} torch===2.13.0",
        f"{pip} -r {tmp_path / 'torchy.txt'}",
    ]
    marker = json.loads(manager.marker_path("torchy").read_text())
    assert marker["torch"] == {"variant": "cuda", "extra_index": None, "version": "2.13.0", "cuda": "12.8"}
    assert status.torch == TorchBuild("2.13.0", "12.8")
    assert status.torch.text() == "torch 2.13.0 (CUDA 12.8 build)"

    # A later install without a choice (`make bundles`, the daemon's first use) keeps the CUDA build.
    manager.install("torchy", progress=again.append)
    assert again == []
    assert json.loads(manager.marker_path("torchy").read_text()) == marker

    # torch swapped by hand for a CPU build: the check says the bundle no longer holds what it records.
    (version_py,) = manager.path("torchy").glob("lib/python*/site-packages/torch/version.py")
    version_py.unlink()
    version_py.write_text(torch_version_py(None, "2.13.0"))
    check = manager.check("torchy")
    assert not check.ok and "\n" not in check.message
    assert check.message == (
        "bundle torchy: torch's CUDA build was asked for, but it holds torch 2.13.0 (CPU build): "
        "torch.version.cuda is None — run `gym-gui bundles install torchy --cuda --force`"
    )


def test_without_the_cpu_build_in_pips_sources_the_install_asks_pytorchs_cpu_index(
    tmp_path: Path, torch_wheels: Path
) -> None:
    # What a machine with only PyPI sees: torch 2.13.0 without a label (the CUDA build) and no +cpu.
    fake_torch_wheel(torch_wheels, "2.13.0", "12.8")
    manager = BundleDirectory(tmp_path / "bundles", specs={"torchy": torch_spec(tmp_path)})

    with pytest.raises(BundleError) as caught:  # no index is reachable under PIP_NO_INDEX
        manager.install("torchy")

    assert str(caught.value).startswith("bundle torchy: step 3/5 installing torch 2.13.0, CPU build failed")
    pip = f"$ {manager.python('torchy')} -I -m pip install"
    assert pip_commands(manager, "torchy")[2:] == [
        f"{pip} --dry-run --no-deps --quiet torch==2.13.0+cpu",
        f"{pip} torch==2.13.0+cpu --extra-index-url {TORCH_CPU_INDEX}",
    ]
    assert TORCH_CPU_INDEX == "https://download.pytorch.org/whl/cpu"
    log = manager.log_path("torchy").read_text()
    assert f"# pip's own sources lack it: adding {TORCH_CPU_INDEX}" in log
    assert "Looking in indexes" not in log  # PIP_NO_INDEX held: nothing was asked of any index
    assert not manager.marker_path("torchy").exists()


def test_a_build_other_than_the_one_asked_for_fails_the_install_in_one_line(
    tmp_path: Path, torch_wheels: Path
) -> None:
    # An unlabelled torch that is a CPU build (as PyPI's is off Linux): --cuda must not pass it.
    fake_torch_wheel(torch_wheels, "2.13.0", None)
    manager = BundleDirectory(tmp_path / "bundles", specs={"torchy": torch_spec(tmp_path)})

    with pytest.raises(BundleError) as caught:
        manager.install("torchy", torch=TorchVariant.CUDA)

    assert str(caught.value) == (
        "bundle torchy: torch's CUDA build was asked for, but it holds torch 2.13.0 (CPU build): "
        "torch.version.cuda is None (install step 5/5 checking imports and torch's build; "
        f"log: {manager.log_path('torchy')})"
    )
    assert not manager.marker_path("torchy").exists()
    assert not manager.installed("torchy")


@pytest.mark.parametrize("requirement", ["torch>=2.13", "torch==2.13.0+cpu", "numpy==1.26.4"])
def test_a_torch_bundle_must_pin_torch_exactly(tmp_path: Path, requirement: str) -> None:
    manager = BundleDirectory(tmp_path / "bundles", specs={"torchy": torch_spec(tmp_path, requirement)})
    with pytest.raises(BundleError, match=r"must pin torch exactly \(a line `torch==X.Y.Z`") as caught:
        manager.install("torchy")
    assert "\n" not in str(caught.value)
    assert not manager.path("torchy").exists()


def test_a_bundle_without_torch_refuses_a_torch_build(tmp_path: Path) -> None:
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": tiny_spec(tmp_path)})
    with pytest.raises(BundleError) as caught:
        manager.install("tiny", torch=TorchVariant.CUDA)
    assert str(caught.value) == "bundle tiny installs no torch: there is no CPU or CUDA build to choose"
    assert not manager.path("tiny").exists()


def test_a_bundle_installed_before_builds_were_recorded_reads_its_build_from_its_files(
    tmp_path: Path,
) -> None:
    manager = BundleDirectory(tmp_path / "bundles", specs={"torchy": torch_spec(tmp_path)})
    site = make_venv(manager.path("torchy"))
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(torch_version_py(None, "2.13.0+cpu"))
    write_marker(manager, "torchy", manager.spec_hash("torchy"))  # no "torch" record

    status = manager.status("torchy")
    assert status.installed
    assert status.torch == TorchBuild("2.13.0+cpu", None, recorded=False)
    # It holds the CPU build: neither keeping its build nor asking for CPU rebuilds it.
    calls: list[BundleProgress] = []
    manager.install("torchy", progress=calls.append)
    manager.install("torchy", progress=calls.append, torch=TorchVariant.CPU)
    assert calls == []


# ------------------------------------------------------------------ extras


def extras_spec(tmp_path: Path, ini: str = "iniconfig==2.1.0") -> BundleSpec:
    """The tiny bundle with extras: ``ini`` (a small wheel from this machine's index), ``base`` (held by
    the bundle's own requirements), ``broken`` (installs, then does not import), ``clash`` (pins
    another six than the bundle's), ``missing`` (nothing pip can find) and ``elsewhere`` (refused here)."""
    extras = tmp_path / "extras"
    extras.mkdir(exist_ok=True)
    files = {
        "ini": f"# the ini extra\n{ini}\n",
        "broken": "iniconfig==2.1.0\n",
        "clash": "six==1.16.0\n",
        "missing": "--no-index\ngym-gui-no-such-package==0.0.0\n",
    }
    for name, text in files.items():
        (extras / f"{name}.txt").write_text(text)
    return replace(
        tiny_spec(tmp_path),
        extras=(
            BundleExtra(
                "ini", str(extras / "ini.txt"), "iniconfig", families=("ini",), check_imports=("iniconfig",)
            ),
            BundleExtra("base", None, "held by the bundle's own requirements", families=("six",)),
            BundleExtra(
                "broken",
                str(extras / "broken.txt"),
                "imports what is not there",
                check_imports=("iniconfig", "gym_gui_no_such_module"),
            ),
            BundleExtra("clash", str(extras / "clash.txt"), "pins another six"),
            BundleExtra("missing", str(extras / "missing.txt"), "nothing pip can find"),
            BundleExtra(
                "elsewhere", str(extras / "ini.txt"), "refused here", unavailable="it needs a 68000 CPU"
            ),
        ),
    )


def installed_packages(manager: BundleDirectory, name: str) -> list[str]:
    """``pip freeze`` of bundle ``name`` as it is now (never a cached answer)."""
    python = str(manager.python(name))
    out = subprocess.run([python, "-I", "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


@pytest.fixture(scope="module")
def extras_bundle(tmp_path_factory: pytest.TempPathFactory) -> BundleDirectory:
    """The tiny bundle with extras, installed without any."""
    tmp = tmp_path_factory.mktemp("extras")
    manager = BundleDirectory(tmp / "bundles", specs={"tiny": extras_spec(tmp)})
    manager.install("tiny")
    return manager


def test_an_extra_is_added_to_an_installed_bundle_without_rebuilding_it_and_recorded(
    extras_bundle: BundleDirectory,
) -> None:
    manager = extras_bundle
    before = manager.status("tiny")
    assert before.installed and before.extras == ("base",)  # its own requirements hold it
    kept = manager.path("tiny") / "kept-by-an-extra"  # a rebuild would remove the venv, and this with it
    kept.write_text("")
    installed_at = json.loads(manager.marker_path("tiny").read_text())["installed_at"]
    install_id = manager.install_id("tiny")
    calls: list[BundleProgress] = []

    status = manager.install("tiny", progress=calls.append, extras=["ini", "base"])

    assert [(u.step, u.total, u.phase) for u in calls] == [
        (1, 2, "installing"),
        (2, 2, "installing"),
        (2, 2, "installed"),
    ]
    assert calls[0].message == f"installing the ini extra ({manager.spec('tiny').extra('ini').requirements})"
    assert calls[1].message == "checking the ini extra's imports (iniconfig)"
    assert kept.exists()
    marker = json.loads(manager.marker_path("tiny").read_text())
    assert marker["installed_at"] == installed_at
    assert marker["extras"]["ini"]["added"] == ["iniconfig==2.1.0"]
    assert status.extras == ("base", "ini") and status.extras_out_of_date == ()
    assert "iniconfig==2.1.0" in installed_packages(manager, "tiny")
    # What is known of the install (a freeze, a kind's cached answers) is asked again.
    assert manager.install_id("tiny") != install_id
    assert "iniconfig==2.1.0" in manager.freeze("tiny")

    again: list[BundleProgress] = []
    assert manager.install("tiny", progress=again.append, extras=["ini"]).extras == ("base", "ini")
    assert again == []


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (
            "missing",
            "ERROR: Could not find a version that satisfies the requirement gym-gui-no-such-package==0.0.0",
        ),
        ("clash", "ERROR: Cannot install six==1.16.0"),
        (
            "broken",
            "gym_gui_no_such_module does not import (ModuleNotFoundError: No module named 'gym_gui_no_such_module')",
        ),
    ],
)
def test_a_failed_extra_keeps_nothing_of_it_and_the_marker_as_it_was(
    extras_bundle: BundleDirectory, extra: str, why: str
) -> None:
    manager = extras_bundle
    marker = manager.marker_path("tiny").read_bytes()
    packages = installed_packages(manager, "tiny")

    with pytest.raises(BundleError) as caught:
        manager.install("tiny", extras=[extra])

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        f"bundle tiny: the {extra} extra was not installed, and nothing of it was kept: {why}"
    )
    assert message.endswith(f"(log: {manager.log_path('tiny')})")
    assert manager.marker_path("tiny").read_bytes() == marker
    assert installed_packages(manager, "tiny") == packages
    assert extra not in manager.status("tiny").extras
    assert not list(manager.bundles_dir.glob("*.constraints.txt"))


def test_an_unknown_or_unavailable_extra_is_refused_before_anything_runs(
    extras_bundle: BundleDirectory,
) -> None:
    manager = extras_bundle
    marker = manager.marker_path("tiny").read_bytes()
    calls: list[BundleProgress] = []
    with pytest.raises(
        BundleError,
        match=r"^bundle tiny offers no extra 'atari'; its extras: base, broken, clash, elsewhere, ini, missing$",
    ):
        manager.install("tiny", progress=calls.append, extras=["ini", "atari"])
    with pytest.raises(
        BundleError,
        match=r"^bundle tiny: the elsewhere extra cannot be installed here: it needs a 68000 CPU$",
    ):
        manager.install("tiny", progress=calls.append, extras=["elsewhere"])
    assert calls == []
    assert manager.marker_path("tiny").read_bytes() == marker


def test_the_extras_that_bring_a_family_are_found_by_it(tmp_path: Path) -> None:
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": extras_spec(tmp_path)})
    assert [(bundle, extra.name) for bundle, extra in manager.extras_for("ini")] == [("tiny", "ini")]
    assert manager.extras_for("procgen") == []
    # The installed kinds': Atari comes to CleanRL's bundle with its atari extra, MuJoCo is in its base.
    catalog = worker_catalog().bundle_directory(tmp_path / "bundles")
    assert [(bundle, extra.name) for bundle, extra in catalog.extras_for("atari")] == [("cleanrl", "atari")]
    assert [(bundle, extra.requirements) for bundle, extra in catalog.extras_for("mujoco")] == [
        ("cleanrl", None)
    ]


def test_an_extra_whose_requirements_changed_is_out_of_date_until_the_next_install(tmp_path: Path) -> None:
    spec = extras_spec(tmp_path)
    manager = BundleDirectory(tmp_path / "bundles", specs={"tiny": spec})
    manager.install("tiny", extras=["ini"])
    assert manager.status("tiny").extras == ("base", "ini")

    Path(spec.extra("ini").requirements or "").write_text("iniconfig==2.0.0\n")
    status = manager.status("tiny")
    assert status.installed  # the bundle itself is as it was
    assert status.extras == ("base",) and status.extras_out_of_date == ("ini",)

    # An install naming no extra (`make bundles`, the daemon's first use) brings it up to date …
    calls: list[BundleProgress] = []
    status = manager.install("tiny", progress=calls.append)
    assert [u.message.split(" (")[0] for u in calls if u.phase == "installing"] == [
        "installing the ini extra",
        "checking the ini extra's imports",
    ]
    assert status.extras == ("base", "ini") and status.extras_out_of_date == ()
    assert "iniconfig==2.0.0" in installed_packages(manager, "tiny")

    # … and a rebuild installs it again: the extras a user chose stay chosen.
    calls.clear()
    status = manager.install("tiny", progress=calls.append, force=True)
    messages = [u.message.split(" (")[0] for u in calls if u.phase == "installing"]
    assert messages[0] == "creating the virtual environment" and messages[-2:] == [
        "installing the ini extra",
        "checking the ini extra's imports",
    ]
    assert {(u.total) for u in calls} == {len(messages)}
    assert status.extras == ("base", "ini")
    assert "iniconfig==2.0.0" in installed_packages(manager, "tiny")


# ------------------------------------------------------------------ the pre-installed cleanrl bundle


@pytest.fixture
def cleanrl_manager() -> BundleDirectory:
    manager = worker_catalog().bundle_directory(Home().bundles_dir)
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
    # `make bundles` builds it with torch's CPU build: what imports is a build without CUDA.
    assert result.torch is not None and result.torch.variant is TorchVariant.CPU
    assert result.torch.cuda is None and result.torch.version.startswith("2.13.0")
    # What the bundle list shows (its manifest's record, or its files') is the build that imports.
    listed = cleanrl_manager.status("cleanrl").torch
    assert listed is not None and (listed.version, listed.cuda) == (result.torch.version, None)


def test_freeze_of_the_cleanrl_bundle_is_exact_and_cached(
    cleanrl_manager: BundleDirectory, monkeypatch: pytest.MonkeyPatch
) -> None:
    freeze = cleanrl_manager.freeze("cleanrl")
    assert "cleanrl==1.2.0" in freeze
    assert any(line.startswith("torch==2.13.0") for line in freeze), freeze
    assert "gymnasium==0.29.1" in freeze and "gym==0.23.1" in freeze

    def no_subprocess(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("freeze ran pip again for the same install")

    monkeypatch.setattr(bundle_directory.subprocess, "run", no_subprocess)
    assert cleanrl_manager.freeze("cleanrl") == freeze


# ------------------------------------------------------------------ CLI


def test_cli_bundles_list_and_check() -> None:
    listed = gym_gui("bundles", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "cleanrl" in line)
    assert "yes" in row
    assert "torch 2.13.0+cpu (CPU build)" in row
    # `make bundles` adds no extra; MuJoCo is in the bundle's own requirements.
    assert "mujoco; can add: atari, envpool" in row

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


def test_cli_install_of_an_extra_the_bundle_does_not_offer_is_one_error_line(tmp_path: Path) -> None:
    result = gym_gui(
        "bundles",
        "install",
        "cleanrl",
        "--extra",
        "atari",
        "--extra",
        "nope",
        env={"GYM_GUI_BUNDLES": str(tmp_path / "none")},
    )
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == "error: bundle cleanrl offers no extra 'nope'; its extras: atari, envpool, mujoco"
    )
    assert not (tmp_path / "none" / "cleanrl").exists()  # refused before anything was made


def test_cli_install_of_the_installed_bundle_is_a_no_op() -> None:
    result = gym_gui("bundles", "install", "cleanrl")
    assert result.returncode == 0, result.stderr
    assert "bundle cleanrl is installed at" in result.stdout
    assert "with torch 2.13.0+cpu (CPU build)" in result.stdout


def test_cli_install_cuda_over_a_cpu_bundle_says_so_and_rebuilds_with_pypis_build(tmp_path: Path) -> None:
    """A cleanrl bundle recorded as CPU (its venv empty: nothing here runs it); pip gets no index, so the
    CUDA rebuild stops at torch's step instead of downloading several GB."""
    bundles = tmp_path / "bundles"
    manager = worker_catalog().bundle_directory(bundles)
    make_venv(manager.path("cleanrl"))
    record = {"variant": "cpu", "extra_index": None, "version": "2.13.0+cpu", "cuda": None}
    write_marker(manager, "cleanrl", manager.spec_hash("cleanrl"), torch=record)
    env = {"GYM_GUI_BUNDLES": str(bundles), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "none")}

    listed = gym_gui("bundles", "list", "cleanrl", env=env)
    row = next(line for line in listed.stdout.splitlines() if "cleanrl" in line)
    assert "torch 2.13.0+cpu (CPU build)" in row and "not recorded" not in row
    kept = gym_gui("bundles", "install", "cleanrl", "--cpu", env=env)
    assert kept.returncode == 0, kept.stderr
    assert "is installed at" in kept.stdout and "with torch 2.13.0+cpu (CPU build)" in kept.stdout

    result = gym_gui("bundles", "install", "cleanrl", "--cuda", env=env)

    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "bundle cleanrl holds torch 2.13.0+cpu (CPU build); rebuilding it with torch's CUDA build"
    )
    assert "bundle cleanrl: 3/7 installing torch 2.13.0, CUDA build (several GB)…" in lines
    assert result.stderr.startswith(
        "error: bundle cleanrl: step 3/7 installing torch 2.13.0, CUDA build (several GB) failed"
    )
    assert pip_commands(manager, "cleanrl")[-1] == (
        f"$ {manager.python('cleanrl')} -I -m pip install torch===2.13.0"
    )
    assert not manager.installed("cleanrl")
