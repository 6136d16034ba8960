"""The catalog as this interpreter plays it: each family's entries, Atari's read from ale-py in full."""

from __future__ import annotations

from dataclasses import dataclass

from gym_gui.core.envs import EnvEntry, Family, catalog_by_family, env_doc, env_entry, family_info, family_of
from gym_gui.envs import ale
from gym_gui.envs.check import family_installed


@dataclass(frozen=True)
class FamilyListing:
    """One family in the environment picker: its title and entries, or how to install it.

    Attributes:
        family: the family.
        title: the name shown to users.
        entries: what the picker offers, in its order.
        install_hint: how to install the family; set (and ``entries`` empty) for a family whose
            entries are read from its installed package and which is not installed here (Atari).
    """

    family: Family
    title: str
    entries: tuple[EnvEntry, ...]
    install_hint: str = ""


def catalog_entry(env_id: str) -> EnvEntry | None:
    """The entry of ``env_id``: an ALE game's as ale-py tells it (every registered game), else the
    catalog's; None for an id in neither."""
    if family_of(env_id) is Family.ATARI:
        found = ale.entry(env_id)
        if found is not None:
            return found
    return env_entry(env_id)


def catalog_doc(env_id: str) -> str:
    """The Markdown description of ``env_id``: its hand-written doc, else (an ALE game) the one made
    from its entry.

    Raises:
        KeyError: for an id :func:`catalog_entry` does not know.
    """
    try:
        return env_doc(env_id)
    except KeyError:
        entry = catalog_entry(env_id)
        if entry is None or entry.family is not Family.ATARI:
            raise
        return ale.describe(entry)


def picker_listing() -> list[FamilyListing]:
    """Every family with entries, in catalog order: Atari with each game ale-py registers when it is
    installed, else with only its install hint; the other families with their catalog entries."""
    listing = []
    for family, entries in catalog_by_family().items():
        info = family_info(family)
        if family is Family.ATARI:
            if family_installed(family):
                listing.append(FamilyListing(family, info.title, ale.entries()))
            else:
                listing.append(FamilyListing(family, info.title, (), info.install_hint))
        elif entries:
            listing.append(FamilyListing(family, info.title, tuple(entries)))
    return listing
