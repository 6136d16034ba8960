"""Atari (ALE): every game ale-py registers, played in real time with ALE's minimal action sets.

Its entries are read from the installed ale-py (:mod:`gym_gui.envs.ale`, imported only then: it
imports gymnasium); Pong, Breakout and Space Invaders keep hand-written docs beside this module, every
other game's doc is made from its entry.
"""

from __future__ import annotations

from collections.abc import Iterable

from gym_gui.core.envs import EnvEntry, EnvFamily

NAME = "atari"


def _games() -> Iterable[EnvEntry]:
    from gym_gui.envs import ale

    return ale.entries()


def _describe(entry: EnvEntry) -> str:
    from gym_gui.envs import ale

    return ale.describe(entry)


FAMILY = EnvFamily(
    name=NAME,
    title="Atari (ALE)",
    import_module="ale_py",  # registers the ALE/ ids with gymnasium on import
    discover=_games,
    prefixes=("ALE/",),
    entry_points=("ale_py",),
    # ale-py's wheels carry the ROMs: nothing is downloaded from anywhere but the package index.
    packages=("ale-py==0.12.*",),
    bundle_extras={"cleanrl": "atari"},
    docs=__name__,
    describe=_describe,
    rank=60,
)
