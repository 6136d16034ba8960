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
    # Procgen registers with the old `gym` package (< 0.26) and ships wheels only for old Pythons.
    unavailable="Procgen needs Python <= 3.10 and gym < 0.26 (its wheels); install it in a worker bundle",
    docs=__name__,
    rank=70,
)
