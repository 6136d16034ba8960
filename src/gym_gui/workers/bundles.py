"""Worker bundles, the pinned virtual environments workers run in: what one is (its spec, torch's
build in it, its status), where their sources are, and gym_gui's own environment.

The directory that holds them is :mod:`gym_gui.workers.bundle_directory`; building one,
:mod:`gym_gui.workers.bundle_install`.
"""

from __future__ import annotations

import enum
import functools
import importlib.metadata
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gym_gui.core.errors import GymGuiError
from gym_gui.storage.run_dir import RunEnvironment

MARKER = ".gym_gui_bundle.json"
"""File written last by a complete install; a bundle without it (or with a stale hash) is not installed."""


class BundleError(GymGuiError):
    """A bundle is unknown, missing, broken or could not be installed; the message says what to run."""


@dataclass(frozen=True)
class PipStep:
    """One extra ``pip install`` of a bundle, run after its requirements file (e.g. a --no-deps package)."""

    description: str
    args: tuple[str, ...]


class TorchVariant(enum.StrEnum):
    """Which build of torch a bundle gets: CPU-only (the default) or CUDA (PyPI's Linux build, several GB)."""

    CPU = "cpu"
    CUDA = "cuda"

    @property
    def label(self) -> str:
        return self.value.upper()


@dataclass(frozen=True)
class TorchBuild:
    """The torch in a bundle: its version and the CUDA it was built with (``torch.version.cuda``; None: CPU-only).

    ``recorded`` is False when it was read from the bundle's files because its manifest (the
    completion marker) predates the record of torch's build.
    """

    version: str
    cuda: str | None
    recorded: bool = True

    @property
    def variant(self) -> TorchVariant:
        return TorchVariant.CUDA if self.cuda else TorchVariant.CPU

    def text(self) -> str:
        """``torch 2.13.0+cpu (CPU build)`` or ``torch 2.13.0 (CUDA 12.8 build)``."""
        return f"torch {self.version} ({f'CUDA {self.cuda}' if self.cuda else 'CPU'} build)"


@dataclass(frozen=True)
class BundleExtra:
    """An optional part of a bundle, installed into it only when the user asks (CleanRL's ``atari``).

    ``requirements`` is a requirements file beside the bundle's (a relative path is taken from the
    source checkout, as :class:`BundleSpec`'s are), installed with the bundle's own requirements as
    pip constraints, so an extra never moves a package the bundle pins; None: the bundle's own
    requirements already hold it (the extra is recognised and always installed). ``families`` are
    the environment families it brings (gym_gui's family names, e.g. ``atari``), so an app-level
    install of a family finds the bundles to add it to. ``unavailable`` says in one line why it
    cannot be installed on this machine (None: it can).
    """

    name: str
    requirements: str | None
    description: str
    families: tuple[str, ...] = ()
    check_imports: tuple[str, ...] = ()
    unavailable: str | None = None


@dataclass(frozen=True)
class BundleSpec:
    """What a bundle holds.

    Relative paths (``requirements``, ``local_packages``) are taken from the source checkout
    (:func:`source_root`); absolute ones are used as they are. With ``torch_build``, the
    requirements pin torch (``torch==X``) and the install chooses its build (:class:`TorchVariant`),
    installing it in a step of its own before them. ``extras`` are the optional parts a user may
    add to it (:class:`BundleExtra`).
    """

    name: str
    requirements: str | None
    extra_steps: tuple[PipStep, ...] = ()
    local_packages: tuple[str, ...] = ()
    check_imports: tuple[str, ...] = ()
    torch_build: bool = False
    extras: tuple[BundleExtra, ...] = ()

    def extra(self, name: str) -> BundleExtra:
        """The extra ``name`` this bundle offers.

        Raises:
            BundleError: for an extra it does not offer, listing the ones it does.
        """
        for extra in self.extras:
            if extra.name == name:
                return extra
        offered = ", ".join(sorted(extra.name for extra in self.extras)) or "none"
        raise BundleError(f"bundle {self.name} offers no extra {name!r}; its extras: {offered}")


def install_hint(name: str, extra: str | None = None) -> str:
    """The command that installs bundle ``name`` (with its ``extra``), quoted for an error message."""
    return f"run `gym-gui bundles install {name}{f' --extra {extra}' if extra else ''}`"


def source_root() -> Path:
    """The source checkout gym_gui runs from: the directory holding pyproject.toml, sdk/ and workers/
    (each kind's folder there holds its bundle's requirements file).

    Raises:
        BundleError: when gym_gui is not installed from a source checkout (e.g. from a
            wheel), since bundles install the SDK and workers from that tree.
    """
    package = Path(__file__).resolve().parent.parent  # src/gym_gui
    for candidate in package.parents:
        if all((candidate / part).exists() for part in ("pyproject.toml", "sdk", "workers")):
            return candidate
    raise BundleError(
        f"gym_gui at {package} is not installed from a source checkout (no directory above it holds "
        "pyproject.toml, sdk/ and workers/); bundles are built from that tree: clone gym_gui "
        "and install it with `pip install -e .` (or `make install`)"
    )


@dataclass(frozen=True)
class BundleStatus:
    """Whether a bundle is installed, where, and why (not); for a bundle with torch, which build it holds."""

    name: str
    installed: bool
    path: Path
    python: Path
    reason: str
    torch: TorchBuild | None = None
    extras: tuple[str, ...] = ()
    """The extras it holds, installed from their current requirements (those its own requirements
    hold included), by name; none while it is not installed."""
    extras_out_of_date: tuple[str, ...] = ()
    """The extras installed from requirements that changed since: the next install brings them up to date."""


@dataclass(frozen=True)
class CheckResult:
    """What a bundle's interpreter could not import, and the torch it imported; ``message`` says it in one line."""

    ok: bool
    missing: list[str] = field(default_factory=list)
    message: str = ""
    torch: TorchBuild | None = None


@functools.lru_cache(maxsize=1)
def app_packages() -> tuple[str, ...]:
    """The exact package set of gym_gui's own environment (``pip freeze`` form)."""
    names = {
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"]
    }
    return tuple(sorted(names, key=str.lower))


def app_environment(bundle: str) -> RunEnvironment:
    """gym_gui's own interpreter and package set, as a new run's manifest first records it.

    A worker that runs in a bundle of its own replaces it with that bundle's when it launches.
    """
    return RunEnvironment(
        bundle=bundle,
        python=sys.version.split()[0],
        executable=sys.executable,
        platform=platform.platform(),
        packages=list(app_packages()),
    )
