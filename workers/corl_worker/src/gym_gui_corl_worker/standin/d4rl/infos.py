"""D4RL's ``d4rl.infos`` for the run's dataset: its reference returns by its env id (empty without them)."""

import os

from gym_gui_corl_worker.offline_env import reference_scores, run_transitions
from gym_gui_corl_worker.transitions import DATASET_VAR

REF_MIN_SCORE: dict = {}
REF_MAX_SCORE: dict = {}
DATASET_URLS: dict = {}

if os.environ.get(DATASET_VAR):
    _low, _high = reference_scores()
    _env = run_transitions().env_id
    if _env is not None and _low is not None and _high is not None:
        REF_MIN_SCORE[_env] = _low
        REF_MAX_SCORE[_env] = _high
