"""Operators as gym_gui names, lists, checks and starts them (no Qt).

An operator is named by a run id (its final model), ``RUN:CHECKPOINT`` (one of its saved models, by
path inside the run or by step), ``random`` (the baseline), ``human`` (a person at the keyboard) or
``llm:CONFIG.json`` (a language model's run config). A run that finished with a model is an operator
by itself: its kind's plugin says what it acts on (``OperatorLauncher``) and how its process starts.
Choosing one checks its model file against the digest recorded when it was saved and its spaces
against the environment's, so a mismatch is refused before anything starts.
"""

from __future__ import annotations

import copy
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gym_gui_sdk import THREAD_ENV
from gym_gui_sdk.json_object import json_object
from gym_gui_sdk.operator import (
    Decision,
    Operator,
    OperatorCard,
    OperatorProcess,
    SpaceSpec,
    Turn,
)

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import ConfigError, GymGuiError, InvalidRunId, StorageError
from gym_gui.core.ids import path_component, validate_run_id
from gym_gui.core.records import RunRecord
from gym_gui.envs.check import make_env
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir, SavedModel, saved_model_refusal
from gym_gui.workers import LaunchContext, OperatorLauncher, OperatorPlan, OperatorSource, WorkerCatalog
from gym_gui.workers.process_env import worker_base_env

log = logging.getLogger(__name__)

RANDOM = "random"
HUMAN = "human"
LLM_PREFIX = "llm:"
# An operator's process answers one model at a time: one thread each keeps two of them from
# fighting over the machine's cores.
_OPERATOR_THREADS = {name: "1" for name in THREAD_ENV}


@dataclass(frozen=True)
class OperatorRef:
    """An operator as named on a command line or in a picker (see the module's docstring)."""

    text: str
    run_id: str = ""
    checkpoint: str = ""
    config_file: Path | None = None

    @property
    def builtin(self) -> str:
        """``random`` or ``human`` for the two operators without a model, else ""."""
        return self.text if self.text in (RANDOM, HUMAN) else ""


def parse_operator(text: str) -> OperatorRef:
    """Read an operator's name.

    Raises:
        ConfigError: it is none of the forms an operator is named by, saying which are.
    """
    text = text.strip()
    if text in (RANDOM, HUMAN):
        return OperatorRef(text)
    if text.startswith(LLM_PREFIX):
        path = Path(text[len(LLM_PREFIX) :]).expanduser()
        if not path.name:
            raise ConfigError(f"operator {text!r}: name the language model's config file, llm:CONFIG.json")
        return OperatorRef(text, config_file=path.resolve())
    run_id, _, checkpoint = text.partition(":")
    try:
        validate_run_id(run_id)
    except InvalidRunId:
        raise ConfigError(
            f"operator {text!r} is not RUN, RUN:CHECKPOINT, random, human or llm:CONFIG.json"
        ) from None
    return OperatorRef(text, run_id=run_id, checkpoint=checkpoint)


def env_spaces(env_id: str) -> tuple[SpaceSpec, SpaceSpec]:
    """The observation and action spaces of ``env_id`` as made here (blocking).

    Raises:
        UnknownEnv: the env cannot be made here.
    """
    env = make_env(env_id)
    try:
        return SpaceSpec.of(env.observation_space), SpaceSpec.of(env.action_space)
    finally:
        env.close()


# ------------------------------------------------------------------ the operators without a model


class RandomOperator:
    """The random baseline: uniform actions of the env's action space, drawn per episode from its seed."""

    def __init__(self, action_space: Any) -> None:
        self._space = action_space
        self._slots: dict[int, Any] = {}
        self.card = OperatorCard(name=RANDOM, kind=RANDOM, deterministic=True)

    def begin(self, slot: int, seed: int | None) -> None:
        space = copy.deepcopy(self._space)
        space.seed(seed)
        self._slots[slot] = space

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        return [Decision(_sample(self._slots[turn.slot], turn.observation)) for turn in turns]

    def end(self, slot: int) -> None:
        self._slots.pop(slot, None)

    def close(self) -> None:
        self._slots.clear()


def _sample(space: Any, observation: Any) -> Any:
    """A random action, among the legal ones where the observation carries an action mask (a seat of
    a PettingZoo Classic game)."""
    mask = observation.get("action_mask") if isinstance(observation, dict) else None
    return space.sample() if mask is None else space.sample(mask=np.asarray(mask, dtype=np.int8))


HUMAN_CARD = OperatorCard(name="you", kind=HUMAN, deterministic=False)


# ------------------------------------------------------------------ choosing one


@dataclass(frozen=True)
class OperatorChoice:
    """An operator ready to start: what it is and how its process starts (None: it runs in gym_gui)."""

    ref: OperatorRef
    card: OperatorCard
    plan: OperatorPlan | None = None
    log_dir: Path | None = None  # where its process's standard error goes
    # An operator gym_gui makes in this process from the action space (a dataset's recorded actions).
    in_process: Callable[[Any], Operator] | None = None

    @property
    def name(self) -> str:
        return self.card.title

    def start(self, action_space: Any, secret_env: dict[str, str] | None = None) -> Operator:
        """Start it: the random baseline in this process, a model in its kind's own (loading it).

        ``secret_env`` gives the values of the secrets its plan takes (default: this process's
        environment). Raises the SDK's ``OperatorError`` (``OperatorRefused`` when its model cannot
        be loaded).
        """
        if self.ref.builtin == RANDOM:
            return RandomOperator(action_space)
        if self.in_process is not None:
            return self.in_process(action_space)
        if self.plan is None:
            raise ConfigError(f"operator {self.ref.text!r} is a person: the window seats one")
        source = os.environ if secret_env is None else secret_env
        env = {**worker_base_env(_OPERATOR_THREADS), **self.plan.env}
        env.update({name: source[name] for name in self.plan.secrets if source.get(name)})
        assert self.log_dir is not None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        log_path = self.log_dir / f"{path_component(self.card.title)}.{stamp}.{os.getpid()}.{id(self)}.log"
        return OperatorProcess(self.plan.argv, env, log_path, name=self.card.title)


@dataclass(frozen=True)
class OperatorListing:
    """One line of ``gym-gui operators``: an operator and, for an env, why it cannot act there ("" if it can)."""

    ref: OperatorRef
    card: OperatorCard | None
    problem: str = ""

    @property
    def usable(self) -> bool:
        return self.card is not None and not self.problem


class Operators:
    """The operators of one home: its finished runs that can act, the built-ins, config files.

    ``runs`` gives the registry's runs (the daemon's, through a client); the run directories are
    read here, on the caller's thread (blocking: the window calls it off its GUI thread).
    """

    def __init__(self, home: Home, catalog: WorkerCatalog, runs: Callable[[], list[RunRecord]]) -> None:
        self.home = home
        self.catalog = catalog
        self._runs = runs
        self._context = LaunchContext(home, catalog.bundle_directory(home.bundles_dir))
        # One launcher a kind: what a launcher learns (CleanRL's spaces of an env, asked of its
        # bundle) serves every run of the listing.
        self._launchers: dict[str, OperatorLauncher | None] = {}

    def listing(self, env_id: str | None = None) -> list[OperatorListing]:
        """Every operator there is, each with why it cannot act on ``env_id`` (when given).

        Model files are checked to exist here; their digests only when one is chosen (:meth:`choose`).
        """
        spaces = env_spaces(env_id) if env_id else None
        entries = [OperatorListing(OperatorRef(RANDOM), RandomOperator(None).card)]
        entries.append(OperatorListing(OperatorRef(HUMAN), HUMAN_CARD))
        for run in self._finished(self._runs()):
            ref = OperatorRef(run.run_id, run_id=run.run_id)
            try:
                config = RunDir(run.run_dir).read_config()
            except StorageError:
                continue
            if config.mode != "train":
                continue  # evaluations and play made no model of their own
            try:
                card = self._plan(ref, check_digest=False, config=config).card
            except GymGuiError as exc:
                entries.append(OperatorListing(ref, None, str(exc)))
                continue
            problem = card.problem(env_id, *spaces) if env_id and spaces else None
            entries.append(OperatorListing(ref, card, problem or ""))
        return entries

    def choose(
        self, text: str, env_id: str, spaces: tuple[SpaceSpec, SpaceSpec] | None = None
    ) -> OperatorChoice:
        """The operator ``text`` names, checked to be able to act on ``env_id`` (blocking).

        Raises:
            ConfigError: no such operator, its model is gone or changed since it was saved, its kind
                cannot act, or it cannot act on ``env_id`` (saying what it expects and what the env gives).
            UnknownEnv: ``env_id`` cannot be made here.

        ``spaces``: the observation and action spaces it acts on when they are not the env's own (a
        seat's of a multi-agent env).
        """
        ref = parse_operator(text)
        obs, act = spaces or env_spaces(env_id)
        if ref.builtin:
            card = RandomOperator(None).card if ref.builtin == RANDOM else HUMAN_CARD
            return OperatorChoice(ref, card)
        plan = self._plan(ref, check_digest=True)
        problem = plan.card.problem(env_id, obs, act)
        if problem:
            raise ConfigError(f"operator {ref.text}: {problem}")
        return OperatorChoice(ref, plan.card, plan, self.home.operators_dir)

    def _finished(self, runs: Iterable[RunRecord]) -> list[RunRecord]:
        """Runs that have ended, of kinds whose runs can act (what each left is the plugin's to judge)."""
        kept = []
        for run in runs:
            if not run.state.terminal or run.worker not in self.catalog:
                continue
            launcher = self._launcher(run.worker)
            if launcher is not None and run.run_dir:
                kept.append(run)
        return kept

    def _launcher(self, kind: str) -> OperatorLauncher | None:
        if kind not in self._launchers:
            plugin = self.catalog.plugin(kind)
            launcher = plugin.launcher(self._context) if plugin.spec.available else None
            self._launchers[kind] = launcher if isinstance(launcher, OperatorLauncher) else None
        return self._launchers[kind]

    def _plan(self, ref: OperatorRef, *, check_digest: bool, config: RunConfig | None = None) -> OperatorPlan:
        """``config``: the run's, when the caller has read it already."""
        if ref.config_file is not None:
            config = _config_file(ref)
            run_id, model, model_path = "", None, ""
        else:
            run_dir = RunDir(self.home.run_dir(ref.run_id))
            if not run_dir.path.is_dir():
                raise ConfigError(f"operator {ref.text}: there is no run {ref.run_id}")
            try:
                config = config or run_dir.read_config()
                models = run_dir.models()
            except StorageError as exc:
                raise ConfigError(f"operator {ref.text}: {exc}") from None
            saved = _model_of(ref, models) if models or ref.checkpoint else None
            run_id, model_path = ref.run_id, saved.path if saved else ""
            model = run_dir.artifact_path(saved.path) if saved else None
            if saved is not None and model is not None and check_digest:
                _check_digest(ref, saved, model)
        launcher = self._launcher(config.worker)
        if launcher is None:
            raise ConfigError(f"operator {ref.text}: {config.worker} runs cannot take the seat")
        return launcher.operator(OperatorSource(run_id, config, model, model_path))


def _config_file(ref: OperatorRef) -> RunConfig:
    assert ref.config_file is not None
    path = ref.config_file
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"operator {ref.text}: cannot read {path}: {exc}") from None

    def bad(_: object) -> ConfigError:
        return ConfigError(f"operator {ref.text}: {path} is not a JSON object")

    config = parse_run_config(json_object(text, bad, bad))
    if config.worker != "llm":
        raise ConfigError(f"operator {ref.text}: {path} is a {config.worker} config, not a language model's")
    return config


def _model_of(ref: OperatorRef, models: list[SavedModel]) -> SavedModel:
    """The saved model ``ref`` names: its run's final model (else its newest checkpoint), or the one
    whose path, file name or step is ``ref.checkpoint``."""
    if not ref.checkpoint:
        finals = [model for model in models if model.kind == "model"]
        chosen = (finals or models)[-1]
    else:
        wanted = ref.checkpoint
        matches = [m for m in models if wanted in (m.path, Path(m.path).name, str(m.step))]
        if not matches:
            known = ", ".join(m.path for m in models) or "none"
            raise ConfigError(
                f"operator {ref.text}: run {ref.run_id} has no model {wanted!r} (it has {known})"
            )
        chosen = matches[-1]
    if not chosen.exists:
        raise ConfigError(f"operator {ref.text}: the model file {chosen.path} of run {ref.run_id} is gone")
    return chosen


def _check_digest(ref: OperatorRef, saved: SavedModel, file: Path) -> None:
    if saved.sha256 is None:
        log.warning(
            "run %s's model %s was saved without a digest: it cannot be checked", ref.run_id, saved.path
        )
    refusal = saved_model_refusal(ref.run_id, saved, file)
    if refusal:
        raise ConfigError(f"operator {ref.text}: the model file {refusal}")
