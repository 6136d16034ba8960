"""The CORL worker's plugin: how gym_gui lists, checks, describes and launches runs of a CORL checkout's
offline algorithms on the home's datasets.

This module runs in gym_gui's own environment (the daemon loads it through the ``gym_gui.workers`` entry
point), with what it imports of this package: ``form`` and ``scripts`` (plain Python) and ``transitions``
(the dataset written for the run, through Minari, which gym_gui's venv holds). What it needs to know of
a script (its ``TrainConfig``, whether pyrallis takes a config file, old gym's env) it asks the corl
bundle (``describe.py``), which has no gym_gui.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_gui_sdk.contract import FormSpec, ManifestExtras, parameter_problems

from gym_gui.core import wandb_auth
from gym_gui.core.config import RunConfig, path_param
from gym_gui.core.errors import ConfigError
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.datasets import DatasetCard, DatasetStore
from gym_gui.workers import (
    ONLY,
    PARAMETERS,
    BundleSpec,
    LaunchContext,
    LaunchPlan,
    WorkerPlugin,
)
from gym_gui.workers.bundle_answers import KeptAnswers, ask_helper
from gym_gui.workers.run_env import cuda_available, wandb_environment
from gym_gui_corl_worker import form as corl_form
from gym_gui_corl_worker.scripts import CheckoutError, script_path
from gym_gui_corl_worker.transitions import DATASET_VAR, TransitionsError, meta_of, write_transitions

BUNDLE = BundleSpec(
    name="corl",
    requirements="workers/corl_worker/requirements.txt",
    local_packages=("sdk", "workers/corl_worker"),
    check_imports=("torch", "gym", "pyrallis", "wandb", "tqdm", "gym_gui_sdk", "gym_gui_corl_worker"),
    # The requirements file pins torch==X; the install chooses its build: CPU unless asked for CUDA.
    torch_build=True,
)
# Where a run keeps what it learns from and what it saves, inside its directory.
TRANSITIONS_FILE = "dataset/transitions.npz"
CHECKPOINTS_DIR = "checkpoints"
# W&B's project for a run that names none (CORL's scripts pass their own ``project`` field, which the
# run's project sets when it has one).
DEFAULT_PROJECT = "CORL"
_DESCRIBE = "gym_gui_corl_worker.describe"


class CORLLauncher:
    """A CORL checkout's offline scripts, run in the corl bundle on a dataset of the home."""

    bundle = BUNDLE.name

    def __init__(self, context: LaunchContext) -> None:
        self.home = context.home
        self.bundles = context.bundles
        self.datasets = DatasetStore(context.home)
        # The bundle's answers, by what they depend on (a script's bytes, a config file's, an env id):
        # a form asks them again and again as the user types.
        self._answers = KeptAnswers(lambda: self.bundles.install_id(self.bundle))

    # ------------------------------------------------------------ the bundle's answers

    def python(self) -> Path:
        if not self.bundles.installed(self.bundle):
            raise ConfigError(
                f"the {self.bundle} bundle is not installed; run `gym-gui bundles install {self.bundle}`"
            )
        return self.bundles.python(self.bundle)

    def _ask(self, key: tuple[str, ...], *args: str) -> Any:
        """The describe helper's answer to ``args``, kept under ``key`` until the bundle is installed again.

        Raises:
            ConfigError: the helper refused (its one line) or could not be run.
        """
        return self._answers.get(key, lambda: ask_helper(self.python(), _DESCRIBE, *args))

    def listing(self, scripts_dir: str) -> list[dict[str, Any]]:
        """The checkout's offline scripts, each runnable in the bundle or greyed with why."""
        names = sorted(
            (p.name, p.stat().st_mtime_ns) for p in Path(scripts_dir).glob("algorithms/offline/*.py")
        )
        key = ("list", scripts_dir, json.dumps(names))
        return list(self._ask(key, "--scripts-dir", scripts_dir, "--list"))

    def fields(self, scripts_dir: str, algorithm: str) -> dict[str, Any]:
        """The script's ``TrainConfig`` fields (the describe helper's ``--algo`` answer)."""
        path = _script(scripts_dir, algorithm)
        key = ("fields", str(path), _digest(path))
        return dict(self._ask(key, "--scripts-dir", scripts_dir, "--algo", algorithm))

    def env_spaces(self, env_id: str) -> dict[str, Any]:
        """Old gym's spaces of ``env_id`` in the bundle, or its refusal."""
        return dict(self._ask(("env", env_id), "--env", env_id))

    # ------------------------------------------------------------ describe

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        """The checkout's scripts (variants; ``scripts_dir`` in ``query`` names it) and, with ``algorithm``,
        that script's fields as parameters; without a checkout, a form that says where scripts come from."""
        scripts_dir = query.get(corl_form.SCRIPTS_DIR) or ""
        algorithm = query.get("algorithm") or ""
        if not scripts_dir:
            return corl_form.form_spec(note=corl_form.NO_CHECKOUT)
        if not self.bundles.installed(self.bundle):
            return corl_form.form_spec(
                note=f"the {self.bundle} bundle comes with the first run (or `gym-gui bundles install {self.bundle}`)"
            )
        answer = self.fields(scripts_dir, algorithm) if algorithm else None
        if query.get(ONLY) == PARAMETERS:
            return corl_form.form_spec(algorithm=algorithm, answer=answer)
        return corl_form.form_spec(
            self.listing(scripts_dir), algorithm, answer, cuda_available(self.python())
        )

    # ------------------------------------------------------------ checks

    def validate(self, config: RunConfig) -> None:
        """Everything a run needs that can be known before it is stored: its script in the checkout, its
        parameters by the script's own fields, a config file pyrallis takes, a dataset of flat continuous
        actions on an env old gym makes with the dataset's spaces, and the GPU it insists on.

        The daemon has checked the dataset itself by then (present, unchanged, of the run's env, fitting
        the disk: ``gym_gui.datasets.check_dataset``).
        """
        if config.mode != "train":
            raise ConfigError(f"field 'mode': CORL runs train; there is no {config.mode} of them")
        if not config.algorithm:
            raise ConfigError("field 'algorithm': choose a CORL script, e.g. iql")
        if config.budget.timesteps is None:
            raise ConfigError(
                "field 'budget.timesteps': a CORL run trains for a number of gradient steps (--steps)"
            )
        if config.dataset is None:
            raise ConfigError(
                "field 'dataset': a CORL run learns from a dataset of the home (--dataset; `gym-gui dataset list`)"
            )
        scripts_dir, config_path = _source(config)
        if not scripts_dir:
            raise ConfigError(f"field 'params.scripts_dir': {corl_form.NO_CHECKOUT}")
        _script(scripts_dir, config.algorithm)
        _check_dataset_kind(self.datasets.card(config.dataset))
        if config.resources.gpu_mandatory and not self._gpu(config):
            raise ConfigError(
                "field 'resources.gpu_mandatory': a GPU is mandatory for this run, but torch in the "
                f"{self.bundle} bundle sees none"
            )
        if self.bundles.installed(self.bundle):
            self._check_with_bundle(config, scripts_dir, config_path)

    def check_secrets(self, config: RunConfig, given: frozenset[str]) -> None:
        """Online W&B tracking needs the key: a CORL script calls ``wandb.init`` whatever happens, and
        without a key online it would fail at its first step rather than before the run."""
        if config.tracking.wandb_mode == "online" and wandb_auth.API_KEY_VAR not in given:
            raise ConfigError(
                "field 'tracking.wandb_mode': online W&B tracking needs an API key and the run came with "
                f"none ({wandb_auth.API_KEY_VAR}, or a `wandb login`): log in first, or track offline"
            )

    def _check_with_bundle(self, config: RunConfig, scripts_dir: str, config_path: str | None) -> None:
        assert config.algorithm is not None and config.dataset is not None
        answer = self.fields(scripts_dir, config.algorithm)
        listed = {entry["name"]: entry for entry in self.listing(scripts_dir)}
        entry = listed.get(config.algorithm, {})
        if not entry.get("runnable", True):
            raise ConfigError(f"field 'algorithm': {config.algorithm} cannot run here: {entry.get('reason')}")
        spec = corl_form.form_spec(algorithm=config.algorithm, answer=answer)
        values = _script_values(config)
        for name in values:
            if name == corl_form.CHECKPOINTS_FIELD:
                raise ConfigError(
                    f"field 'params.{name}': gym_gui sets it, to the run's own {CHECKPOINTS_DIR}/ directory"
                )
            if name in spec.mapped:
                raise ConfigError(f"field 'params.{name}': gym_gui sets it from {spec.mapped[name]}")
        for name, why in parameter_problems(spec.parameters, values):
            raise ConfigError(f"field 'params.{name}': {why}")
        if not answer.get("env_field"):
            raise ConfigError(
                f"field 'algorithm': {config.algorithm}'s TrainConfig names no env (env or env_name)"
            )
        if corl_form.budget_field([entry["name"] for entry in answer.get("params") or []]) is None:
            raise ConfigError(
                f"field 'algorithm': {config.algorithm}'s TrainConfig has no count of steps the run's budget "
                f"could set ({', '.join((*corl_form.STEP_FIELDS, corl_form.EPOCHS))})"
            )
        self._check_env(config)
        if config_path:
            args = corl_form.script_args(config_path, values)
            key = (
                "check",
                answer["script"],
                _digest(Path(answer["script"])),
                _digest(Path(config_path)),
                *args,
            )
            try:
                self._ask(
                    key, "--scripts-dir", scripts_dir, "--algo", config.algorithm, "--check", json.dumps(args)
                )
            except ConfigError as exc:
                raise ConfigError(
                    f"field 'params.config_path': pyrallis refused {config_path}: {exc}"
                ) from None

    def _check_env(self, config: RunConfig) -> None:
        """Old gym makes the run's env in the bundle, with the dataset's spaces."""
        assert config.dataset is not None
        card = self.datasets.card(config.dataset)
        try:
            spaces = self.env_spaces(config.env_id)
        except ConfigError as exc:
            raise ConfigError(f"field 'env_id': {exc}") from None
        for which, recorded in (("observation", card.observation_space), ("action", card.action_space)):
            made = spaces[which]
            shape = _shape(recorded)
            if made.get("type") != "Box" or (shape is not None and tuple(made.get("shape") or ()) != shape):
                raise ConfigError(
                    f"field 'dataset': dataset {card.name!r} has {which}s of shape {shape}, and old gym's "
                    f"{config.env_id} makes a {made.get('type')} of shape {tuple(made.get('shape') or ())}"
                )

    def _gpu(self, config: RunConfig) -> bool:
        """Whether the run trains on a GPU: asked for, and torch in the bundle sees one."""
        return (
            bool(config.resources.gpu)
            and self.bundles.installed(self.bundle)
            and cuda_available(self.python())
        )

    # ------------------------------------------------------------ launch

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        assert config.algorithm is not None and config.dataset is not None
        python = self.python()
        scripts_dir, config_path = _source(config)
        assert scripts_dir is not None
        self._check_with_bundle(
            config, scripts_dir, config_path
        )  # the checkout may have changed while queued
        answer = self.fields(scripts_dir, config.algorithm)
        script = answer["script"]
        gpu = self._gpu(config)
        warnings = []
        if config.resources.gpu and not gpu:
            warnings.append(
                f"no GPU is available to torch in the {self.bundle} bundle: the run goes on the CPU (device=cpu)"
            )
        card = self.datasets.verify(config.dataset)  # again: a queued run starts later than it was checked
        transitions = run_dir / TRANSITIONS_FILE
        checkpoints = run_dir / CHECKPOINTS_DIR
        if (
            not config.dry_run and run_dir.is_dir()
        ):  # a preview's run has no directory; a dry run writes nothing
            _write_dataset(card, transitions)

        names = [entry["name"] for entry in answer.get("params") or []]
        steps = config.budget.timesteps
        assert steps is not None
        by_field: dict[str, Any] = {
            "env_id": config.env_id,
            "budget.timesteps": steps,
            "seed": config.seed,
            "resources.gpu": "cuda" if gpu else "cpu",
            "tracking.wandb_project": config.tracking.wandb_project,
        }
        values = {
            name: by_field[field]
            for name, field in corl_form.mapped(answer["env_field"], names).items()
            if by_field[field] is not None
        }
        if corl_form.budget_field(names) == corl_form.EPOCHS:
            per_epoch = int(
                config.params.get(corl_form.UPDATES_PER_EPOCH, _default(answer, corl_form.UPDATES_PER_EPOCH))
            )
            values[corl_form.EPOCHS] = corl_form.epochs(steps, per_epoch)
            warnings.append(
                f"{config.algorithm} counts epochs of {per_epoch} updates: {steps} steps make "
                f"{values[corl_form.EPOCHS]} epochs ({values[corl_form.EPOCHS] * per_epoch} updates)"
            )
        if corl_form.CHECKPOINTS_FIELD in names:
            values[corl_form.CHECKPOINTS_FIELD] = str(checkpoints)
        values.update(_script_values(config))
        args = corl_form.script_args(config_path, values)

        mode = config.tracking.wandb_mode
        env = {
            DATASET_VAR: str(transitions),
            **wandb_environment(config, run_id, run_dir, mode, DEFAULT_PROJECT),
        }
        if not gpu:
            env["CUDA_VISIBLE_DEVICES"] = ""
        secrets = {wandb_auth.API_KEY_VAR: secret_env[wandb_auth.API_KEY_VAR]} if mode == "online" else {}
        argv = [
            str(python),
            "-m",
            "gym_gui_corl_worker",
            "--script",
            script,
            "--checkpoints",
            str(checkpoints),
        ]
        argv += ["--", *args]
        script_argv = [str(python), script, *args]
        return LaunchPlan(
            argv=argv,
            env=env,
            warnings=warnings,
            manifest={
                "environment": {
                    "bundle": self.bundle,
                    "python": str(python),
                    "packages": self.bundles.freeze(self.bundle),
                }
            },
            extras=ManifestExtras(
                {
                    "script": script,
                    "script_command": script_argv,
                    "dataset": card.name,
                    "dataset_sha256": card.sha256,
                    "transitions": TRANSITIONS_FILE,
                }
            ),
            secrets=secrets,
            script_argv=script_argv,
        )


# ------------------------------------------------------------ helpers


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror}") from None


def _source(config: RunConfig) -> tuple[str | None, str | None]:
    """The run's checkout and config file (``params.scripts_dir``, ``params.config_path``), each checked to
    be an absolute path (the daemon has another working directory; the CLI resolves what was typed).

    Raises:
        ConfigError: naming the parameter.
    """
    scripts_dir, config_path = (path_param(config.params, name) for name in corl_form.SOURCE_PARAMS)
    if config_path is not None and not Path(config_path).is_file():
        raise ConfigError(f"field 'params.config_path': there is no file {config_path}")
    return scripts_dir, config_path


def _script(scripts_dir: str, algorithm: str) -> Path:
    try:
        return script_path(scripts_dir, algorithm)
    except CheckoutError as exc:
        raise ConfigError(str(exc)) from None


def _script_values(config: RunConfig) -> dict[str, Any]:
    """The run's params that are the script's fields (the kind's own taken out)."""
    return {name: value for name, value in config.params.items() if name not in corl_form.SOURCE_PARAMS}


def _default(answer: Mapping[str, Any], name: str) -> Any:
    """The script's default of field ``name`` (a describe answer's)."""
    return next((entry.get("default") for entry in answer.get("params") or [] if entry["name"] == name), None)


def _shape(space_json: str) -> tuple[int, ...] | None:
    try:
        shape = json.loads(space_json).get("shape")
    except (TypeError, ValueError, AttributeError):
        return None
    return tuple(int(n) for n in shape) if isinstance(shape, list) else None


def _check_dataset_kind(card: DatasetCard) -> None:
    """CORL's offline algorithms act in continuous spaces on flat observations, and evaluate on the env.

    Raises:
        ConfigError: a dataset without an env, of discrete actions, or of observations that are not one
            flat Box.
    """
    if card.env_id is None:
        raise ConfigError(
            f"field 'dataset': dataset {card.name!r} was recorded without an environment; CORL's scripts "
            "evaluate their policy on the dataset's env"
        )
    if card.discrete_actions:
        raise ConfigError(
            f"field 'dataset': dataset {card.name!r} has discrete actions; CORL's offline algorithms are "
            "continuous (a Box action space): train it with a discrete algorithm of another kind"
        )
    for which, space in (("observation", card.observation_space), ("action", card.action_space)):
        try:
            kind = json.loads(space).get("type")
        except (TypeError, ValueError, AttributeError):
            kind = None
        if kind != "Box":
            raise ConfigError(
                f"field 'dataset': dataset {card.name!r} has a {kind or 'unknown'} {which} space; "
                "CORL's scripts take flat arrays (Box)"
            )


def _write_dataset(card: DatasetCard, target: Path) -> None:
    """The dataset's transitions into the run (``TRANSITIONS_FILE``), read through Minari.

    Raises:
        ConfigError: they cannot be written (the run fails before its worker starts).
    """
    meta = meta_of(card.name, card.env_id, card.ref_min_score, card.ref_max_score, card.sha256)
    try:
        write_transitions(card.path / "data", target, meta)
    except TransitionsError as exc:
        raise ConfigError(f"field 'dataset': {exc}") from None


PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="corl",
        display_name="CORL Worker",
        lane=Lane.ANALYTICS,
        # Pause holds the script at its next wandb.log (each gradient step logs).
        capabilities=Capabilities(pause=True),
        bundle=BUNDLE.name,
        rank=35,
        description="A CORL checkout's offline algorithms (iql, any_percent_bc, …) on a dataset of the home.",
        return_metric=corl_form.RETURN_METRIC,
    ),
    bundle=BUNDLE,
    launcher=CORLLauncher,
    form=corl_form.form_spec(note=corl_form.NO_CHECKOUT),
)
