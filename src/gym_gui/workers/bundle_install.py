"""Building a bundle's venv: its install steps (the venv, pip, torch's build, the requirements, the extra
steps, the local packages), each run with its output appended to the install log, under its lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gym_gui.workers.bundles import BundleError, BundleSpec, TorchVariant, install_hint

# A pip step may download and build; an hour is far beyond any healthy install yet still ends a hung one.
STEP_TIMEOUT = 3600.0
# Lines of pip's output quoted in a failure; enough to show the resolver's complaint.
TAIL_LINES = 25
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's index of its CPU-only builds (``torch==X+cpu``); PyPI has none for Linux, where its torch is the CUDA build."""

Step = tuple[str, Callable[[IO[str], str], None]]
"""One install step: its message, and what runs it (given the install log and the step's label)."""


def base_python() -> str:
    """The interpreter under the running one's venv, so a bundle never inherits the app venv's packages."""
    return str(getattr(sys, "_base_executable", None) or sys.executable)


def child_env(venv: Path) -> dict[str, str]:
    """The environment of a command run in ``venv``: ours, minus what would leak other packages in."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "__PYVENV_LAUNCHER__")
    }
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONNOUSERSITE"] = "1"  # ~/.local packages must not satisfy a bundle's check
    env["PIP_NO_INPUT"] = "1"  # an install never waits on a prompt nobody sees
    return env


@dataclass(frozen=True)
class BundleBuild:
    """An install of one bundle: the venv it builds from ``spec``, and where its commands run and log."""

    spec: BundleSpec
    venv: Path
    log_path: Path  # the install log, whose tail a failed step quotes
    workdir: Path  # where its commands run (the bundles directory)
    resolve: Callable[[str], Path]  # a path of the spec, relative ones taken from the source checkout

    def pip(self) -> list[str]:
        """The command that runs pip in the bundle, isolated from this process's packages."""
        return [str(self.venv / "bin" / "python"), "-I", "-m", "pip"]

    def steps(self, torch_pin: str | None, variant: TorchVariant, record: dict[str, Any]) -> list[Step]:
        """The steps that build the venv, in order: create it, upgrade pip, install torch ``torch_pin``
        in the build ``variant`` (None: the spec chooses no torch build), the requirements file, the
        extra pip steps, the local packages (editable, no deps). What torch's step finds goes into
        ``record``.
        """
        spec, venv, pip = self.spec, self.venv, self.pip()
        steps: list[Step] = []

        def add(message: str, command: Callable[[], list[str]]) -> None:
            def run(log: IO[str], label: str) -> None:
                self.run(command(), log, label)

            steps.append((message, run))

        add("creating the virtual environment", lambda: [base_python(), "-I", "-m", "venv", str(venv)])
        add("upgrading pip", lambda: [*pip, "install", "--upgrade", "pip"])
        if torch_pin is not None:
            pin = torch_pin
            size = " (several GB)" if variant is TorchVariant.CUDA else ""
            steps.append(
                (
                    f"installing torch {pin}, {variant.label} build{size}",
                    lambda log, label: record.update(self.install_torch(pin, variant, log, label)),
                )
            )
        if spec.requirements is not None:
            requirements = spec.requirements
            add(
                f"installing pinned requirements ({requirements})",
                lambda: [*pip, "install", "-r", str(self.resolve(requirements))],
            )

        def pip_install(args: tuple[str, ...]) -> Callable[[], list[str]]:
            return lambda: [*pip, "install", *args]

        for step in spec.extra_steps:
            add(step.description, pip_install(step.args))
        if spec.local_packages:
            packages = spec.local_packages

            def local() -> list[str]:
                command = [*pip, "install", "--no-deps"]
                for package in packages:
                    command += ["-e", str(self.resolve(package))]
                return command

            names = ", ".join(Path(p).name for p in packages)
            add(f"installing {names} from the source tree (editable, no deps)", local)
        return steps

    def install_torch(self, pin: str, variant: TorchVariant, log: IO[str], label: str) -> dict[str, Any]:
        """Install torch ``pin`` in the build ``variant`` names; the requirements' ``torch==PIN`` then holds.

        CPU: ``torch==PIN+cpu``, the CPU-only build by its name. A dry run first asks pip's own
        sources (PyPI, a mirror, a wheelhouse in find-links) for it; only when they lack it is
        :data:`TORCH_CPU_INDEX` added, so a machine that has the wheel never waits on an index it
        cannot reach. CUDA: ``torch===PIN``, exactly that version with no build label, which is
        PyPI's build: CUDA on Linux. Returns where the build came from (``extra_index``, for the
        manifest).
        """
        pip = self.pip()
        if variant is TorchVariant.CUDA:
            wanted, extra_index = f"torch==={pin}", None
        else:
            wanted = f"torch=={pin}+cpu"
            probe = [*pip, "install", "--dry-run", "--no-deps", "--quiet", wanted]
            found = self.run(probe, log, f"{label}: does pip find {wanted} in its own sources?", check=False)
            extra_index = None if found else TORCH_CPU_INDEX
            log.write(
                "# pip's own sources have it: PyTorch's CPU index is not needed\n"
                if found
                else f"# pip's own sources lack it: adding {TORCH_CPU_INDEX}\n"
            )
        index = ["--extra-index-url", extra_index] if extra_index else []
        self.run([*pip, "install", wanted, *index], log, label)
        return {"extra_index": extra_index}

    def run(self, command: list[str], log: IO[str], label: str, check: bool = True) -> bool:
        """Run ``command`` (an argument list) with its output appended to ``log``; True when it succeeded.

        Raises:
            BundleError: when it fails and ``check`` is set, or cannot start at all.
        """
        name = self.spec.name
        log.write(f"\n## {label}\n$ {' '.join(command)}\n")
        log.flush()
        start = log.tell()
        try:
            code = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env(self.venv),
                cwd=self.workdir,
                timeout=STEP_TIMEOUT,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
        except OSError as exc:
            raise BundleError(
                f"bundle {name}: step {label} could not start {command[0]}: {exc.strerror}; "
                f"log: {self.log_path}"
            ) from None
        if code == 0 or not check:
            return code == 0
        log.flush()
        tail = log_tail(self.log_path, start)
        how = f"timed out after {STEP_TIMEOUT:.0f}s" if code is None else f"failed with exit code {code}"
        raise BundleError(
            f"bundle {name}: step {label} {how}; log: {self.log_path}\n{tail}\n"
            f"(fix the cause, then {install_hint(name)})"
        )


@contextlib.contextmanager
def install_lock(lock_path: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """Hold a bundle's install lock (an flock on ``lock_path``); ``on_wait`` is called once if someone
    else holds it."""
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def log_tail(log_path: Path, start: int) -> str:
    """The last lines written to ``log_path`` from byte ``start`` on."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(start)
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return "(the install log could not be read)"
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-TAIL_LINES:]) or "(no output)"


def first_error(log_path: Path, start: int) -> str:
    """pip's first error line written to ``log_path`` from byte ``start`` on (``ERROR: …``), else its
    last line: what a failed step says in one line."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(start)
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return "(the install log could not be read)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines[-1:] or ["(no output)"])[0]
