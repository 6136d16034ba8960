"""Loading gym_gui's plugins (worker kinds, environment families) from their entry point groups."""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)

# gym_gui's own distributions load first, so a third-party plugin can never take one of their names.
_OWN_PREFIX = "gym-gui"


@dataclass(frozen=True)
class PluginLoad:
    """One entry point, loaded: the object it names, or why it could not be loaded.

    Attributes:
        name: the entry point's name.
        source: ``distribution: module:object``.
        value: the loaded object (None when ``error`` is set).
        error: ``failed to load: ExceptionType: message``; empty when it loaded.
    """

    name: str
    source: str
    value: object = None
    error: str = ""


def load_plugins(
    group: str, entry_points: Iterable[importlib.metadata.EntryPoint] | None = None
) -> Iterator[PluginLoad]:
    """Load each entry point of ``group`` (default: the installed ones), gym_gui's own first.

    A plugin whose import fails is reported with its error, never raised: one broken plugin must not
    take gym_gui down.
    """
    if entry_points is None:
        entry_points = importlib.metadata.entry_points(group=group)

    def order(ep: importlib.metadata.EntryPoint) -> tuple[bool, str, str]:
        dist = _dist_name(ep)
        return (not dist.startswith(_OWN_PREFIX), dist, ep.name)

    for ep in sorted(entry_points, key=order):
        source = f"{_dist_name(ep) or '?'}: {ep.value}"
        try:
            value = ep.load()
        except (Exception, SystemExit) as exc:
            # INFO (the daemon's log): listings show a broken plugin with its error, and a command
            # that only reads the catalog says nothing.
            log.info("plugin %s (%s) of %s failed to load: %s", ep.name, source, group, exc)
            yield PluginLoad(ep.name, source, error=f"failed to load: {type(exc).__name__}: {exc}")
            continue
        yield PluginLoad(ep.name, source, value)


def _dist_name(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(dist.metadata["Name"]) if dist is not None and dist.metadata["Name"] else ""
