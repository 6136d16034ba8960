"""The bundles directory (``Home.bundles_dir``): each bundle's venv, its status, installing it, checking
its imports and freezing its packages."""

from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from gym_gui_sdk.json_object import json_object

from gym_gui.core.records import BundleProgress
from gym_gui.workers.bundle_install import BundleBuild, Step, child_env, install_lock
from gym_gui.workers.bundles import (
    MARKER,
    BundleError,
    BundleSpec,
    BundleStatus,
    CheckResult,
    TorchBuild,
    TorchVariant,
    install_hint,
    source_root,
)

logger = logging.getLogger(__name__)

# Importing torch alone takes seconds on a cold disk.
CHECK_TIMEOUT = 300.0
# A requirements line that pins torch exactly, without a build label: ``torch==2.13.0``.
_TORCH_PIN = re.compile(r"torch\s*==\s*([0-9][0-9A-Za-z.!]*)", re.IGNORECASE)
# The fields of torch/version.py that tell its build: ``__version__ = '2.13.0+cpu'``, ``cuda: Optional[str] = None``.
_VERSION_FIELD = re.compile(r"^(__version__|cuda)\s*(?::[^=\n]*)?=\s*(.+?)\s*$", re.MULTILINE)

Progress = Callable[[BundleProgress], None]
"""Told how an install goes: waiting for the lock (step 0), each step as it begins, installed."""


# Run inside the bundle's interpreter: import each name, print {name: first line of the error};
# when torch imported, its version and the CUDA it was built with first.
_CHECK_SCRIPT = """\
import importlib, json, sys
missing = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as exc:
        text = (str(exc).strip().splitlines() or [""])[0]
        missing[name] = f"{type(exc).__name__}: {text}"[:200]
torch = sys.modules.get("torch")
if torch is not None and "torch" not in missing:
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    print("GYM_GUI_TORCH " + json.dumps({"version": str(getattr(torch, "__version__", "?")), "cuda": cuda}))
print("GYM_GUI_CHECK " + json.dumps(missing))
"""


class BundleDirectory:
    """The bundles under one directory (``Home.bundles_dir``): ``<bundles_dir>/<name>/`` each.

    A complete install is marked by ``<name>/.gym_gui_bundle.json``, written last with the
    hash of the bundle's inputs; installs of one bundle are serialised by an flock on
    ``<bundles_dir>/<name>.lock``, so two processes (CLI, daemon, ``make``) never build it at once.
    """

    def __init__(
        self, bundles_dir: Path, specs: Mapping[str, BundleSpec], source: Path | None = None
    ) -> None:
        """Manage ``bundles_dir`` with ``specs`` (the installed plugins' bundles:
        ``WorkerCatalog.bundle_directory``); ``source`` overrides :func:`source_root`."""
        self.bundles_dir = Path(bundles_dir).expanduser().resolve()
        self._specs = dict(specs)
        self._source = source
        self._freeze_cache: dict[tuple[str, str], list[str]] = {}
        self._cache_lock = threading.Lock()

    # ------------------------------------------------------------ paths and specs

    def spec(self, name: str) -> BundleSpec:
        """The spec of bundle ``name``.

        Raises:
            BundleError: for an unknown name, listing the known ones.
        """
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(sorted(self._specs)) or "none"
            raise BundleError(f"unknown bundle {name!r}; known bundles: {known}") from None

    def path(self, name: str) -> Path:
        """The bundle's venv directory (whether or not it exists)."""
        return self.bundles_dir / self.spec(name).name

    def python(self, name: str) -> Path:
        """The bundle's interpreter (whether or not it exists)."""
        return self.path(name) / "bin" / "python"

    def log_path(self, name: str) -> Path:
        """Where the last install of ``name`` wrote its commands and pip's output."""
        return self.bundles_dir / f"{self.spec(name).name}.install.log"

    def lock_path(self, name: str) -> Path:
        return self.bundles_dir / f"{self.spec(name).name}.lock"

    def marker_path(self, name: str) -> Path:
        return self.path(name) / MARKER

    def _resolve(self, relative: str) -> Path:
        path = Path(relative)
        if path.is_absolute():
            return path
        root = self._source if self._source is not None else source_root()
        return root / path

    def spec_hash(self, name: str) -> str:
        """SHA-256 of everything an install is built from: requirements text, extra steps, local packages, Python.

        Raises:
            BundleError: when the requirements file cannot be read.
        """
        spec = self.spec(name)
        digest = hashlib.sha256(self._requirements_text(name))
        payload = {
            "extra": [[step.description, *step.args] for step in spec.extra_steps],
            "local": [str(self._resolve(p)) for p in spec.local_packages],
            "python": sys.version.split()[0],
        }
        digest.update(json.dumps(payload, sort_keys=True).encode())
        return digest.hexdigest()

    def _requirements_text(self, name: str) -> bytes:
        """The bytes of bundle ``name``'s requirements file (none for a bundle without one).

        Raises:
            BundleError: when it cannot be read.
        """
        spec = self.spec(name)
        if spec.requirements is None:
            return b""
        requirements = self._resolve(spec.requirements)
        try:
            return requirements.read_bytes()
        except OSError as exc:
            raise BundleError(
                f"bundle {name}: cannot read its requirements file {requirements}: {exc.strerror}"
            ) from None

    def torch_pin(self, name: str) -> str:
        """The torch version bundle ``name``'s requirements pin (``torch==2.13.0``: ``2.13.0``).

        Raises:
            BundleError: when they do not pin torch exactly, so no build can be chosen.
        """
        for line in self._requirements_text(name).decode("utf-8", "replace").splitlines():
            match = _TORCH_PIN.fullmatch(line.split("#", 1)[0].strip())
            if match:
                return match.group(1)
        raise BundleError(
            f"bundle {name}: {self.spec(name).requirements} must pin torch exactly (a line "
            "`torch==X.Y.Z`, without +cpu or +cuXXX) for the install to choose its CPU or CUDA build"
        )

    # ------------------------------------------------------------ state

    def _read_marker(self, name: str) -> dict[str, Any] | None:
        try:
            return json_object(self.marker_path(name).read_text())
        except (OSError, ValueError):
            return None

    def status(self, name: str) -> BundleStatus:
        """Whether bundle ``name`` is completely installed from its current spec, with the reason in words."""
        path, python = self.path(name), self.python(name)
        hint = install_hint(name)

        torch: TorchBuild | None = None

        def result(installed: bool, reason: str) -> BundleStatus:
            return BundleStatus(name, installed, path, python, reason, torch)

        if not path.exists():
            return result(False, f"bundle {name} is not installed (no venv at {path}) — {hint}")
        marker = self._read_marker(name)
        if marker is not None and self.spec(name).torch_build:
            torch = _recorded_torch(marker) or self._torch_on_disk(name)
        if marker is None:
            return result(
                False,
                f"bundle {name} at {path} is incomplete: an install was interrupted or failed "
                f"(see {self.log_path(name)}) — {hint}",
            )
        try:
            current = self.spec_hash(name)
        except BundleError as exc:
            return result(False, str(exc))
        if marker.get("spec_hash") != current:
            return result(
                False,
                f"bundle {name} at {path} is out of date: its requirements changed since it was "
                f"installed on {_when(marker.get('installed_at'))} — {hint}",
            )
        if not python.exists():
            return result(False, f"bundle {name} at {path} has no interpreter at {python} — {hint}")
        return result(True, f"installed on {_when(marker.get('installed_at'))}")

    def _torch_on_disk(self, name: str) -> TorchBuild | None:
        """The torch build in bundle ``name``'s files (its ``torch/version.py``), read without importing it."""
        for version_py in sorted(self.path(name).glob("lib/python*/site-packages/torch/version.py")):
            fields: dict[str, object] = {}
            with contextlib.suppress(OSError, ValueError, SyntaxError):
                for key, value in _VERSION_FIELD.findall(version_py.read_text(encoding="utf-8")):
                    fields[key] = ast.literal_eval(value)
            build = _torch_build(fields.get("__version__"), fields.get("cuda"), recorded=False)
            if build is not None:
                return build
        return None

    def install_id(self, name: str) -> str:
        """What changes each time bundle ``name`` is installed again (its marker's spec hash and
        install time; "" while it has no marker): what is known of an install is kept under it."""
        marker = self._read_marker(name) or {}
        return f"{marker.get('spec_hash')}@{marker.get('installed_at')}" if marker else ""

    def installed(self, name: str) -> bool:
        """True when ``name`` has a completion marker matching its current spec and an interpreter."""
        return self.status(name).installed

    def list(self) -> builtins.list[BundleStatus]:
        """The status of every known bundle, by name."""
        return [self.status(name) for name in sorted(self._specs)]

    def require(self, name: str) -> BundleStatus:
        """The status of an installed bundle ``name``.

        Raises:
            BundleError: when it is not installed; the message says why and how to install it.
        """
        status = self.status(name)
        if not status.installed:
            raise BundleError(status.reason)
        return status

    # ------------------------------------------------------------ install

    def install(
        self,
        name: str,
        progress: Progress | None = None,
        force: bool = False,
        torch: TorchVariant | None = None,
    ) -> BundleStatus:
        """Build bundle ``name`` unless it is already installed (``force`` rebuilds it anyway).

        Steps, each announced to ``progress`` (phase ``installing``, step ``n`` of ``total``)
        before it runs: create the venv from the base interpreter, upgrade pip, install torch in
        the chosen build (a bundle with ``torch_build``: :meth:`_install_torch`), the requirements
        file, the extra pip steps, the local packages (editable, no deps), then check the imports
        and that torch is the build asked for. The completion marker, recording torch's build, is
        written only after all of them succeed, then ``progress`` hears ``installed``. An existing
        incomplete or out-of-date venv is removed first. While another process installs the same
        bundle, ``progress`` hears ``waiting`` (step 0) and this call waits for it, then returns
        without rebuilding when that install completed.

        ``torch`` chooses torch's build; None keeps the build an installed bundle holds (CPU for a
        new one). Asking for another build than the installed one rebuilds the bundle.

        Raises:
            BundleError: naming the failed step, the install log and the tail of its output (or
                the torch build found instead of the one asked for); no marker is left behind.
                Also when ``torch`` is given for a bundle that installs no torch.
        """
        spec = self.spec(name)
        if torch is not None and not spec.torch_build:
            raise BundleError(f"bundle {name} installs no torch: there is no CPU or CUDA build to choose")
        total = len(self._plan(spec, torch or TorchVariant.CPU, {}))
        self.bundles_dir.mkdir(parents=True, exist_ok=True)
        waiting = BundleProgress(name, 0, total, "waiting", f"waiting for another install of {name}")
        with install_lock(self.lock_path(name), lambda: _call(progress, waiting)):
            status = self.status(name)
            held = status.torch.variant if status.torch is not None else None
            if not force and status.installed and torch in (None, held):
                return status
            variant = torch or held or TorchVariant.CPU
            record: dict[str, Any] = {"variant": variant.value}  # what the torch step and the check find
            steps = self._plan(spec, variant, record)
            started = time.monotonic()
            spec_hash = self.spec_hash(name)
            path = self.path(name)
            # The marker goes first so that a crash anywhere below leaves "not installed".
            self.marker_path(name).unlink(missing_ok=True)
            if path.exists():
                shutil.rmtree(path)
            log_path = self.log_path(name)
            with open(log_path, "w", encoding="utf-8") as log:
                log.write(f"# gym_gui install of bundle {name} into {path}, {_when(time.time())}\n")
                log.flush()
                for number, (message, run) in enumerate(steps, start=1):
                    _call(progress, BundleProgress(name, number, total, "installing", message))
                    logger.info("bundle %s: %d/%d %s", name, number, total, message)
                    step_started = time.monotonic()
                    run(log, f"{number}/{total} {message}")
                    # Per-step times in the log show where a slow install spends them.
                    log.write(f"# done in {time.monotonic() - step_started:.1f}s\n")
                    log.flush()
            marker = {
                "name": name,
                "spec_hash": spec_hash,
                "installed_at": time.time(),
                "seconds": round(time.monotonic() - started, 1),
                "python": sys.version.split()[0],
            }
            if spec.torch_build:
                marker["torch"] = record
            tmp = self.marker_path(name).with_suffix(".tmp")
            tmp.write_text(json.dumps(marker, indent=2))
            os.replace(tmp, self.marker_path(name))
            logger.info("bundle %s installed at %s in %.1fs", name, path, marker["seconds"])
            _call(
                progress,
                BundleProgress(name, total, total, "installed", f"installed in {marker['seconds']}s"),
            )
            return self.status(name)

    def _plan(self, spec: BundleSpec, variant: TorchVariant, record: dict[str, Any]) -> builtins.list[Step]:
        """The install steps of ``spec``, in order, with torch's build ``variant``, then the import
        check; what torch's steps find goes into ``record``.

        Raises:
            BundleError: when a spec with ``torch_build`` does not pin torch exactly.
        """
        name = spec.name
        build = BundleBuild(spec, self.path(name), self.log_path(name), self.bundles_dir, self._resolve)
        steps = build.steps(self.torch_pin(name) if spec.torch_build else None, variant, record)

        def check(log: IO[str], label: str) -> None:
            result = self.check(name)
            log.write(f"\n## {label}\n{result.message}\n")
            log.flush()
            where = f"(install step {label}; log: {self.log_path(name)})"
            if not result.ok:
                raise BundleError(f"{result.message} {where}")
            if spec.torch_build:
                wrong = _wrong_build(name, variant, result.torch)
                if wrong is not None or result.torch is None:
                    raise BundleError(f"{wrong} {where}")
                record.update(version=result.torch.version, cuda=result.torch.cuda)

        steps.append(("checking imports" + (" and torch's build" if spec.torch_build else ""), check))
        return steps

    # ------------------------------------------------------------ inspect

    def check(self, name: str) -> CheckResult:
        """Import every module of the spec's ``check_imports`` in the bundle's interpreter.

        Never raises for a broken bundle: ``message`` says in one line what is missing and how
        to install it, e.g. ``bundle cleanrl: missing torch, cleanrl — run `gym-gui bundles install cleanrl```.
        """
        spec = self.spec(name)
        python = self.python(name)
        hint = install_hint(name)
        # A bundle whose install chooses torch's build always has torch checked, to tell the build.
        wanted = list(dict.fromkeys([*spec.check_imports, *(["torch"] if spec.torch_build else [])]))
        if not python.exists():
            return CheckResult(
                False, wanted, f"bundle {name}: not installed (no interpreter at {python}) — {hint}"
            )
        try:
            proc = self._in_bundle(name, "-c", _CHECK_SCRIPT, *wanted)
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = exc.strerror if isinstance(exc, OSError) else f"timed out after {CHECK_TIMEOUT:.0f}s"
            return CheckResult(
                False, wanted, f"bundle {name}: its interpreter {python} did not run ({why}) — {hint}"
            )
        missing: dict[str, str] | None = None
        torch: TorchBuild | None = None
        for line in proc.stdout.splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                if line.startswith("GYM_GUI_CHECK "):
                    missing = json.loads(line.removeprefix("GYM_GUI_CHECK "))
                elif line.startswith("GYM_GUI_TORCH "):
                    found = json.loads(line.removeprefix("GYM_GUI_TORCH "))
                    torch = _torch_build(found.get("version"), found.get("cuda"))
        if missing is None:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return CheckResult(
                False,
                wanted,
                f"bundle {name}: the import check crashed (exit {proc.returncode}: {last}) — {hint}",
            )
        if not missing:
            # A bundle whose torch was swapped after its install no longer holds the build it records.
            asked = _recorded_variant(self._read_marker(name)) if spec.torch_build else None
            wrong = _wrong_build(name, asked, torch) if asked is not None else None
            if wrong is not None:
                fix = f"run `gym-gui bundles install {name} --{asked} --force`"
                return CheckResult(False, [], f"{wrong} — {fix}", torch)
            built = f"; {torch.text()}" if torch is not None else ""
            return CheckResult(
                True, [], f"bundle {name}: ok ({', '.join(wanted)} import{built}) at {self.path(name)}", torch
            )
        names = list(missing)
        # Name the first failure's cause: a module that is present but broken reads differently from absent.
        first = missing[names[0]]
        return CheckResult(False, names, f"bundle {name}: missing {', '.join(names)} ({first}) — {hint}")

    def _in_bundle(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``python -I ARGS`` in bundle ``name``'s interpreter, isolated from this process's packages.

        Raises:
            OSError / subprocess.TimeoutExpired: it did not run, or not within CHECK_TIMEOUT.
        """
        return subprocess.run(
            [str(self.python(name)), "-I", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=child_env(self.path(name)),
            cwd=self.path(name),
            timeout=CHECK_TIMEOUT,
            check=False,
        )

    def freeze(self, name: str) -> builtins.list[str]:
        """``pip freeze`` of the installed bundle ``name``, cached until it is installed again.

        Raises:
            BundleError: when the bundle is not installed (saying how to install it) or pip fails.
        """
        self.require(name)
        key = (name, self.install_id(name))
        with self._cache_lock:
            cached = self._freeze_cache.get(key)
        if cached is not None:
            return list(cached)
        try:
            proc = self._in_bundle(name, "-m", "pip", "freeze")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BundleError(f"bundle {name}: `pip freeze` did not run: {exc}") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise BundleError(f"bundle {name}: `pip freeze` failed ({last}) — {install_hint(name)}")
        lines = [line for line in proc.stdout.splitlines() if line.strip()]
        with self._cache_lock:
            self._freeze_cache[key] = lines
        return list(lines)


def _torch_build(version: object, cuda: object, recorded: bool = True) -> TorchBuild | None:
    """A :class:`TorchBuild` of what a check, a manifest or torch's files say, or None when they say no version."""
    if not isinstance(version, str) or not version:
        return None
    return TorchBuild(version, cuda if isinstance(cuda, str) and cuda else None, recorded)


def _recorded_torch(marker: Mapping[str, Any]) -> TorchBuild | None:
    """The torch build a bundle's manifest recorded at install, or None when it predates the record."""
    record = marker.get("torch")
    return _torch_build(record.get("version"), record.get("cuda")) if isinstance(record, dict) else None


def _recorded_variant(marker: Mapping[str, Any] | None) -> TorchVariant | None:
    """The torch build a bundle's manifest says was asked for at install, or None when it says none."""
    record = (marker or {}).get("torch")
    variant = record.get("variant") if isinstance(record, dict) else None
    return TorchVariant(variant) if variant in set(TorchVariant) else None


def _wrong_build(name: str, asked: TorchVariant, found: TorchBuild | None) -> str | None:
    """One line saying bundle ``name``'s torch is not the ``asked`` build, or None when it is."""
    if found is None:
        return f"bundle {name}: torch's {asked.label} build was asked for, but torch did not import"
    if found.variant is asked:
        return None
    return (
        f"bundle {name}: torch's {asked.label} build was asked for, but it holds {found.text()}: "
        f"torch.version.cuda is {found.cuda!r}"
    )


def _call(progress: Progress | None, update: BundleProgress) -> None:
    if progress is not None:
        progress(update)


def _when(stamp: object) -> str:
    if not isinstance(stamp, int | float):
        return "an unknown date"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
