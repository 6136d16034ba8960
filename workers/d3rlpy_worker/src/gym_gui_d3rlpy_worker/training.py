"""A d3rlpy training run (in the bundle): the dataset as an MDPDataset, the algorithm from its config, d3rlpy's
own ``fit`` with its evaluators, its TensorBoard adapter and gym_gui's metric adapter, checkpoints and
the final model as ``.d3`` files.

``fit`` is d3rlpy's: gym_gui only calls it, and its per-step callback is where a pause holds, a stop
ends training (after a checkpoint) and "checkpoint now" or ``checkpoints.every_steps`` save the model.
The run seeds d3rlpy (``d3rlpy.seed``: Python's, numpy's and torch's generators) and the evaluation
environment before the algorithm is made, so the same seed on the same dataset gives the same losses
as the same ``fit`` called directly (``bench/offline.py`` checks it).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_gui_sdk.worker import Registration, WorkerSession

from gym_gui_d3rlpy_worker.bridge import GymGuiAdapterFactory, Points, Reference
from gym_gui_d3rlpy_worker.dataset import OfflineData, load
from gym_gui_d3rlpy_worker.describe import config_classes
from gym_gui_d3rlpy_worker.policy import encoded_env, make_env
from gym_gui_d3rlpy_worker.run_params import (
    FINAL_MODEL,
    INTERRUPTED_MODEL,
    STEPS_PER_SECOND_METRIC,
    checkpoint_path,
    run_values,
    split_params,
)

# The directory d3rlpy's TensorBoard adapter writes under (``<root>/runs/<experiment>``): the run's
# ``runs/``, where gym_gui's TensorBoard tab looks (RunDir.tensorboard_logdir).
EVENT_FILES = "runs"
# Python's switch interval while fit runs (see train).
SWITCH_INTERVAL = 0.00005


class TrainingStopped(Exception):
    """Raised from fit's callback when a stop was asked for: fit ends between two gradient steps."""


@dataclass(frozen=True)
class Plan:
    """One training: what fit is called with."""

    algorithm: str  # d3rlpy's config type name (discrete_cql)
    algo_params: dict[str, Any]
    steps: int
    steps_per_epoch: int
    eval_episodes: int
    td_error_episodes: int
    seed: int | None
    env_id: str
    env_kwargs: dict[str, Any]

    @classmethod
    def of(cls, config: dict[str, Any]) -> Plan:
        params = dict(config.get("params") or {})
        _, algo_params = split_params(params)
        values = run_values(params)
        steps = int(config["budget"]["timesteps"])
        return cls(
            algorithm=str(config["algorithm"]),
            algo_params=algo_params,
            steps=steps,
            steps_per_epoch=min(int(values["steps_per_epoch"]), steps),
            eval_episodes=int(values["eval_episodes"]),
            td_error_episodes=int(values["td_error_episodes"]),
            seed=config.get("seed"),
            env_id=str(config["env_id"]),
            env_kwargs=dict(config.get("env_kwargs") or {}),
        )


def config_class(algorithm: str) -> Any:
    """d3rlpy's config class whose type name is ``algorithm``."""
    found = config_classes().get(algorithm)
    if found is None:
        raise ValueError(f"d3rlpy has no algorithm {algorithm!r}")
    return found


def make_algorithm(plan: Plan) -> Any:
    """The algorithm, made after seeding d3rlpy (its networks' initial weights come from the seed)."""
    import d3rlpy

    if plan.seed is not None:
        d3rlpy.seed(plan.seed)
    return config_class(plan.algorithm)(**plan.algo_params).create(device="cpu:0")


def estimates_values(algo: Any, data: OfflineData) -> bool:
    """Whether the algorithm has a value to measure a TD error of (behaviour cloning has none).

    Its networks are built here, as fit would build them first (the same one sample of the dataset,
    the same draws of torch's generator), so fit goes on from where it would have been."""
    algo.build_with_dataset(data.mdp)
    episode = data.mdp.episodes[0]
    try:
        algo.predict_value(episode.observations[:1], episode.actions[:1])
    except NotImplementedError:
        return False
    return True


def evaluators(plan: Plan, data: OfflineData, values: bool) -> dict[str, Any]:
    """d3rlpy's evaluators the run asks for: TD error on the dataset's first episodes (``values``: the
    algorithm has values), the return of the policy in the dataset's environment (seeded from the run's
    seed)."""
    from d3rlpy.metrics import EnvironmentEvaluator, TDErrorEvaluator

    found: dict[str, Any] = {}
    if plan.td_error_episodes and values:
        found["td_error"] = TDErrorEvaluator(episodes=data.mdp.episodes[: plan.td_error_episodes])
    if plan.eval_episodes:
        env = encoded_env(make_env(plan.env_id, plan.env_kwargs))
        env.reset(seed=plan.seed)  # later resets go on from this generator
        found["environment"] = EnvironmentEvaluator(env, n_trials=plan.eval_episodes)
    return found


class Checkpoints:
    """Saves the algorithm as ``.d3`` files in the run and registers each as an artifact."""

    def __init__(self, session: WorkerSession, run_dir: Path, algorithm: str) -> None:
        self.session = session
        self.run_dir = run_dir
        self.algorithm = algorithm

    def save(self, algo: Any, step: int, relative: str, kind: str = "checkpoint", **meta: Any) -> None:
        target = self.run_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        algo.save(str(partial))
        os.replace(partial, target)  # whole before it is announced: the daemon hashes it then
        self.session.artifact(kind, relative, step, {"algo": self.algorithm, **meta})


def step_callback(
    session: WorkerSession, checkpoints: Checkpoints, every: int | None
) -> Callable[[Any, int, int], None]:
    """fit's per-step callback: a pause holds here, a stop raises :class:`TrainingStopped`, a requested or
    periodic checkpoint is saved."""

    def callback(algo: Any, epoch: int, step: int) -> None:
        if session.held:
            session.wait_if_paused()
            if session.stop_requested.is_set():
                raise TrainingStopped
        if session.checkpoint_requested.is_set():
            session.checkpoint_requested.clear()
            checkpoints.save(algo, step, checkpoint_path(step), requested=True)
        elif every and step % every == 0:
            checkpoints.save(algo, step, checkpoint_path(step))

    return callback


def train(session: WorkerSession, registration: Registration, checkpoint_every: int | None) -> str:
    """The run: returns ``"stopped"`` when a stop ended it (its model so far saved), else ``"completed"``."""
    from d3rlpy.logging import CombineAdapterFactory, TensorboardAdapterFactory

    config = registration.config
    run_dir = Path(registration.run_dir)
    plan = Plan.of(config)
    dataset_name = str(config["dataset"])
    data = load(dataset_name)
    session.started(
        render_kind="none",
        spaces={
            "dataset": dataset_name,
            "episodes": data.episodes,
            "steps": data.steps,
            "algorithm": plan.algorithm,
        },
    )
    reference = Reference(data.mean_return, data.ref_min_score, data.ref_max_score)
    session.metrics(reference.points(0))
    session.event(
        "INFO",
        f"{plan.algorithm} on {dataset_name}: {data.episodes} episodes, {data.steps} steps, "
        f"mean return {data.mean_return:.4g}",
        {
            "dataset": dataset_name,
            "episodes": data.episodes,
            "steps": data.steps,
            "mean_return": data.mean_return,
        },
    )
    # The SDK's threads wake while fit runs torch, which releases the GIL at every op: each wake-up
    # then waits out Python's switch interval (5 ms) in contended hand-overs. A short interval lets
    # them in at once, and a training run, which sends no steps, needs its batch flushed once a second.
    sys.setswitchinterval(SWITCH_INTERVAL)
    session.batch_seconds = max(session.batch_seconds, 1.0)
    algo = make_algorithm(plan)
    # Timed from here: fit called directly builds the networks inside (estimates_values builds them first).
    started = time.perf_counter()
    values = estimates_values(algo, data)
    if plan.td_error_episodes and not values:
        session.event("INFO", f"{plan.algorithm} estimates no values: no TD error is measured")
    found = evaluators(plan, data, values)
    forward = GymGuiAdapterFactory(session.metrics, reference)
    session.artifact("tensorboard", f"{EVENT_FILES}/{plan.algorithm}", 0, {})
    checkpoints = Checkpoints(session, run_dir, plan.algorithm)
    callback = step_callback(session, checkpoints, checkpoint_every)
    done = 0

    def count(algo: Any, epoch: int, step: int) -> None:
        nonlocal done
        done = step
        callback(algo, epoch, step)

    try:
        algo.fit(
            data.mdp,
            n_steps=plan.steps,
            n_steps_per_epoch=plan.steps_per_epoch,
            experiment_name=plan.algorithm,
            with_timestamp=False,
            logger_adapter=CombineAdapterFactory([TensorboardAdapterFactory(root_dir=str(run_dir)), forward]),
            show_progress=False,
            evaluators=found,
            callback=count,
        )
    except TrainingStopped:
        checkpoints.save(algo, done, INTERRUPTED_MODEL, interrupted=True)
        return "stopped"
    elapsed = time.perf_counter() - started
    points: Points = [(STEPS_PER_SECOND_METRIC, done, done / elapsed if elapsed > 0 else 0.0)]
    session.metrics(points)
    checkpoints.save(algo, done, FINAL_MODEL, kind="model", final=True)
    return "completed"
