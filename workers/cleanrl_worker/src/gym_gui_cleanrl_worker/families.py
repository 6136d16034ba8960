"""Which CleanRL scripts share a network a saved model can be loaded into (warm starts)."""

from __future__ import annotations

# The scripts a warm start can load a saved model into, by family (a script belongs to the family
# its name starts with; the JAX ports have no torch networks): the network the family trains, which
# the script builds before its optimizer. A dqn script copies its target network from it itself.
WARM_START_NETWORKS: dict[str, str] = {"ppo": "agent", "dqn": "q_network"}


def warm_start_family(algorithm: str | None) -> str | None:
    """The family of :data:`WARM_START_NETWORKS` a script (by name) belongs to, or None."""
    if not algorithm or "jax" in algorithm.split("_"):
        return None
    for family in WARM_START_NETWORKS:
        if algorithm == family or algorithm.startswith(f"{family}_"):
            return family
    return None
