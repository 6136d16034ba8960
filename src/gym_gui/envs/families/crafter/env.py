"""Crafter as a gymnasium env: ``CrafterReward-v1`` and ``CrafterNoReward-v1``, registered on import.

crafter (1.8.3) speaks the old gym API (``reset()`` gives the observation alone, ``step()`` four values)
and registers its ids only with ``gym``, which gym_gui does not install. This adapter gives gymnasium's
API: the world is drawn from gymnasium's seeded generator, so ``reset(seed=s)`` makes the same world
every time; death terminates an episode, and gymnasium's time limit (crafter's 10000 steps) truncates it.
"""

from __future__ import annotations

from typing import Any

import crafter
import gymnasium
import numpy as np
from gymnasium import spaces

ACTIONS: tuple[str, ...] = tuple(crafter.constants.actions)
EPISODE_STEPS = 10000  # crafter's own episode length
# Crafter's view is 9x9 units (7 rows of world, 2 of inventory): 32 pixels a unit draws them square.
RENDER_SIZE = 288
_SEEDS = 2**31 - 1  # crafter seeds its world with a non-negative 32-bit int


class CrafterEnv(gymnasium.Env[np.ndarray, np.int64]):
    """One crafter world: 64x64 RGB observations, 17 discrete actions (:data:`ACTIONS`).

    Args:
        reward: False for crafter's reward-free variant (``CrafterNoReward-v1``: reward 0, the
            achievements still counted in ``info``).
        size: the observation's width and height in pixels.
        render_mode: ``"rgb_array"`` for :meth:`render`'s frames, or None.
        render_size: the width and height of a rendered frame in pixels.
    """

    # crafter's own GUI plays at 5 steps a second. gymnasium reads it from the class (an instance
    # variable of gymnasium.Env's, so not a ClassVar).
    metadata = {"render_modes": ["rgb_array"], "render_fps": 5}  # noqa: RUF012

    def __init__(
        self,
        reward: bool = True,
        size: int = 64,
        render_mode: str | None = None,
        render_size: int = RENDER_SIZE,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}")
        self.reward = reward
        self.size = size
        self.render_mode = render_mode
        self.render_size = render_size
        self.observation_space = spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self._world: crafter.Env | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None or self._world is None:
            # A new world series from the seeded generator; a reset without a seed goes on to the
            # series' next world (crafter draws each from its seed and the episode's number).
            world_seed = int(self.np_random.integers(_SEEDS))
            self._world = crafter.Env(
                size=(self.size, self.size), reward=self.reward, length=None, seed=world_seed
            )
        return self._world.reset(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._world is None:
            raise RuntimeError("reset the env before stepping it")
        observation, reward, dead, info = self._world.step(int(action))
        # The player's position is its own array, changed in place by the next step.
        info = {**info, "player_pos": np.array(info["player_pos"])}
        return observation, float(reward), bool(dead), False, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or self._world is None:
            return None
        frame: np.ndarray = self._world.render((self.render_size, self.render_size))
        return frame

    def get_action_meanings(self) -> list[str]:
        return list(ACTIONS)


for _env_id, _reward in (("CrafterReward-v1", True), ("CrafterNoReward-v1", False)):
    if _env_id not in gymnasium.registry:
        gymnasium.register(
            _env_id,
            entry_point=f"{__name__}:CrafterEnv",
            max_episode_steps=EPISODE_STEPS,
            kwargs={"reward": _reward},
        )
