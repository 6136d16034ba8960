"""Installing an environment family: its packages into gym_gui's own environment, and its extra into the
bundles of the worker kinds that train on it (`gym-gui envs install`, the picker's Install action)."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import BundleProgress
from gym_gui.envs import catalog
from gym_gui.workers.bundle_directory import BundleDirectory
from gym_gui.workers.bundle_install import STEP_TIMEOUT, child_env, install_lock, log_tail

logger = logging.getLogger(__name__)

APP = "app"
"""The name progress gives gym_gui's own environment, beside the bundles'."""


class FamilyInstallError(GymGuiError):
    """A family could not be installed; the message names the family and the cause in one line."""


Progress = Callable[[BundleProgress], None]


def install_family(name: str, bundles: BundleDirectory, progress: Progress | None = None) -> list[str]:
    """Install family ``name`` here: its packages into gym_gui's environment (unless it imports
    already), then its extra into each installed bundle that trains on it. Returns one line per
    place, saying what was done there.

    Nothing is installed but what the family declares; a failed pip install removes every package
    it added before raising, so the environment is as it was.

    Raises:
        ConfigError: an unknown family.
        FamilyInstallError: a family this machine cannot install (its one-line reason), or the
            first line of pip's error.
    """
    family = catalog.env_family(name)
    if family.unavailable:
        raise FamilyInstallError(f"family {name} cannot be installed here: {family.unavailable}")
    held = {status.name: status.installed for status in bundles.list()}
    extras = {bundle: extra for bundle, extra in family.bundle_extras.items() if bundle in held}
    total = 1 + len(extras)

    def say(place: str, step: int, phase: str, message: str) -> None:
        if progress is not None:
            progress(BundleProgress(place, step, total, phase, message))

    done: list[str] = []
    if not family.packages:
        done.append(f"{family.title} comes with gym_gui: nothing to install in gym_gui's environment")
    elif not catalog.import_failure(name):  # its module imports: nothing to mend
        done.append(f"{family.title} is installed in gym_gui's environment")
    else:
        say(APP, 1, "installing", f"installing {', '.join(family.packages)} into gym_gui's environment")
        added = _pip_install(name, family.packages, family.install_options)
        done.append(f"installed {', '.join(added) or 'nothing new'} into gym_gui's environment")
    for step, (bundle, extra) in enumerate(extras.items(), start=2):
        if not held[bundle]:
            done.append(
                f"bundle {bundle} is not installed: `gym-gui bundles install {bundle} --extra {extra}` "
                f"installs it with {family.title}"
            )
            continue
        say(bundle, step, "installing", f"adding extra {extra} to bundle {bundle}")
        bundles.install(bundle, extras=(extra,), progress=progress)
        done.append(f"bundle {bundle} has extra {extra}")
    say(APP, total, "installed", f"{family.title} installed")
    return done


def _pip_install(name: str, packages: tuple[str, ...], options: tuple[str, ...]) -> list[str]:
    """Install ``packages`` with pip ``options`` into this interpreter's environment, under the family's
    lock; return the distributions added (``name==version``) and record them for `make install`.

    pip's exit code says whether it installed: after installing, it may print an ``ERROR:`` line about
    a package of the environment whose pin it does not meet (NLE's ``gymnasium==1.2.0``, installed with
    ``--no-deps``) and still exit 0.
    """
    folder = catalog.records_dir()
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / f"{name}.log"
    with install_lock(folder / f"{name}.lock", lambda: None):
        if not catalog.import_failure(name):  # another process installed it while this one waited
            return []
        before = _distributions()
        command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *options, *packages]
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"\n## {time.strftime('%Y-%m-%d %H:%M:%S')} $ {' '.join(command)}\n")
            log.flush()
            start = log.tell()
            code = _run(command, log)
        added = sorted(f"{dist}=={version}" for dist, version in _distributions().items() - before.items())
        if code != 0:
            if added:
                _run([sys.executable, "-m", "pip", "uninstall", "--yes", *(a.split("==")[0] for a in added)])
            raise FamilyInstallError(
                f"family {name}: pip could not install {' '.join(packages)}: {_first_error(log_path, start)} "
                f"(nothing was kept; log: {log_path})"
            )
        (folder / f"{name}.txt").write_text(
            f"# Added to gym_gui's environment by `gym-gui envs install {name}`; `make install` keeps it.\n"
            + "".join(f"{line}\n" for line in added),
            encoding="utf-8",
        )
    # The family's module now imports: forget the failure this process cached, and the finder caches.
    importlib.invalidate_caches()
    catalog.forget_installed()
    logger.info("family %s: installed %s", name, ", ".join(added))
    return added


def _run(command: list[str], log: IO[str] | int = subprocess.DEVNULL) -> int | None:
    try:
        return subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env(Path(sys.prefix)),
            timeout=STEP_TIMEOUT,
            check=False,
        ).returncode
    except subprocess.TimeoutExpired:
        return None


def _distributions() -> dict[str, str]:
    """The distributions installed in this interpreter's environment, by lower-case name."""
    return {
        dist.metadata["Name"].lower(): dist.version
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"]
    }


def _first_error(log_path: Path, start: int) -> str:
    """pip's first ``ERROR:`` line since ``start``, else the last line it wrote."""
    lines = log_tail(log_path, start).splitlines()
    errors = [line.strip() for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["(no output)"])[0]
