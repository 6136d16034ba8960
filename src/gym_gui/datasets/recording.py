"""Stored runs written as a Minari dataset: every step of their ended episodes, through Minari's own API.

A stored step holds the observation after its action; an episode's first observation is not stored.
It is rebuilt here by resetting the run's environment with the episode's seed, and checked: the
episode's first stored action, stepped from it, must give the stored first observation. Infos carry
the same keys at every step (Minari asks it): who acted (0 not said, 1 operator, 2 human), whether a
person overrode the operator, and the operator's proposal (the action itself where none was
overridden). The environment's own infos stay in the runs, whose keys vary from step to step.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, StorageError
from gym_gui.datasets.store import CREATED, DatasetCard, DatasetStore
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

log = logging.getLogger(__name__)

# Who acted, as a dataset's infos say it (the SDK's StepBatch.actor codes).
ACTOR_CODES = {"": 0, "operator": 1, "human": 2}


@dataclass(frozen=True)
class RunSource:
    """A stored run a dataset is written from."""

    run_id: str
    run_dir: Path
    config: RunConfig

    @classmethod
    def of(cls, run_id: str, run_dir: str | Path) -> RunSource:
        """Raises: ConfigError when the run's config cannot be read."""
        try:
            config = RunDir(Path(run_dir)).read_config()
        except StorageError as exc:
            raise ConfigError(f"run {run_id} cannot be read: {exc}") from None
        return cls(run_id, Path(run_dir), config)

    @property
    def operator(self) -> str:
        """Who played it: an operator's name, the evaluated run, or the kind (random, human …)."""
        config = self.config
        if config.params.get("operator"):
            return str(config.params["operator"])
        if config.evaluation is not None:
            return config.evaluation.run_id
        return config.worker

    @property
    def algorithm(self) -> str:
        return self.config.algorithm or self.config.worker


@dataclass(frozen=True)
class Recorded:
    """What :func:`record_dataset` wrote, and what it left out and why."""

    card: DatasetCard
    episodes: int
    steps: int
    left_out: tuple[str, ...]  # one line per episode left out


Progress = Callable[[int, int], None]  # (episodes written, episodes in all)


def record_dataset(
    store: DatasetStore,
    name: str,
    sources: Sequence[RunSource],
    *,
    progress: Progress | None = None,
) -> Recorded:
    """Write the ended episodes of ``sources`` as the Minari dataset ``name`` in ``store``'s home.

    Raises:
        ConfigError: the name is taken or not a dataset id, the runs played different environments,
            or no episode could be written (each reason named); nothing is written then.
    """
    if not sources:
        raise ConfigError("no runs to write a dataset from")
    if store.exists(name):
        raise ConfigError(f"dataset {name!r} already exists; delete it first or choose another name")
    env_ids = {source.config.env_id for source in sources}
    kwargs = {orjson.dumps(source.config.env_kwargs, option=orjson.OPT_SORT_KEYS) for source in sources}
    if len(env_ids) > 1 or len(kwargs) > 1:
        played = ", ".join(f"{source.run_id} ({source.config.env_id})" for source in sources)
        raise ConfigError(f"a dataset holds one environment; these runs played several: {played}")
    first = sources[0].config
    store.use_as_minari_root()  # before Minari is imported: it reads the variable at each call
    from minari import create_dataset_from_buffers

    from gym_gui.envs.check import make_env

    env = make_env(first.env_id, **first.env_kwargs)
    try:
        buffers: list[Any] = []
        left_out: list[str] = []
        origins: list[tuple[str, int]] = []
        returns: list[float] = []
        total = sum(_episode_count(source) for source in sources)
        for source in sources:
            for buffer, origin, total_reward in _episodes(source, env, left_out, len(buffers)):
                buffers.append(buffer)
                origins.append(origin)
                returns.append(total_reward)
                if progress is not None:
                    progress(len(buffers), total)
        if not buffers:
            why = f": {left_out[0]}" if left_out else ""
            raise ConfigError(
                f"no episode of {', '.join(s.run_id for s in sources)} can go in a dataset{why}"
            )
        runs = [source.run_id for source in sources]
        operators = sorted({source.operator for source in sources})
        algorithms = sorted({source.algorithm for source in sources})
        with warnings.catch_warnings():
            # Minari's advice to name a code permalink, an author's email and an evaluation env: gym_gui
            # records where the data came from itself (the source runs, in the description and its record).
            warnings.filterwarnings("ignore", message=r"`\w+` is set to None", category=UserWarning)
            create_dataset_from_buffers(
                name,
                buffers,
                env=env,
                algorithm_name=", ".join(algorithms),
                author="gym_gui",
                description=f"Recorded by gym_gui from {len(runs)} run(s): {', '.join(runs)}",
                data_format="hdf5",
                jpeg_encoding=False,  # a dataset keeps exactly what the runs stored
            )
    finally:
        env.close()
    steps = sum(len(buffer.rewards) for buffer in buffers)
    card = store.record(
        name,
        CREATED,
        source_runs=runs,
        env_id=first.env_id,
        operator=", ".join(operators),
        algorithm=", ".join(algorithms),
        episodes=[list(origin) for origin in origins],
        mean_return=float(np.mean(returns)),
    )
    return Recorded(card, len(buffers), steps, tuple(left_out))


def _episode_count(source: RunSource) -> int:
    files = RunDir(source.run_dir)
    if not files.has_telemetry():
        return 0
    reader = TelemetryReader(files.telemetry_path)
    try:
        return reader.episode_count()
    finally:
        reader.close()


def _episodes(source: RunSource, env: Any, left_out: list[str], first_id: int) -> Any:
    """The run's ended episodes as Minari episode buffers, with (run, episode) and the episode's return."""
    from minari.data_collector import EpisodeBuffer

    files = RunDir(source.run_dir)
    if not files.has_telemetry():
        left_out.append(f"run {source.run_id} stored no telemetry")
        return
    reader = TelemetryReader(files.telemetry_path)
    try:
        stored = reader.steps_per_episode()
        ended = {episode.episode: episode for episode in reader.episodes()}
        for number in sorted(set(stored) - set(ended)):
            left_out.append(
                f"run {source.run_id} episode {number}: it has no end (the run stopped inside it)"
            )
        for number, episode in sorted(ended.items()):
            rows = reader.transitions(number)
            problem = _problem(rows, episode.steps, episode.seed)
            if problem or episode.seed is None:
                left_out.append(f"run {source.run_id} episode {number}: {problem}")
                continue
            try:
                buffer = _buffer(
                    EpisodeBuffer, env, rows, episode.seed, episode.terminated, episode.truncated
                )
                buffer = replace(buffer, id=first_id)
                first_id += 1
            except _Mismatch as exc:
                left_out.append(f"run {source.run_id} episode {number}: {exc}")
                continue
            yield buffer, (source.run_id, number), float(episode.total_reward)
    finally:
        reader.close()


def _problem(rows: list[tuple[Any, ...]], steps: int, seed: int | None) -> str:
    if not rows:
        return "it stored no steps"
    if len(rows) != steps or rows[-1][0] != len(rows) - 1:
        return f"{len(rows)} of its {steps} steps are stored"
    if seed is None:
        return "it has no seed, so its first observation cannot be rebuilt"
    return ""


class _Mismatch(Exception):
    """The episode's first observation, rebuilt from its seed, does not lead to what the run stored."""


def _buffer(
    episode_buffer: Any, env: Any, rows: list[tuple[Any, ...]], seed: int, terminated: bool, truncated: bool
) -> Any:
    _steps, rewards, terminations, truncations, actions, observations, actors, proposals = zip(
        *rows, strict=True
    )
    from gym_gui_sdk.encoding import loads_observation

    first, _info = env.reset(seed=seed)
    action_values = orjson.loads(b"[" + ",".join(actions).encode() + b"]")
    try:
        stored = [loads_observation(text) for text in observations]
    except ValueError as exc:
        raise _Mismatch(f"a stored observation cannot be read: {exc}") from None
    stepped = env.step(_as_space(env.action_space, action_values[0]))[0]
    if not same_as_stored(stepped, stored[0]):
        raise _Mismatch(
            f"the environment reset with seed {seed} and stepped with the stored first action does not "
            "give the stored first observation (the run played another environment, or a wrapped one)"
        )
    # The reset's observation as the stored ones read: an array beside arrays, JSON values beside JSON.
    observation_values = [first if isinstance(stored[0], np.ndarray) else _jsonable(first), *stored]
    space = env.observation_space
    action_array = _decode(env.action_space, action_values)
    actor_codes = np.array([0, *(ACTOR_CODES.get(actor, 0) for actor in actors)], dtype=np.int8)
    overridden = np.array([False, *(bool(proposal) for proposal in proposals)], dtype=bool)
    proposed = [
        orjson.loads(proposal) if proposal else action
        for proposal, action in zip(proposals, action_values, strict=True)
    ]
    # The reset step has no action: its proposal is the first action's zero, so the shapes agree.
    proposed_array = _decode(env.action_space, proposed)
    zero = np.zeros_like(proposed_array[:1])
    ends = [bool(flag) for flag in terminations]
    cuts = [bool(flag) for flag in truncations]
    # A budget that ends a run inside an episode ends the episode truncated: the last step says so.
    ends[-1] = ends[-1] or terminated
    cuts[-1] = cuts[-1] or (truncated and not ends[-1])
    return episode_buffer(
        seed=seed,
        observations=_decode(space, observation_values),
        actions=action_array,
        rewards=[float(reward) for reward in rewards],
        terminations=ends,
        truncations=cuts,
        infos={
            "actor": actor_codes,
            "overridden": overridden,
            "proposed_action": np.concatenate([zero, proposed_array]),
        },
    )


def _jsonable(value: Any) -> Any:
    """A value as its stored JSON reads back (the SDK's encoding, then parsed)."""
    from gym_gui_sdk import encoding

    return orjson.loads(encoding.dumps(value))


def same_as_stored(value: Any, stored: Any) -> bool:
    """Whether an env's observation is the stored one: a stored compact array bit for bit (its dtype,
    shape and values, NaN included), anything else as its JSON reads back."""
    if isinstance(stored, np.ndarray):
        value = np.asarray(value)
        return (
            value.dtype == stored.dtype
            and value.shape == stored.shape
            and np.array_equal(value, stored, equal_nan=stored.dtype.kind == "f")
        )
    return bool(_jsonable(value) == stored)


def _as_space(space: Any, value: Any) -> Any:
    """A stored (JSON) action as the env takes it."""
    decoded = _decode(space, [value])
    if isinstance(decoded, dict):
        return {key: _first(item) for key, item in decoded.items()}
    return _first(decoded)


def _first(values: Any) -> Any:
    item = values[0]
    return item.item() if isinstance(item, np.generic) else item


def _decode(space: Any, values: list[Any]) -> Any:
    """Parsed JSON values of one space, one per step, as the arrays Minari stores for that space."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box | spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary):
        return np.asarray(values, dtype=space.dtype)
    if isinstance(space, spaces.Dict):
        return {key: _decode(sub, [value[key] for value in values]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_decode(sub, [value[i] for value in values]) for i, sub in enumerate(space.spaces))
    if isinstance(space, spaces.Text):
        return [str(value) for value in values]
    raise ConfigError(f"a {type(space).__name__} space cannot be written to a Minari dataset")
