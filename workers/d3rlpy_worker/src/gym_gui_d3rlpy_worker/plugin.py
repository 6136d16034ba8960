"""The d3rlpy worker's plugin: how gym_gui lists, checks, describes and launches d3rlpy runs.

This module runs in gym_gui's own environment (the daemon loads it through the ``gym_gui.workers``
entry point), with the plain modules it imports of this package (``form``, ``run_params``); what
d3rlpy's algorithms are it asks the bundle (``describe``), and everything that imports d3rlpy, torch
or minari runs inside the d3rlpy bundle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_gui_sdk.contract import FormSpec, ManifestExtras, parameter_problems
from gym_gui_sdk.operator import OperatorCard

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.datasets import DatasetCard, DatasetStore
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import (
    BundleSpec,
    LaunchContext,
    LaunchPlan,
    OperatorPlan,
    OperatorSource,
    WorkerPlugin,
)
from gym_gui.workers.bundle_answers import KeptAnswers, ask_helper
from gym_gui_d3rlpy_worker import form as d3rlpy_form
from gym_gui_d3rlpy_worker.run_params import (
    DATASET_NORMALIZED_METRIC,
    DATASET_RETURN_METRIC,
    FINAL_MODEL,
    NORMALIZED_METRIC,
    RETURN_METRIC,
    run_values,
    space_spec,
)

PACKAGE = "gym_gui_d3rlpy_worker"
# A trained policy plays on the CPU (an evaluation, an operator), as training does here.
MODEL_ENV = {"CUDA_VISIBLE_DEVICES": ""}
# The dataset's spaces, kept in a training run's manifest extras when it launches: what an operator of
# its model acts on, known without the dataset (which may be deleted later) or the model.
OBSERVATION_SPACE, ACTION_SPACE = "observation_space", "action_space"

BUNDLE = BundleSpec(
    name="d3rlpy",
    requirements="workers/d3rlpy_worker/requirements.txt",
    local_packages=("sdk", "workers/d3rlpy_worker"),
    # tensorboard: the TensorBoard tab serves the event files of the runs of this kind with it.
    check_imports=(
        "d3rlpy",
        "torch",
        "gymnasium",
        "minari",
        "h5py",
        "tensorboardX",
        "tensorboard",
        "gym_gui_sdk",
        PACKAGE,
    ),
    # The requirements file pins torch==X; the install chooses its build: CPU unless asked for CUDA.
    torch_build=True,
)


class D3rlpyLauncher:
    """d3rlpy's algorithms on a dataset of the home, from the d3rlpy bundle."""

    bundle = BUNDLE.name

    def __init__(self, context: LaunchContext) -> None:
        self.home = context.home
        self.bundles = context.bundles
        self.datasets = DatasetStore(context.home)
        self._answers = KeptAnswers(lambda: self.bundles.install_id(self.bundle), kept=1)

    # ------------------------------------------------------------ what d3rlpy offers

    def python(self) -> Path:
        if not self.bundles.installed(self.bundle):
            raise ConfigError(
                f"the {self.bundle} bundle is not installed; run `gym-gui bundles install {self.bundle}`"
            )
        return self.bundles.python(self.bundle)

    def algorithms(self) -> dict[str, Any]:
        """The describe helper's answer (every algorithm and its parameters), asked once per install of
        the bundle: it imports d3rlpy and torch, seconds."""
        answer = self._answers.get(
            "describe", lambda: ask_helper(self.python(), "gym_gui_d3rlpy_worker.describe")
        )
        if not isinstance(answer, dict):
            raise ConfigError(
                f"gym_gui_d3rlpy_worker.describe answered {type(answer).__name__}, not a JSON object"
            )
        return answer

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        if not self.bundles.installed(self.bundle):
            return d3rlpy_form.without_bundle()
        return d3rlpy_form.form_spec(self.algorithms(), query.get("algorithm") or "")

    # ------------------------------------------------------------ checks

    def validate(self, config: RunConfig) -> None:
        if config.mode == "evaluate":
            self._model_path(config)
            self._check_evaluation_env(config)
            if config.budget.episodes is None:
                raise ConfigError("field 'budget.episodes': an evaluation plays a number of episodes")
            return
        if config.mode != "train":
            raise ConfigError(f"field 'mode': the d3rlpy worker trains or evaluates, got {config.mode!r}")
        self._check_training(config)

    def _check_training(self, config: RunConfig) -> tuple[DatasetCard, Mapping[str, Any] | None]:
        """What a training run needs before anything is stored: an algorithm of d3rlpy's (when the bundle can
        say), parameters it takes, a budget of whole epochs, and a dataset whose actions it can take.

        Returns the dataset's card and the algorithm's describe entry (None before the bundle is installed:
        the algorithm is then checked at launch)."""
        if not config.algorithm:
            raise ConfigError("field 'algorithm': choose a d3rlpy algorithm, e.g. discrete_cql")
        steps = config.budget.timesteps
        if steps is None:
            raise ConfigError(
                "field 'budget.timesteps': a d3rlpy run trains a number of gradient steps (--steps)"
            )
        if config.dataset is None:
            raise ConfigError(
                "field 'dataset': a d3rlpy run learns from a dataset; `gym-gui dataset list` shows them"
            )
        entry = None
        parameters = d3rlpy_form.without_bundle().parameters
        if self.bundles.installed(self.bundle):
            answer = self.algorithms()
            entry = d3rlpy_form.find(answer, config.algorithm)
            if entry is None:
                names = ", ".join(item["name"] for item in answer.get("algorithms") or [])
                raise ConfigError(
                    f"field 'algorithm': d3rlpy has no algorithm {config.algorithm!r}; it has {names}"
                )
            parameters = d3rlpy_form.algorithm_parameters(entry)
            problems = parameter_problems(parameters, config.params)
        else:  # the algorithm's own fields are known once the bundle is: checked at launch
            own = {parameter.name for parameter in parameters}
            problems = parameter_problems(parameters, {k: v for k, v in config.params.items() if k in own})
        for name, why in problems:
            raise ConfigError(f"field 'params.{name}': {why}")
        per_epoch = int(run_values(config.params)["steps_per_epoch"])
        if steps % per_epoch and steps > per_epoch:
            raise ConfigError(
                f"field 'budget.timesteps': {steps} gradient steps are not a whole number of epochs of "
                f"{per_epoch} (params.steps_per_epoch); d3rlpy trains whole epochs"
            )
        card = self.datasets.card(config.dataset)
        _check_spaces(config.dataset, card)
        if entry is not None and entry["action"] != "both":
            wanted_discrete = entry["action"] == "discrete"
            if wanted_discrete != card.discrete_actions:
                actions = "discrete" if card.discrete_actions else "continuous"
                hint = (
                    "a discrete_* algorithm, nfq, dqn or double_dqn"
                    if card.discrete_actions
                    else "bc, cql, iql, td3_plus_bc, awac, …"
                )
                raise ConfigError(
                    f"field 'algorithm': {config.algorithm} takes {entry['action']} actions and dataset "
                    f"{config.dataset!r} has {actions} ones ({card.action_space}); choose {hint}"
                )
        return card, entry

    def _model_path(self, config: RunConfig) -> Path:
        assert config.evaluation is not None
        source_dir = self.home.run_dir(config.evaluation.run_id)
        if not source_dir.is_dir():
            raise ConfigError(f"field 'evaluation.run_id': no run {config.evaluation.run_id}")
        try:
            model = (source_dir / (config.evaluation.checkpoint or FINAL_MODEL)).resolve()
            if not model.is_relative_to(source_dir.resolve()):
                raise ConfigError(
                    f"field 'evaluation.checkpoint': {config.evaluation.checkpoint!r} is outside the run"
                )
            found = model.is_file()
        except OSError as exc:
            raise ConfigError(f"field 'evaluation.checkpoint': cannot look for it: {exc.strerror}") from None
        if not found:
            raise ConfigError(
                f"field 'evaluation.checkpoint': run {config.evaluation.run_id} has no model at {model}"
            )
        return model

    def _check_evaluation_env(self, config: RunConfig) -> None:
        """An evaluation plays the environment of the run whose model it is, nothing else."""
        assert config.evaluation is not None
        try:
            trained = RunDir(self.home.run_dir(config.evaluation.run_id)).read_config()
        except GymGuiError as exc:
            raise ConfigError(
                f"field 'evaluation.run_id': the trained run's config cannot be read: {exc}"
            ) from None
        if trained.worker != PLUGIN.kind or trained.mode != "train":
            raise ConfigError(
                f"field 'evaluation.run_id': run {config.evaluation.run_id} is not a d3rlpy training run"
            )
        if trained.env_id != config.env_id:
            raise ConfigError(
                f"field 'env_id': the model of run {config.evaluation.run_id} was trained on "
                f"{trained.env_id}; it cannot play {config.env_id}"
            )

    # ------------------------------------------------------------ operators

    def operator(self, source: OperatorSource) -> OperatorPlan:
        """A training run's model as an operator: the card from the spaces its manifest recorded of its
        dataset (no model loaded, no torch imported here), and the command serving it in the bundle.

        Raises:
            ConfigError: the run is not a d3rlpy training run, or has no model to act with.
        """
        config, run = source.config, source.run_id
        if config.mode != "train" or not config.algorithm:
            raise ConfigError(f"run {run} is a d3rlpy {config.mode} run, not a training run: no model")
        if source.model is None:
            raise ConfigError(f"run {run} saved no model for an operator to act with")
        try:
            extras = RunDir(self.home.run_dir(run)).read_manifest().extras
            observation, action = space_spec(extras[OBSERVATION_SPACE]), space_spec(extras[ACTION_SPACE])
        except (GymGuiError, KeyError, ValueError) as exc:
            raise ConfigError(
                f"run {run}: its manifest does not say what its model acts on ({exc})"
            ) from None
        card = OperatorCard(
            name=config.algorithm,
            kind=PLUGIN.kind,
            source_run=run,
            observation=observation,
            action=action,
            env_ids=(config.env_id,),
            deterministic=True,
        )
        argv = [str(self.python()), "-m", f"{PACKAGE}.operator", "--model", str(source.model)]
        argv += ["--card", json.dumps(card.to_json())]
        return OperatorPlan(card=card, argv=argv, env=dict(MODEL_ENV))

    # ------------------------------------------------------------ launch

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        python = self.python()
        environment = {
            "bundle": self.bundle,
            "python": str(python),
            "packages": self.bundles.freeze(self.bundle),
        }
        if config.mode == "evaluate":
            assert config.budget.episodes is not None and config.evaluation is not None
            argv = [str(python), "-m", PACKAGE, "evaluate", "--model", str(self._model_path(config))]
            argv += ["--episodes", str(config.budget.episodes)]
            if config.seed is not None:
                argv += ["--seed", str(config.seed)]
            if config.evaluation.real_time:
                argv.append("--real-time")
            if config.evaluation.epsilon:
                argv += ["--epsilon", repr(config.evaluation.epsilon)]
            return LaunchPlan(
                argv=argv,
                env=dict(MODEL_ENV),
                manifest={"evaluates": config.evaluation.model_dump(), "environment": environment},
            )
        card, entry = self._check_training(config)  # the bundle can say now, if it could not at submit
        assert entry is not None
        argv = [str(python), "-m", PACKAGE, "train"]
        if config.checkpoints.every_steps:
            argv += ["--checkpoint-every", str(config.checkpoints.every_steps)]
        extras = {
            "algorithm_class": entry["class"],
            "dataset": card.name,
            "dataset_sha256": card.sha256,
            OBSERVATION_SPACE: card.observation_space,
            ACTION_SPACE: card.action_space,
        }
        return LaunchPlan(
            argv=argv,
            env=dict(MODEL_ENV),
            manifest={"environment": environment},
            extras=ManifestExtras(extras),
        )


def _check_spaces(name: str, card: DatasetCard) -> None:
    """Refuse a dataset whose spaces d3rlpy cannot learn from here (Box or Discrete observations, Box or
    Discrete actions), naming it."""
    for what, text in (("observations", card.observation_space), ("actions", card.action_space)):
        try:
            space = space_spec(text)
        except ValueError as exc:
            raise ConfigError(f"field 'dataset': dataset {name!r} has {what} of {exc}") from None
        if what == "actions" and space.kind == "Box" and len(space.shape) != 1:
            raise ConfigError(
                f"field 'dataset': dataset {name!r} has actions of shape {space.shape}; d3rlpy takes flat ones"
            )


PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="d3rlpy",
        display_name="d3rlpy (offline RL)",
        lane=Lane.ANALYTICS,
        # Pause holds fit between two gradient steps; checkpoint now saves the model at the next one.
        capabilities=Capabilities(pause=True, checkpoint=True, evaluation=True),
        bundle=BUNDLE.name,
        rank=35,
        description="d3rlpy's offline algorithms (CQL, BC, IQL, TD3+BC, …) trained on a dataset of the home.",
        return_metric=RETURN_METRIC,
        # The offline score beside the curve: the dataset's own return (and its D4RL-style normalised
        # score, with reference scores) drawn across the evaluation's chart.
        reference_metrics=(
            (RETURN_METRIC, DATASET_RETURN_METRIC),
            (NORMALIZED_METRIC, DATASET_NORMALIZED_METRIC),
        ),
    ),
    bundle=BUNDLE,
    launcher=D3rlpyLauncher,
    form=d3rlpy_form.without_bundle(),
)
