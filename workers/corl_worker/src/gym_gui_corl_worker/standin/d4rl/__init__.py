"""gym_gui's stand-in for D4RL, first on a CORL script's path: the run's own dataset (a Minari dataset of the
home, exported into the run) in D4RL's shapes, so ``import d4rl`` and ``d4rl.qlearning_dataset(env)`` read it.

Not D4RL: no dataset is downloaded and none of D4RL's envs is registered. What it offers is what CORL's
offline scripts call: ``qlearning_dataset``, ``get_normalized_score``, ``infos`` and, on every env
``gym.make`` makes of the dataset's env id, ``get_dataset``, ``get_normalized_score``, ``ref_min_score``
and ``ref_max_score`` (gym_gui_corl_worker/offline_env.py).
"""

from gym_gui_corl_worker.offline_env import OfflineEnv, get_dataset, patch_gym_make, qlearning_dataset
from gym_gui_corl_worker.offline_env import normalized_score as _normalized_score

from . import infos

__all__ = ["OfflineEnv", "get_dataset", "get_normalized_score", "infos", "qlearning_dataset"]


def get_normalized_score(env_name, score):
    """D4RL's ``d4rl.get_normalized_score(env_name, score)``, for the run's dataset (``env_name`` aside)."""
    return _normalized_score(score)


# Importing real D4RL registers its envs with gym; importing this one has gym make the dataset's env
# with D4RL's offline methods.
patch_gym_make()
