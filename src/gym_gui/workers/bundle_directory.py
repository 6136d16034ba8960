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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from gym_gui_sdk.json_object import json_object

from gym_gui.core.records import BundleProgress
from gym_gui.workers.bundle_install import BundleBuild, Step, child_env, first_error, install_lock
from gym_gui.workers.bundles import (
    MARKER,
    BundleError,
    BundleExtra,
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

# An extra's install steps: its requirements, its imports.
_EXTRA_STEPS = 2

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
    The marker also records the extras installed into the bundle after it (:class:`BundleExtra`),
    each with the hash of its requirements file and the packages it added.
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

    def extras_for(self, family: str) -> builtins.list[tuple[str, BundleExtra]]:
        """The extras that bring environment family ``family`` (``atari``), each with its bundle's name,
        by bundle: what an install of the family adds to the bundles of the kinds that train on it
        (each with ``install(bundle, extras=[extra.name])``)."""
        return [
            (name, extra)
            for name, spec in sorted(self._specs.items())
            for extra in spec.extras
            if family in extra.families
        ]

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

    def extra_hash(self, name: str, extra: BundleExtra) -> str:
        """SHA-256 of what bundle ``name``'s ``extra`` is installed from: its requirements text and Python.

        Raises:
            BundleError: when its requirements file cannot be read.
        """
        digest = hashlib.sha256(self._file_bytes(name, extra.requirements))
        digest.update(sys.version.split()[0].encode())
        return digest.hexdigest()

    def _requirements_text(self, name: str) -> bytes:
        """The bytes of bundle ``name``'s requirements file (none for a bundle without one).

        Raises:
            BundleError: when it cannot be read.
        """
        return self._file_bytes(name, self.spec(name).requirements)

    def _file_bytes(self, name: str, relative: str | None) -> bytes:
        """The bytes of bundle ``name``'s requirements file ``relative`` (none for None).

        Raises:
            BundleError: when it cannot be read.
        """
        if relative is None:
            return b""
        requirements = self._resolve(relative)
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
        held, stale = self._extras_held(name, marker)
        return replace(
            result(True, f"installed on {_when(marker.get('installed_at'))}"),
            extras=held,
            extras_out_of_date=stale,
        )

    def _extras_held(self, name: str, marker: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The extras installed bundle ``name`` holds from their current requirements (those its own
        requirements hold included), and those installed from requirements that changed since."""
        recorded = _marker_extras(marker)
        current: builtins.list[str] = []
        stale: builtins.list[str] = []
        for extra in self.spec(name).extras:
            record = recorded.get(extra.name)
            if extra.requirements is None:
                current.append(extra.name)
            elif record is not None:
                try:
                    fresh = record.get("hash") == self.extra_hash(name, extra)
                except BundleError:
                    fresh = False
                (current if fresh else stale).append(extra.name)
        return tuple(sorted(current)), tuple(sorted(stale))

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
        """What changes each time bundle ``name`` is installed again or an extra is added to it (its
        marker's spec hash and install time, and each extra's install time; "" while it has no
        marker): what is known of an install is kept under it."""
        marker = self._read_marker(name) or {}
        if not marker:
            return ""
        added = "".join(
            f"+{extra}@{record.get('installed_at')}"
            for extra, record in sorted(_marker_extras(marker).items())
        )
        return f"{marker.get('spec_hash')}@{marker.get('installed_at')}{added}"

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
        extras: Iterable[str] = (),
    ) -> BundleStatus:
        """Build bundle ``name`` unless it is already installed (``force`` rebuilds it anyway), and add
        the ``extras`` it does not hold yet.

        Steps, each announced to ``progress`` (phase ``installing``, step ``n`` of ``total``)
        before it runs: create the venv from the base interpreter, upgrade pip, install torch in
        the chosen build (a bundle with ``torch_build``: :meth:`_install_torch`), the requirements
        file, the extra pip steps, the local packages (editable, no deps), then check the imports
        and that torch is the build asked for. The completion marker, recording torch's build, is
        written only after all of them succeed. An existing incomplete or out-of-date venv is
        removed first. Then each extra to add (:meth:`_add_extra`: two steps, its requirements and
        its imports), each recorded in the marker once it is in; the extras the marker recorded are
        added again after a rebuild, and brought up to date when their requirements changed. Then
        ``progress`` hears ``installed``. While another process installs the same bundle,
        ``progress`` hears ``waiting`` (step 0) and this call waits for it, then returns without
        rebuilding when that install completed.

        ``torch`` chooses torch's build; None keeps the build an installed bundle holds (CPU for a
        new one). Asking for another build than the installed one rebuilds the bundle.

        Raises:
            BundleError: naming the failed step, the install log and the tail of its output (or
                the torch build found instead of the one asked for); no marker is left behind.
                An extra that failed names itself and pip's first error line; nothing of it is
                kept, and the marker is as it was before it. Also when ``torch`` is given for a
                bundle that installs no torch, and, before anything is done, for an extra the
                bundle does not offer or that cannot be installed on this machine.
        """
        spec = self.spec(name)
        if torch is not None and not spec.torch_build:
            raise BundleError(f"bundle {name} installs no torch: there is no CPU or CUDA build to choose")
        asked = [spec.extra(extra) for extra in dict.fromkeys(extras)]
        for extra in asked:
            if extra.unavailable:
                raise BundleError(
                    f"bundle {name}: the {extra.name} extra cannot be installed here: {extra.unavailable}"
                )
        base_steps = len(self._plan(spec, torch or TorchVariant.CPU, {}))
        self.bundles_dir.mkdir(parents=True, exist_ok=True)
        waiting = BundleProgress(name, 0, base_steps, "waiting", f"waiting for another install of {name}")
        with install_lock(self.lock_path(name), lambda: _call(progress, waiting)):
            status = self.status(name)
            held = status.torch.variant if status.torch is not None else None
            rebuild = force or not status.installed or torch not in (None, held)
            recorded = self._recorded_extras(name)
            wanted = [*asked, *(extra for extra in spec.extras if extra.name in recorded)]
            # An extra its bundle's requirements hold is there with the bundle; a current one stays.
            keep = () if rebuild else status.extras
            adding = [
                extra
                for extra in dict.fromkeys(wanted)
                if extra.requirements is not None and extra.name not in keep and not extra.unavailable
            ]
            if not rebuild and not adding:
                return status
            started = time.monotonic()
            total = (base_steps if rebuild else 0) + _EXTRA_STEPS * len(adding)
            number = 0
            if rebuild:
                variant = torch or held or TorchVariant.CPU
                number = self._build(name, variant, progress, total)
            with open(self.log_path(name), "a", encoding="utf-8") as log:
                for extra in adding:
                    number = self._add_extra(name, extra, log, progress, number, total)
            seconds = round(time.monotonic() - started, 1)
            logger.info("bundle %s installed at %s in %.1fs", name, self.path(name), seconds)
            _call(progress, BundleProgress(name, total, total, "installed", f"installed in {seconds}s"))
            return self.status(name)

    def _build(self, name: str, variant: TorchVariant, progress: Progress | None, total: int) -> int:
        """Build bundle ``name``'s venv afresh with torch's build ``variant`` (steps 1 … of ``total``)
        and write its marker, recording no extra; returns the number of the last step run."""
        spec = self.spec(name)
        record: dict[str, Any] = {"variant": variant.value}  # what the torch step and the check find
        steps = self._plan(spec, variant, record)
        started = time.monotonic()
        spec_hash = self.spec_hash(name)
        path = self.path(name)
        # The marker goes first so that a crash anywhere below leaves "not installed".
        self.marker_path(name).unlink(missing_ok=True)
        if path.exists():
            shutil.rmtree(path)
        with open(self.log_path(name), "w", encoding="utf-8") as log:
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
        marker: dict[str, Any] = {
            "name": name,
            "spec_hash": spec_hash,
            "installed_at": time.time(),
            "seconds": round(time.monotonic() - started, 1),
            "python": sys.version.split()[0],
        }
        if spec.torch_build:
            marker["torch"] = record
        self._write_marker(name, marker)
        return len(steps)

    def _write_marker(self, name: str, marker: Mapping[str, Any]) -> None:
        """Replace bundle ``name``'s marker with ``marker`` at once (a crash leaves the old one or the new)."""
        tmp = self.marker_path(name).with_suffix(".tmp")
        tmp.write_text(json.dumps(marker, indent=2))
        os.replace(tmp, self.marker_path(name))

    def _recorded_extras(self, name: str) -> dict[str, dict[str, Any]]:
        """The extras bundle ``name``'s marker records, by name, current or not."""
        return _marker_extras(self._read_marker(name) or {})

    def _add_extra(
        self, name: str, extra: BundleExtra, log: IO[str], progress: Progress | None, number: int, total: int
    ) -> int:
        """Install ``extra`` into installed bundle ``name`` (steps ``number + 1`` and ``+ 2`` of
        ``total``) and record it in the marker; returns the number of its last step.

        Its requirements are installed with every package the bundle holds pinned as a constraint
        (the packages this extra added before excepted), so the extra cannot move one; then its
        imports are checked. When either fails, or anything interrupts them, what it added is
        uninstalled, what it changed is put back, and the marker is left as it was.

        Raises:
            BundleError: in one line, naming the extra and the first line of pip's error (or of
                the failed import), and the install log.
        """
        assert extra.requirements is not None
        requirements = self._resolve(extra.requirements)
        extra_hash = self.extra_hash(name, extra)
        build = BundleBuild(
            self.spec(name), self.path(name), self.log_path(name), self.bundles_dir, self._resolve
        )
        previous = self._recorded_extras(name).get(extra.name, {})
        before = self._distributions(name)
        # Packages this extra added at an earlier install may move to its new pins.
        own = {
            _canonical(entry.split("==")[0])
            for entry in previous.get("added") or []
            if isinstance(entry, str)
        }
        constraints = self.bundles_dir / f"{name}.{extra.name}.constraints.txt"
        constraints.write_text(
            "".join(f"{dist}=={version}\n" for dist, version in sorted(before.items()) if dist not in own)
        )
        checks = ", ".join(extra.check_imports) or "none"
        steps = (
            f"installing the {extra.name} extra ({extra.requirements})",
            f"checking the {extra.name} extra's imports ({checks})",
        )
        log.write(f"\n# gym_gui install of the {extra.name} extra into bundle {name}, {_when(time.time())}\n")
        failure: str | None = None
        try:
            number += 1
            _call(progress, BundleProgress(name, number, total, "installing", steps[0]))
            start = log.tell()
            command = [*build.pip(), "install", "-r", str(requirements), "-c", str(constraints)]
            if not build.run(command, log, f"{number}/{total} {steps[0]}", check=False):
                failure = first_error(self.log_path(name), start)
            else:
                number += 1
                _call(progress, BundleProgress(name, number, total, "installing", steps[1]))
                result = self._imports(name, extra.check_imports)
                log.write(f"\n## {number}/{total} {steps[1]}\n{result or 'ok'}\n")
                log.flush()
                failure = result
        except BaseException:
            self._undo(name, before, build, log)
            raise
        finally:
            constraints.unlink(missing_ok=True)
        if failure is not None:
            self._undo(name, before, build, log)
            raise BundleError(
                f"bundle {name}: the {extra.name} extra was not installed, and nothing of it was kept: "
                f"{failure} (log: {self.log_path(name)})"
            )
        after = self._distributions(name)
        marker = self._read_marker(name) or {}
        extras = self._recorded_extras(name)
        extras[extra.name] = {
            "hash": extra_hash,
            "installed_at": time.time(),
            "added": sorted(
                f"{dist}=={version}" for dist, version in after.items() if before.get(dist) != version
            ),
        }
        self._write_marker(name, {**marker, "extras": extras})
        return number

    def _distributions(self, name: str) -> dict[str, str]:
        """Every distribution installed in bundle ``name`` but the editable ones, by canonical name: its version.

        Raises:
            BundleError: when pip cannot list them.
        """
        try:
            proc = self._in_bundle(name, "-m", "pip", "list", "--format=json", "--disable-pip-version-check")
            listed = json.loads(proc.stdout) if proc.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError):
            listed = None
        if not isinstance(listed, list):
            raise BundleError(
                f"bundle {name}: `pip list` did not answer in {self.path(name)} — {install_hint(name)}"
            )
        return {
            _canonical(entry["name"]): str(entry["version"])
            for entry in listed
            if isinstance(entry, dict) and "name" in entry and not entry.get("editable_project_location")
        }

    def _undo(self, name: str, before: Mapping[str, str], build: BundleBuild, log: IO[str]) -> None:
        """Put bundle ``name``'s packages back as ``before`` lists them: uninstall the ones added since,
        reinstall (without dependencies) the ones whose version changed."""
        after = self._distributions(name)
        added = sorted(dist for dist in after if dist not in before)
        changed = sorted(
            f"{dist}=={before[dist]}" for dist in after if dist in before and after[dist] != before[dist]
        )
        pip = build.pip()
        if added:
            build.run([*pip, "uninstall", "--yes", *added], log, "removing what the failed extra added")
        if changed:
            build.run(
                [*pip, "install", "--no-deps", *changed], log, "putting back what the failed extra changed"
            )

    def _imports(self, name: str, modules: Iterable[str]) -> str | None:
        """None when bundle ``name``'s interpreter imports every module of ``modules``, else the first
        failure in one line."""
        wanted = list(modules)
        if not wanted:
            return None
        try:
            proc = self._in_bundle(name, "-c", _CHECK_SCRIPT, *wanted)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"its interpreter did not run: {exc}"
        for line in proc.stdout.splitlines():
            if line.startswith("GYM_GUI_CHECK "):
                with contextlib.suppress(ValueError):
                    missing = json.loads(line.removeprefix("GYM_GUI_CHECK "))
                    if not missing:
                        return None
                    module, why = next(iter(missing.items()))
                    return f"{module} does not import ({why})"
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"the import check crashed (exit {proc.returncode}: {last})"

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


def _marker_extras(marker: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The extras a bundle's marker records (each ``{"hash", "installed_at", "added"}``), by name."""
    recorded = marker.get("extras")
    if not isinstance(recorded, dict):
        return {}
    return {extra: record for extra, record in recorded.items() if isinstance(record, dict)}


def _canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): ``Opencv_Python`` is ``opencv-python``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _call(progress: Progress | None, update: BundleProgress) -> None:
    if progress is not None:
        progress(update)


def _when(stamp: object) -> str:
    if not isinstance(stamp, int | float):
        return "an unknown date"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
