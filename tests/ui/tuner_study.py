"""Make a study the way a CleanRL user does, with ``cleanrl_utils.tuner`` (run by the CleanRL bundle's Python).

Usage: python tuner_study.py STORAGE_URL [TRIALS [STEPS]] — PPO CartPole trials (2 of 1024 steps unless
told), in the current directory.
"""

import os
import sys

import cleanrl
import optuna
from cleanrl_utils.tuner import Tuner

# The tuner sets sys.argv for each script run: read ours first.
storage = sys.argv[1]
trials = int(sys.argv[2]) if len(sys.argv) > 2 else 2
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 1024

tuner = Tuner(
    script=os.path.join(next(iter(cleanrl.__path__)), "ppo.py"),
    metric="charts/episodic_return",
    metric_last_n_average_window=20,
    direction="maximize",
    target_scores={"CartPole-v1": None},
    params_fn=lambda trial: {
        "learning-rate": trial.suggest_float("learning-rate", 0.0003, 0.003, log=True),
        "num-minibatches": trial.suggest_categorical("num-minibatches", [1, 2]),
        "num-envs": 2,
        "num-steps": 128,
        "total-timesteps": steps,
    },
    sampler=optuna.samplers.TPESampler(seed=1),
    storage=storage,
    study_name="tuner_cartpole",
)
tuner.tune(num_trials=trials, num_seeds=1)
