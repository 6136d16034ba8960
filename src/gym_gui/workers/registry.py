"""The worker catalog: the worker kinds installed as plugins (entry point group ``gym_gui.workers``).

A plugin that fails to import, is not a :class:`WorkerPlugin`, or declares a kind (or a bundle)
another plugin already took is kept as a :class:`BrokenWorker` with its error: the roster and
``gym-gui workers`` list it greyed, and nothing else is affected.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gym_gui.core import wandb_auth
from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError
from gym_gui.core.plugins import load_plugins
from gym_gui.core.workers import WorkerSpec
from gym_gui.workers.api import WorkerPlugin
from gym_gui.workers.bundle_directory import BundleDirectory
from gym_gui.workers.bundles import BundleSpec, BundleStatus

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "gym_gui.workers"
# The module a bundle that serves TensorBoard checks it can import.
TENSORBOARD = "tensorboard"


@dataclass(frozen=True)
class BrokenWorker:
    """An installed worker plugin that cannot be used, and why."""

    name: str  # the entry point's name
    source: str  # ``distribution: module:object``
    error: str


@dataclass(frozen=True)
class RosterEntry:
    """One line of the roster: a usable (or not yet available) kind, or a broken plugin."""

    kind: str
    display_name: str
    available: bool
    reason: str  # why it is unavailable or broken; empty when it can run
    spec: WorkerSpec | None  # None for a broken plugin


class WorkerCatalog:
    """The worker kinds of this installation, in roster order."""

    def __init__(self, plugins: Iterable[WorkerPlugin], broken: Iterable[BrokenWorker] = ()) -> None:
        ordered = sorted(plugins, key=lambda p: (p.spec.rank, p.spec.display_name.lower()))
        self._plugins = {plugin.kind: plugin for plugin in ordered}
        self.broken = tuple(broken)

    def __contains__(self, kind: object) -> bool:
        return kind in self._plugins

    @property
    def kinds(self) -> list[str]:
        return list(self._plugins)

    def plugins(self) -> list[WorkerPlugin]:
        return list(self._plugins.values())

    def scripts_kind(self) -> str | None:
        """The kind whose runs are chosen from a list of scripts (algorithms), first in the roster when
        several are (CleanRL's: the others are named with --worker); None when none is installed."""
        plugins = [plugin for plugin in self._plugins.values() if plugin.form.variant_label]
        if not plugins:
            return None
        return min(plugins, key=lambda plugin: (plugin.spec.rank, plugin.spec.kind)).spec.kind

    def return_metric(self, kind: str) -> str:
        """The metric tag of ``kind``'s episodic returns (``WorkerSpec.return_metric``); "" for a kind
        that has none (its episodes' total rewards are its returns) or that is not installed."""
        plugin = self._plugins.get(kind)
        return plugin.spec.return_metric if plugin is not None else ""

    def reference_metrics(self, kind: str) -> dict[str, str]:
        """``kind``'s reference lines (``WorkerSpec.reference_metrics``): curve tag → the tag whose latest
        value is drawn across the curve's chart; empty for a kind without any or not installed."""
        plugin = self._plugins.get(kind)
        return dict(plugin.spec.reference_metrics) if plugin is not None else {}

    def plugin(self, kind: str) -> WorkerPlugin:
        """The plugin of ``kind``.

        Raises:
            ConfigError: naming the field, the kind and the kinds installed (and a broken plugin
                of that name, with its error).
        """
        try:
            return self._plugins[kind]
        except KeyError:
            pass
        for broken in self.broken:
            if broken.name == kind:
                raise ConfigError(f"field 'worker': the {kind!r} worker plugin is broken: {broken.error}")
        known = ", ".join(sorted(self._plugins)) or "none"
        raise ConfigError(f"field 'worker': unknown worker kind {kind!r}; installed kinds: {known}")

    def spec(self, kind: str) -> WorkerSpec:
        return self.plugin(kind).spec

    def bundles(self) -> dict[str, BundleSpec]:
        """Every bundle a plugin declares, by name."""
        return {p.bundle.name: p.bundle for p in self._plugins.values() if p.bundle is not None}

    def bundle_directory(self, bundles_dir: Path) -> BundleDirectory:
        """The bundles under ``bundles_dir`` that this installation's plugins declare."""
        return BundleDirectory(bundles_dir, self.bundles())

    def bundle_status(self, kind: str, bundles_dir: Path) -> BundleStatus | None:
        """The bundle ``kind``'s workers run in (its interpreter, installed or not), or None when they
        run in gym_gui's own environment. Tools a run's files need (TensorBoard, wandb) come from it."""
        bundle = self.plugin(kind).bundle
        return None if bundle is None else self.bundle_directory(bundles_dir).status(bundle.name)

    def tensorboard_bundle(self, kind: str, bundles_dir: Path) -> BundleStatus | None:
        """The bundle whose TensorBoard serves the event files of a run of ``kind``: its own when it
        holds TensorBoard (its ``check_imports`` name it), else the first installed bundle that does
        (gym_gui's own environment has none: a random, human or operator run's exported event files
        are served by another kind's bundle), else the first one that would, not installed (its
        status says how to install it); None when no installed kind's bundle holds TensorBoard."""
        holding = sorted(name for name, spec in self.bundles().items() if TENSORBOARD in spec.check_imports)
        own = self.plugin(kind).bundle
        if own is not None and own.name in holding:
            holding = [own.name]
        directory = self.bundle_directory(bundles_dir)
        statuses = [directory.status(name) for name in holding]
        return next((status for status in statuses if status.installed), statuses[0] if statuses else None)

    def roster(self) -> list[RosterEntry]:
        """Every kind in roster order, then the broken plugins."""
        entries = [
            RosterEntry(p.kind, p.spec.display_name, p.spec.available, p.spec.unavailable_reason, p.spec)
            for p in self._plugins.values()
        ]
        entries += [
            RosterEntry(b.name, b.name, False, f"broken plugin: {b.error}", None) for b in self.broken
        ]
        return entries


def load_catalog(entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> WorkerCatalog:
    """Load every worker plugin (default: the installed entry points of :data:`ENTRY_POINT_GROUP`)."""
    plugins: dict[str, WorkerPlugin] = {}
    owners: dict[str, str] = {}  # kind or bundle → the source that took it
    broken: list[BrokenWorker] = []
    for load in load_plugins(ENTRY_POINT_GROUP, entry_points):
        plugin = load.value
        error = load.error or _conflict(plugin, owners)
        if error:
            log.info("worker plugin %s (%s): %s", load.name, load.source, error)
            broken.append(BrokenWorker(load.name, load.source, error))
            continue
        assert isinstance(plugin, WorkerPlugin)  # _conflict said so
        plugins[plugin.kind] = plugin
        owners[f"kind {plugin.kind}"] = load.source
        if plugin.bundle is not None:
            owners[f"bundle {plugin.bundle.name}"] = load.source
    return WorkerCatalog(plugins.values(), broken)


def _conflict(plugin: object, owners: dict[str, str]) -> str:
    if not isinstance(plugin, WorkerPlugin):
        return f"is a {type(plugin).__name__}, not a gym_gui.workers.WorkerPlugin"
    taken = owners.get(f"kind {plugin.kind}")
    if taken:
        return f"declares worker kind {plugin.kind!r}, already taken by {taken}"
    if plugin.bundle is not None:
        taken = owners.get(f"bundle {plugin.bundle.name}")
        if taken:
            return f"declares bundle {plugin.bundle.name!r}, already taken by {taken}"
    return ""


@functools.cache
def worker_catalog() -> WorkerCatalog:
    """The catalog of this process, loaded once (a newly installed plugin shows after a restart)."""
    return load_catalog()


def secrets_from_environment(config: RunConfig) -> dict[str, str]:
    """A run's secrets from this process's environment: the variables its worker kind takes
    (``WorkerSpec.secrets``, e.g. the LLM worker's ``LLM_API_KEY``), and the W&B key for the run's
    W&B server when the run tracks (WANDB_API_KEY, else a `wandb login`)."""
    catalog = worker_catalog()
    names = list(catalog.spec(config.worker).secrets) if config.worker in catalog else []
    secrets = {name: os.environ[name] for name in names if os.environ.get(name)}
    if config.tracking.wandb_mode != "disabled":
        key = wandb_auth.api_key(config.tracking.wandb_base_url)
        if key:
            secrets[wandb_auth.API_KEY_VAR] = key
    return secrets
