"""The environment catalog: the families installed as plugins (entry point group ``gym_gui.env_families``)
and their entries, with what each needs.

A family plugin that fails to load, is not an :class:`EnvFamily`, or takes a name (or an env id)
another family already has is kept as a :class:`BrokenFamily` with its error: ``gym-gui envs`` lists it,
and nothing else is affected.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gym_gui.core.envs import EnvEntry, EnvFamily
from gym_gui.core.errors import ConfigError
from gym_gui.core.plugins import load_plugins

ENTRY_POINT_GROUP = "gym_gui.env_families"


@dataclass(frozen=True)
class BrokenFamily:
    """An installed family plugin that cannot be used, and why."""

    name: str  # the entry point's name
    source: str  # ``distribution: module:object``
    error: str


@dataclass(frozen=True)
class Families:
    """The families of this installation, in catalog order, and the plugins that failed."""

    by_name: dict[str, EnvFamily]
    broken: tuple[BrokenFamily, ...]

    @functools.cached_property
    def listed(self) -> dict[str, EnvEntry]:
        """Every entry the families list (not those they discover), by env id."""
        return {entry.env_id: entry for family in self.by_name.values() for entry in family.entries}


def load_families(entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> Families:
    """Load every family plugin (default: the installed entry points of :data:`ENTRY_POINT_GROUP`)."""
    found: list[EnvFamily] = []
    owners: dict[str, str] = {}  # family name or env id → the source that took it
    broken: list[BrokenFamily] = []
    for load in load_plugins(ENTRY_POINT_GROUP, entry_points):
        family = load.value
        error = load.error or _conflict(family, owners)
        if error:
            broken.append(BrokenFamily(load.name, load.source, error))
            continue
        assert isinstance(family, EnvFamily)  # _conflict said so
        found.append(family)
        owners[f"family {family.name}"] = load.source
        for entry in family.entries:
            owners[f"env {entry.env_id}"] = load.source
    found.sort(key=lambda f: (f.rank, f.title.lower()))
    return Families({family.name: family for family in found}, tuple(broken))


def _conflict(family: object, owners: dict[str, str]) -> str:
    if not isinstance(family, EnvFamily):
        return f"is a {type(family).__name__}, not a gym_gui.core.envs.EnvFamily"
    taken = owners.get(f"family {family.name}")
    if taken:
        return f"declares family {family.name!r}, already taken by {taken}"
    for entry in family.entries:
        if entry.family != family.name:
            return f"lists {entry.env_id} as family {entry.family!r}, not its own {family.name!r}"
        taken = owners.get(f"env {entry.env_id}")
        if taken:
            return f"lists {entry.env_id}, already listed by {taken}"
    return ""


@functools.cache
def families() -> Families:
    """The installed families (loaded once a process)."""
    return load_families()


def env_families() -> dict[str, EnvFamily]:
    """The usable families by name, in catalog order."""
    return families().by_name


def env_family(name: str) -> EnvFamily:
    """The family called ``name``.

    Raises:
        ConfigError: naming the unknown family and the known ones.
    """
    known = env_families()
    if name not in known:
        raise ConfigError(f"no environment family {name!r}; the families are {', '.join(known)}")
    return known[name]


RECORDS = "gym_gui_families"
"""The folder of gym_gui's environment holding, per family `gym-gui envs install` put there, the exact
packages it added (``<family>.txt``, pip's requirements format: `make install` keeps them) and its
install log and lock."""

# What is known of each family's import: its failure text ("" once it imported) and the install
# stamp it was found at. An import that worked stays known; a failure is tried again once a family
# has been installed since (by this process or another: a daemon learns of the window's install).
_imports: dict[str, tuple[str, int]] = {}
_found_entries: dict[str, dict[str, EnvEntry]] = {}


def records_dir() -> Path:
    """Where this environment's family installs are recorded (:data:`RECORDS`)."""
    return Path(sys.prefix) / RECORDS


def _install_stamp() -> int:
    try:
        return records_dir().stat().st_mtime_ns
    except OSError:
        return 0


def import_failure(name: str) -> str:
    """Import family ``name``'s module (MiniGrid and ALE register their ids on import), once it works.

    Returns the import error text, or "" when the module imported. A failure is asked again only
    after a family install since: a failed import is slow to repeat, and its answer changes only then.
    """
    known = _imports.get(name)
    stamp = _install_stamp()
    if known is not None and (not known[0] or known[1] == stamp):
        return known[0]
    family = env_family(name)
    for variable, value in family.environment.items():
        os.environ.setdefault(variable, value)
    if known is not None:
        importlib.invalidate_caches()  # the finders' listings predate the install
    try:
        importlib.import_module(family.import_module)
    except Exception as exc:  # an ImportError, or a broken install failing in its own import code
        failure = f"{type(exc).__name__}: {exc}"
    else:
        failure = ""
    _imports[name] = (failure, stamp)
    return failure


def forget_installed() -> None:
    """Forget which families failed to import: one was just installed."""
    for name in [name for name, (failure, _stamp) in _imports.items() if failure]:
        del _imports[name]
    importlib.invalidate_caches()


def family_installed(name: str) -> bool:
    """True when family ``name`` is installed in this interpreter: its module imported, or, before
    anything imported it, each of its top-level modules (:attr:`EnvFamily.modules`) is found without
    being imported (``importlib.util.find_spec``: a module blocked with ``sys.modules[name] = None``
    is not found).

    Importing NetHack, Meta-World and DeepMind Control to ask takes seconds, and the picker asks for
    every family when the window opens; a family whose modules are there but fail to import says why
    when it is used (:func:`import_failure`, which the env check calls).
    """
    known = _imports.get(name)
    if known is not None and (not known[0] or known[1] == _install_stamp()):
        return not known[0]
    family = env_family(name)
    modules = family.modules or (family.import_module.partition(".")[0],)
    if modules == (__name__.partition(".")[0],):  # gym_gui's own module: only its import tells
        return not import_failure(name)
    return all(_found(module) for module in modules)


def _found(module: str) -> bool:
    """True when top-level ``module`` can be imported here, as far as finding it tells."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken finder; a module in sys.modules without a spec
        return module in sys.modules and sys.modules[module] is not None


def _discovered(name: str) -> dict[str, EnvEntry]:
    """The entries family ``name`` discovers, read once it imports."""
    if name not in _found_entries:
        family = env_family(name)
        if family.discover is None or import_failure(name):
            return {}
        listed = {entry.env_id for entry in family.entries}
        _found_entries[name] = {
            entry.env_id: entry for entry in family.discover() if entry.env_id not in listed
        }
    return _found_entries[name]


def family_entries(name: str) -> list[EnvEntry]:
    """Family ``name``'s entries: those it lists, then those it discovers once installed."""
    family = env_family(name)
    return [*family.entries, *_discovered(name).values()]


def catalog() -> dict[str, EnvEntry]:
    """Every entry of every family, in catalog order (discovering what installed families offer)."""
    return {entry.env_id: entry for name in env_families() for entry in family_entries(name)}


def catalog_by_family() -> dict[str, list[EnvEntry]]:
    """Every family's entries by family name, families in catalog order; a family with no entries
    still appears (so a picker can show it and its install hint)."""
    return {name: family_entries(name) for name in env_families()}


def family_of(env_id: str) -> str | None:
    """The name of ``env_id``'s family: from the entries listed, else from the prefixes families
    claim (``ALE/``, ``BabyAI-``, ``procgen``), else None."""
    entry = families().listed.get(env_id)
    if entry is not None:
        return entry.family
    for family in env_families().values():
        if any(env_id.startswith(prefix) for prefix in family.prefixes):
            return family.name
    return None


def env_environment(env_id: str) -> dict[str, str]:
    """The variables ``env_id``'s family needs in a process that makes it (MuJoCo's ``MUJOCO_GL``);
    empty for an id of no family."""
    family = family_of(env_id)
    return {} if family is None else dict(env_family(family).environment)


def env_module(env_id: str) -> str | None:
    """The module whose import registers ``env_id`` with gymnasium: its family's ``import_module``;
    None for an id of no family."""
    family = family_of(env_id)
    return None if family is None else env_family(family).import_module


def env_entry(env_id: str) -> EnvEntry | None:
    """The catalog entry of ``env_id`` (listed, or discovered by its installed family); None if none."""
    entry = families().listed.get(env_id)
    if entry is not None:
        return entry
    family = family_of(env_id)
    return None if family is None else _discovered(family).get(env_id)


def env_doc(env_id: str) -> str:
    """The Markdown description of a catalog env: its file beside its family's module, else (a
    discovered entry, such as most ALE games) the one its family writes.

    Raises:
        KeyError: if ``env_id`` is not in the catalog.
        FileNotFoundError: if its Markdown file is missing from the installed package.
    """
    entry = env_entry(env_id)
    if entry is None:
        raise KeyError(f"{env_id!r} is not in the environment catalog")
    family = env_family(entry.family)
    doc = resources.files(family.docs).joinpath(entry.doc)
    if family.describe is not None and not doc.is_file():
        return family.describe(entry)
    return doc.read_text(encoding="utf-8")
