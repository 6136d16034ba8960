"""Procgen: procedurally generated arcade games for measuring generalisation."""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, RenderKind, env_entry_of

NAME = "procgen"
_PIXELS = RenderKind.PIXELS

FAMILY = EnvFamily(
    name=NAME,
    title="Procgen",
    import_module="procgen",
    entries=(
        env_entry_of("procgen-coinrun-v0", NAME, "CoinRun", _PIXELS, realtime=True),
        env_entry_of("procgen-starpilot-v0", NAME, "StarPilot", _PIXELS, realtime=True),
    ),
    prefixes=("procgen",),  # also gym's procgen:procgen-… form
    entry_points=("procgen",),
    # The original procgen has no wheels past Python 3.10; every release of the procgen-mirror fork
    # requires numpy < 2 (and registers its ids with the old gym 0.26 only).
    unavailable=(
        "procgen-mirror 0.10.7, Procgen's only wheels for Python 3.11, needs numpy < 2, "
        "and gym_gui runs numpy 2.4"
    ),
    docs=__name__,
    rank=70,
)
