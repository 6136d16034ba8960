"""The CleanRL worker's plugin: how gym_gui lists, checks, describes and launches CleanRL runs.

This module runs in gym_gui's own environment (the daemon loads it through the ``gym_gui.workers``
entry point), with what it imports of this package: ``zygote`` (the owner of the fork servers) and,
in the daemon when a run's flags are made, ``describe`` with ``scripts`` and ``envs`` (plain Python,
no torch or gym). The rest runs inside the cleanrl bundle, which has no gym_gui.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_gui_sdk.contract import FormSpec, ManifestExtras
from gym_gui_sdk.operator import OperatorCard, SpaceSpec

from gym_gui.core.config import RunConfig, path_param
from gym_gui.core.envs import HEADLESS_MUJOCO
from gym_gui.core.errors import ConfigError, GymGuiError, StorageError
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.envs.catalog import catalog
from gym_gui.storage.run_dir import RunDir, file_sha256, saved_model_refusal
from gym_gui.workers import (
    ONLY,
    PARAMETERS,
    BundleExtra,
    BundleSpec,
    LaunchContext,
    LaunchPlan,
    ModelCheck,
    OperatorPlan,
    OperatorSource,
    PipStep,
    WorkerPlugin,
)
from gym_gui.workers.bundle_answers import KeptAnswers, ask_helper, run_helper
from gym_gui.workers.bundles import install_hint
from gym_gui.workers.run_env import cuda_available, wandb_environment
from gym_gui_cleanrl_worker import form as cleanrl_form
from gym_gui_cleanrl_worker.families import WARM_START_NETWORKS, warm_start_family
from gym_gui_cleanrl_worker.flags import resolve_command
from gym_gui_cleanrl_worker.form import SOURCE_PARAMS, ScriptSource, script_params
from gym_gui_cleanrl_worker.interpreter import loader_line, pip_freeze
from gym_gui_cleanrl_worker.scripts import OWN_MAKERS, env_family_of
from gym_gui_cleanrl_worker.zygote import WARM_SWITCH, ZygoteError, Zygotes

log = logging.getLogger(__name__)

# The final model every CleanRL training run saves (gym_gui_cleanrl_worker.launch).
FINAL_MODEL = "checkpoints/final.cleanrl_model"
# What a process playing a saved model gets (an evaluation, an operator): it plays on the CPU.
MODEL_ENV = {**HEADLESS_MUJOCO, "CUDA_VISIBLE_DEVICES": ""}
# Resolved commands kept between submit and launch (runs queued behind others included).
_RESOLVED_KEPT = 64


def _envpool_unavailable() -> str | None:
    """Why EnvPool 0.8.4 cannot be installed here (None: it can): its wheels are CPython 3.7-3.11, Linux x86-64."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return f"EnvPool ships wheels for Linux x86-64 only, and this is {sys.platform} {platform.machine()}"
    if sys.version_info >= (3, 12):
        return f"EnvPool 0.8.4, the last release for the bundle's gym 0.23, has no wheel for Python {platform.python_version()}"
    return None


BUNDLE = BundleSpec(
    name="cleanrl",
    requirements="workers/cleanrl_worker/requirements.txt",
    extra_steps=(
        PipStep(
            # Its metadata asks for Python < 3.11 and pins 2022 releases; the requirements file
            # holds the set its scripts run with here.
            "installing cleanrl 1.2.0 (no deps, ignoring its Python < 3.11 cap)",
            ("--no-deps", "--ignore-requires-python", "cleanrl==1.2.0"),
        ),
    ),
    local_packages=("sdk", "workers/cleanrl_worker"),
    check_imports=(
        "torch",
        "gymnasium",
        "gym",
        "cleanrl",
        "tensorboard",
        "gym_gui_sdk",
        "gym_gui_cleanrl_worker",
        "mujoco",
    ),
    # The requirements file pins torch==X; the install chooses its build: CPU unless asked for CUDA.
    torch_build=True,
    extras=(
        BundleExtra(
            "atari",
            "workers/cleanrl_worker/requirements-atari.txt",
            "Atari 2600 games (ALE: ale-py with its ROMs, OpenCV) for the *_atari.py scripts",
            families=("atari",),
            check_imports=("ale_py", "cv2"),
        ),
        BundleExtra(
            "envpool",
            "workers/cleanrl_worker/requirements-envpool.txt",
            "EnvPool 0.8.4 (its own Atari and MuJoCo, many envs a process) for the *_envpool.py scripts",
            families=("envpool",),
            check_imports=("envpool",),
            unavailable=_envpool_unavailable(),
        ),
        # MuJoCo stays in the bundle's own requirements: sac, td3, ddpg and ppo_continuous_action are
        # benchmarked on it, and gym_gui installs it by default (README: "MuJoCo").
        BundleExtra(
            "mujoco",
            None,
            "MuJoCo (mujoco 2.3.3, imageio) for the continuous-action scripts: in the bundle's own requirements",
            families=("mujoco",),
        ),
    ),
)


class CleanRLLauncher:
    """Real CleanRL scripts, from the cleanrl bundle or a user's checkout and interpreter."""

    bundle = BUNDLE.name

    def __init__(self, context: LaunchContext) -> None:
        self.home = context.home
        self.bundles = context.bundles
        self._lock = threading.Lock()
        # What validate resolved at submit, taken once by plan at launch (the same script answer).
        self._resolved: dict[tuple[str, bool], dict[str, Any]] = {}
        # The describe helper's answers about the bundle's own scripts.
        self._answers = KeptAnswers(lambda: self.bundles.install_id(self.bundle))
        # The bundle's fork server, which training scripts start from warm (zygote.py).
        self.zygotes = Zygotes(context.home.root)

    def prepare(self, config: RunConfig) -> None:
        """Start the bundle's zygote on a thread of its own (it imports torch: seconds), for the runs
        of ``config`` a sweep is about to launch; their plans then find it warm or wait for it."""
        if config.mode == "train" and self._warm(config) and self.bundles.installed(self.bundle):
            python = self.bundles.python(self.bundle)
            threading.Thread(
                target=self._ensure_zygote, args=(python,), name="cleanrl-zygote", daemon=True
            ).start()

    def close(self) -> None:
        """Stop the zygotes (the daemon is stopping; scripts they started go on)."""
        self.zygotes.close()

    # ------------------------------------------------------------ where the scripts are

    def python(self, source: ScriptSource) -> Path:
        if source.python:
            python = Path(source.python)
            if not python.is_file():
                raise ConfigError(f"field 'params.python': no interpreter at {python}")
            return python
        if not self.bundles.installed(self.bundle):
            raise ConfigError(
                f"the {self.bundle} bundle is not installed; run `gym-gui bundles install {self.bundle}`"
            )
        return self.bundles.python(self.bundle)

    def _dir_args(self, source: ScriptSource) -> list[str]:
        if source.scripts_dir is None:
            return []
        scripts = Path(source.scripts_dir)
        if not scripts.is_dir():
            raise ConfigError(f"field 'params.scripts_dir': {scripts} is not a directory")
        return ["--scripts-dir", str(scripts)]

    def _ask(self, source: ScriptSource, *args: str) -> Any:
        """The describe helper's answer to ``args`` in ``source``'s interpreter.

        About the bundle's own interpreter and scripts the answer is kept until the bundle is
        installed again (``BundleDirectory.install_id``): each costs a Python start in the bundle (~0.2 s),
        and a sweep asks the same of every trial. About a user's interpreter or checkout, which
        may change under gym_gui, it is asked every time. Refusals are never kept.
        """
        python = self.python(source)
        call = (*self._dir_args(source), *args)

        def ask() -> Any:
            return ask_helper(python, "gym_gui_cleanrl_worker.describe", *call)

        if source.python is not None or source.scripts_dir is not None:
            return ask()
        return self._answers.get(call, ask)

    def algorithms(self, source: ScriptSource) -> list[dict[str, Any]]:
        """The scripts present (bundled package or the config's checkout), runnable or not."""
        return self._ask(source, "--list")

    def arguments(self, source: ScriptSource, algorithm: str) -> dict[str, Any]:
        """The script's own arguments (name, type, default, help, choices, boolean style)."""
        return self._ask(source, "--algo", algorithm)

    def envs(self, source: ScriptSource, algorithm: str) -> dict[str, Any]:
        """The environments the script trains on in its interpreter, asked of that interpreter: ``envs``
        lists ``{"id", "reason"}`` (reason "" when it trains on it; gym_gui's catalog ids are answered
        too), or is None when the script's environments come from no registry there."""
        return self._ask(source, "--algo", algorithm, "--envs", *catalog())

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        """The scripts present (variants), whether torch sees a GPU, the flags gym_gui sets from the
        config (``mapped``: flag → RunConfig field), and with ``algorithm`` in ``query`` that script's
        own arguments (parameters) and the environments it trains on (:meth:`envs`); ``scripts_dir``
        and ``python`` name a user's checkout and interpreter. No scripts while the bundle is not
        installed and no interpreter is named."""
        source = ScriptSource.of(query)
        if source.python is None and not self.bundles.installed(self.bundle):
            return cleanrl_form.without_bundle()
        algorithm = query.get("algorithm") or ""
        if query.get(ONLY) == PARAMETERS:  # a sweep's check: the script's arguments and the mapped flags
            arguments = self.arguments(source, algorithm) if algorithm else {}
            return cleanrl_form.script_parameters(algorithm, arguments)
        if not algorithm:
            return cleanrl_form.form_spec(self.algorithms(source), self.gpu_available(source))
        arguments = self.arguments(source, algorithm)
        try:
            envs = self.envs(source, algorithm)
        except ConfigError as exc:  # the script's arguments are still worth showing
            envs = {"envs": None, "error": f"its environments could not be listed: {exc}"}
        return cleanrl_form.form_spec(
            self.algorithms(source), self.gpu_available(source), algorithm, arguments, envs
        )

    # ------------------------------------------------------------ checks

    def validate(self, config: RunConfig) -> None:
        # Neither a script nor an evaluation passes arguments to gym.make: given ones would be ignored.
        if config.env_kwargs:
            raise ConfigError(
                "field 'env_kwargs': CleanRL's scripts make their environment from its id alone and "
                "take no arguments for it: leave env_kwargs empty"
            )
        if config.mode == "evaluate":
            _model, trained = self._evaluated_model(config)
            self._check_extras(trained)
            if config.budget.episodes is None:
                raise ConfigError("field 'budget.episodes': an evaluation plays a number of episodes")
            return
        if not config.algorithm:
            raise ConfigError("field 'algorithm': choose a CleanRL script, e.g. ppo")
        if config.budget.timesteps is None:
            raise ConfigError("field 'budget.timesteps': CleanRL trains for a number of environment steps")
        if config.warm_start is not None:
            self._warm_start(config)
        _check_source(config)
        self._check_extras(config)
        if self.bundles.installed(self.bundle) or ScriptSource.of(config.params).python:
            resolved = self._resolve(config, gpu=False)
            with self._lock:
                self._resolved[(config.model_dump_json(), False)] = resolved
                while len(self._resolved) > _RESOLVED_KEPT:
                    self._resolved.pop(next(iter(self._resolved)))

    def _check_extras(self, config: RunConfig) -> None:
        """Refuse a run of the bundle's scripts on an environment of a family one of the bundle's extras
        brings (Atari: ``atari``), or of a script bound to such a family (``ppo_atari_envpool``:
        ``envpool``), while the installed bundle does not hold that extra, current.

        Raises:
            ConfigError: naming the env (or the script), the extra and the command that adds it.
        """
        if not self.uses_bundle(config) or not self.bundles.installed(self.bundle):
            return
        status = self.bundles.status(self.bundle)
        script_family = _script_family(config.algorithm or "")
        # A script that makes its envs with its family's own library (EnvPool) needs that, not the id's family.
        env_family = "" if script_family in OWN_MAKERS else env_family_of(config.env_id)
        for extra in self.bundles.spec(self.bundle).extras:
            if extra.name in status.extras:
                continue
            held = "is out of date" if extra.name in status.extras_out_of_date else "it does not have"
            needs = f"needs the {self.bundle} bundle's {extra.name} extra, which {held}"
            if env_family in extra.families:
                raise ConfigError(
                    f"field 'env_id': {config.env_id} ({env_family} environment) {needs}: "
                    f"{install_hint(self.bundle, extra.name)}"
                )
            if script_family in extra.families:
                raise ConfigError(
                    f"field 'algorithm': {config.algorithm} ({script_family} script) {needs}: "
                    f"{install_hint(self.bundle, extra.name)}"
                )

    def _evaluated_model(self, config: RunConfig) -> tuple[Path, RunConfig]:
        """The model file an evaluation plays, checked to be as it was saved, and the config of the
        run that trained it (whose algorithm and scripts the model is loaded into).

        Raises:
            ConfigError: naming the ``evaluation`` field: no such run or model, a path outside the
                run, a file the run never saved, or one gone or changed since it was saved; or the
                ``env_id`` field, when it is not the environment the model was trained on.
        """
        assert config.evaluation is not None
        run_id = config.evaluation.run_id
        files = RunDir(self.home.run_dir(run_id))
        if not files.path.is_dir():
            raise ConfigError(f"field 'evaluation.run_id': no run {run_id}")
        field = "field 'evaluation.checkpoint'"
        try:
            model = (files.path / (config.evaluation.checkpoint or FINAL_MODEL)).resolve()
            if not model.is_relative_to(files.path.resolve()):
                raise ConfigError(f"{field}: {config.evaluation.checkpoint!r} is outside the run")
            found = model.is_file()
        except OSError as exc:
            raise ConfigError(f"{field}: cannot look for it: {exc.strerror}") from None
        if not found:
            raise ConfigError(f"{field}: run {run_id} has no model at {model}")
        try:
            trained = files.read_config()
            saved = files.models()
        except GymGuiError as exc:
            raise ConfigError(f"field 'evaluation.run_id': the trained run cannot be read: {exc}") from None
        if trained.mode != "train" or not trained.algorithm:
            raise ConfigError(f"field 'evaluation.run_id': run {run_id} is not a CleanRL training run")
        relative = model.relative_to(files.path.resolve()).as_posix()
        entry = next((entry for entry in saved if entry.path == relative), None)
        if entry is None:
            offered = ", ".join(entry.path for entry in saved) or "none"
            raise ConfigError(
                f"{field}: {relative!r} is not a saved model of run {run_id} (its models: {offered})"
            )
        refusal = saved_model_refusal(run_id, entry, model)
        if refusal:
            raise ConfigError(f"{field}: {refusal}")
        # A network sized for one env's spaces plays no other, and a return on another env is no measure.
        if trained.env_id != config.env_id:
            raise ConfigError(
                f"field 'env_id': the model of run {run_id} was trained on {trained.env_id}; "
                f"it cannot play {config.env_id}"
            )
        return model, trained

    def _warm_start(self, config: RunConfig) -> tuple[Path, dict[str, str]]:
        """The saved model a warm start loads and its manifest entry (``run_id``, ``checkpoint``,
        ``sha256``), after checking it can fit: the parent is a CleanRL training run of the same
        algorithm family on the same environment, and the checkpoint is one of its saved models.

        Raises:
            ConfigError: naming the ``warm_start`` field and why the model cannot be loaded.
        """
        assert config.warm_start is not None
        parent_id, checkpoint = config.warm_start.run_id, config.warm_start.checkpoint or FINAL_MODEL
        family = warm_start_family(config.algorithm)
        if family is None:
            families = ", ".join(f"the {name} family" for name in WARM_START_NETWORKS)
            raise ConfigError(
                f"field 'warm_start': {config.algorithm} cannot start from a saved model; "
                f"warm starts are for {families}"
            )
        files = RunDir(self.home.run_dir(parent_id))
        if not files.path.is_dir():
            raise ConfigError(f"field 'warm_start.run_id': there is no run {parent_id}")
        try:
            parent = files.read_config()
        except StorageError as exc:
            raise ConfigError(f"field 'warm_start.run_id': run {parent_id} cannot be read: {exc}") from None
        if parent.worker != config.worker or parent.mode != "train":
            raise ConfigError(f"field 'warm_start.run_id': run {parent_id} is not a CleanRL training run")
        parent_family = warm_start_family(parent.algorithm)
        if parent_family != family:
            raise ConfigError(
                f"field 'warm_start.run_id': run {parent_id} trained {parent.algorithm} "
                f"({parent_family or 'no warm-start'} family) and this run trains {config.algorithm} "
                f"({family} family): their models do not match"
            )
        if parent.env_id != config.env_id or parent.env_kwargs != config.env_kwargs:
            raise ConfigError(
                f"field 'warm_start.run_id': run {parent_id} trained on {parent.env_id} and this run "
                f"trains on {config.env_id}: the model's observation and action spaces are the parent's"
            )
        saved = {entry.path: entry for entry in files.saved_models()}
        if checkpoint not in saved:
            offered = ", ".join(saved) or "none"
            raise ConfigError(
                f"field 'warm_start.checkpoint': {checkpoint!r} is not a saved model of run {parent_id} "
                f"(its models: {offered})"
            )
        model = files.artifact_path(checkpoint)
        assert model is not None
        try:
            digest = file_sha256(model)
        except OSError as exc:
            raise ConfigError(f"field 'warm_start.checkpoint': cannot read {model}: {exc.strerror}") from None
        return model, {"run_id": parent_id, "checkpoint": checkpoint, "sha256": digest}

    def check_model(self, path: Path, algorithm: str, env_id: str) -> ModelCheck:
        """Load ``path`` in the bundle as an evaluation does (``gym_gui_cleanrl_worker.evaluate``, no
        episode played), into the bundle's script of ``algorithm`` on ``env_id``, and refuse it unless
        it is a model of ``algorithm``."""
        result = run_helper(
            self.python(ScriptSource()),
            "gym_gui_cleanrl_worker.evaluate",
            *("--model", str(path), "--algo", algorithm, "--env-id", env_id, "--episodes", "0"),
        )
        lines = [line.strip() for line in (result.stdout or "").splitlines() if line.strip()]
        try:
            summary = json.loads(lines[-1]) if result.returncode == 0 and lines else None
        except ValueError:
            summary = None
        if not isinstance(summary, dict):
            reason = loader_line(result.stderr) or f"exit code {result.returncode}"
            raise ConfigError(f"{path} is not a loadable CleanRL model for {env_id}: {reason}")
        return ModelCheck(stored_as=FINAL_MODEL, step=int(summary.get("step") or 0))

    # ------------------------------------------------------------ operators

    def operator(self, source: OperatorSource) -> OperatorPlan:
        """A training run's model as an operator: the card from the run's config and the spaces its
        interpreter's env table gives (no model loaded, no torch imported here), and the command that
        serves it in that interpreter (``gym_gui_cleanrl_worker.operator``).

        Raises:
            ConfigError: the run is not a CleanRL training run, or has no model to act with.
        """
        config, run = source.config, source.run_id
        if config.mode != "train" or not config.algorithm:
            raise ConfigError(f"run {run} is a CleanRL {config.mode} run, not a training run: no model")
        if source.model is None:
            raise ConfigError(f"run {run} saved no model for an operator to act with")
        script = ScriptSource.of(config.params)
        spaces = self._ask(script, "--algo", config.algorithm, "--spaces", config.env_id)
        card = OperatorCard(
            name=config.algorithm,
            kind=PLUGIN.spec.kind,
            source_run=run,
            observation=SpaceSpec.from_json(spaces["observation"]),
            action=SpaceSpec.from_json(spaces["action"]),
            env_ids=(config.env_id,),
        )
        module = "gym_gui_cleanrl_worker.operator"
        argv = [str(self.python(script)), "-m", module, "--model", str(source.model), "--source-run", run]
        argv += [*_source_args(config), "--env-id", config.env_id]
        return OperatorPlan(card=card, argv=argv, env=dict(MODEL_ENV))

    def _script_argv(self, config: RunConfig, gpu: bool) -> dict[str, Any]:
        """:meth:`_resolve`, reusing the answer validate got for the same config at submit."""
        with self._lock:
            known = self._resolved.pop((config.model_dump_json(), gpu), None)
        return known if known is not None else self._resolve(config, gpu)

    def _resolve(self, config: RunConfig, gpu: bool) -> dict[str, Any]:
        """The script's path and exact flags: user parameters checked strictly against the script's
        own definitions; the flags gym_gui maps from the config given only where the script has them.

        The script's definitions come from its interpreter (with the verdict that the script runs
        there and trains on the config's env); the flags are then made here, by the same code."""
        assert config.algorithm is not None
        # The verdict (the script runs here, and trains on the env) is a question of its own; the
        # definitions are the form's answer, so a daemon that has shown the form asks only that.
        source = ScriptSource.of(config.params)
        self._ask(source, "--algo", config.algorithm, "--env-id", config.env_id)
        description = self.arguments(source, config.algorithm)
        try:
            return resolve_command(
                description,
                json.loads(json.dumps(script_params(config.params))),
                self._mapped(config, gpu),
                cleanrl_form.WITHHELD_FLAGS,
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    @staticmethod
    def _mapped(config: RunConfig, gpu: bool) -> dict[str, Any]:
        """The values of :data:`MAPPED_FLAGS` for ``config`` (unset fields give no flag)."""
        mapped: dict[str, Any] = {
            "exp-name": config.algorithm,
            "env-id": config.env_id,
            "cuda": gpu,
            "track": config.tracking.wandb_mode != "disabled",
            "seed": config.seed,
            "total-timesteps": config.budget.timesteps,
            "wandb-project-name": config.tracking.wandb_project or None,
            "wandb-entity": config.tracking.wandb_entity or None,
        }
        return {flag: value for flag, value in mapped.items() if value is not None}

    @staticmethod
    def _warm(config: RunConfig) -> bool:
        """Whether ``config``'s script can start from the bundle's zygote: the bundle's own interpreter
        and scripts (another's modules are not the ones the zygote imported), and warm starts not
        turned off in the daemon's environment."""
        return ScriptSource.of(config.params).bundled and os.environ.get(WARM_SWITCH) != "0"

    def _ensure_zygote(self, python: Path) -> None:
        """Have the bundle's zygote listen (started, or started again after a reinstall); one that cannot
        start leaves runs to start cold."""
        try:
            self.zygotes.ensure(python, self.bundles.install_id(self.bundle))
        except (OSError, ZygoteError) as exc:
            log.warning("the CleanRL zygote for %s could not start: %s", python, exc)

    def _start_zygote(self, config: RunConfig, python: Path, run_dir: Path) -> dict[str, str]:
        """Have the bundle's zygote listen where the run's worker looks for it (``zygote.socket_path``
        of its interpreter), so the script is forked warm. Only for a run about to launch: a dry run
        starts nothing, and a preview (whose run is never stored, so it has no directory) must not
        wait seconds for a zygote to import. A run that cannot start warm (:meth:`_warm`) gets the
        switch ``GYM_GUI_CLEANRL_WARM=0`` instead."""
        if not self._warm(config):
            return {WARM_SWITCH: "0"}
        if not config.dry_run and run_dir.is_dir():
            self._ensure_zygote(python)
        return {}

    def uses_bundle(self, config: RunConfig) -> bool:
        """Whether the run's scripts run in the bundle's interpreter (not in ``params.python``)."""
        return ScriptSource.of(config.params).python is None

    def gpu_available(self, source: ScriptSource) -> bool:
        """Whether torch in the scripts' interpreter sees a GPU (asked once per interpreter)."""
        return cuda_available(self.python(source))

    def _environment(self, config: RunConfig, python: Path) -> dict[str, Any]:
        """The interpreter the script runs in and its exact package set (pip freeze)."""
        if ScriptSource.of(config.params).python is None:
            return {
                "bundle": self.bundle,
                "python": str(python),
                "packages": self.bundles.freeze(self.bundle),
            }
        return {"bundle": None, "python": str(python), "packages": pip_freeze(python)}

    # ------------------------------------------------------------ launch

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        python = self.python(ScriptSource.of(config.params))
        warnings: list[str] = []
        # MuJoCo renders (videos, evaluation frames) headless through EGL: a daemon has no display.
        env: dict[str, str] = dict(HEADLESS_MUJOCO)
        if config.mode == "evaluate":
            assert config.budget.episodes is not None
            # Checked again at launch: the run may have waited in the queue.
            model, trained = self._evaluated_model(config)
            argv = [str(python), "-m", "gym_gui_cleanrl_worker", "evaluate", "--model", str(model)]
            argv += [*_source_args(trained), "--episodes", str(config.budget.episodes)]
            if config.seed is not None:
                argv += ["--seed", str(config.seed)]
            if config.evaluation is not None and config.evaluation.real_time:
                argv.append("--real-time")
            if config.evaluation is not None and config.evaluation.epsilon:
                argv += ["--epsilon", repr(config.evaluation.epsilon)]
            return LaunchPlan(
                argv=argv,
                env=dict(MODEL_ENV),
                manifest={"evaluates": config.evaluation.model_dump() if config.evaluation else None},
            )

        gpu = False
        if config.resources.gpu:
            gpu = cuda_available(python)
            if not gpu and config.resources.gpu_mandatory:
                raise ConfigError(f"a GPU is mandatory for this run, but torch in {python} sees none")
            if not gpu:
                warnings.append(
                    "no GPU is available to torch in the worker's environment: the run goes on the CPU"
                )
        if not gpu:
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.update(self._start_zygote(config, python, run_dir))
        resolved = self._script_argv(config, gpu)
        script, flags = resolved["script"], resolved["argv"]
        argv = [str(python), "-m", "gym_gui_cleanrl_worker", "train", "--script", script]
        if config.checkpoints.every_steps:
            argv += ["--checkpoint-every", str(config.checkpoints.every_steps)]
        warm_start: dict[str, str] | None = None
        if config.warm_start is not None:
            model, warm_start = self._warm_start(config)
            network = WARM_START_NETWORKS[str(warm_start_family(config.algorithm))]
            argv += ["--warm-start", str(model), "--warm-start-module", network]
        argv += ["--", *flags]

        if config.tracking.wandb_mode != "disabled":
            online = config.tracking.wandb_mode == "online" and "WANDB_API_KEY" in secret_env
            if config.tracking.wandb_mode == "online" and not online:
                warnings.append(
                    "no W&B API key was given to this run: W&B tracks offline; `gym-gui wandb sync RUN` uploads it later"
                )
            # W&B's own directories are the run's: nothing of it lands in the user's home.
            mode = "online" if online else "offline"
            env.update(wandb_environment(config, run_id, run_dir, mode, "cleanRL"))
        secrets: dict[str, str] = {}
        if env.get("WANDB_MODE") == "online":
            secrets["WANDB_API_KEY"] = secret_env["WANDB_API_KEY"]
        script_argv = [str(python), script, *flags]
        manifest: dict[str, Any] = {"environment": self._environment(config, python)}
        if warm_start is not None:
            manifest["warm_start_from"] = warm_start
        return LaunchPlan(
            argv=argv,
            env=env,
            warnings=warnings,
            manifest=manifest,
            extras=ManifestExtras({"script": script, "script_command": script_argv}),
            secrets=secrets,
            script_argv=script_argv,
        )


def _source_args(trained: RunConfig) -> list[str]:
    """The loader's options naming the script a model of the training run ``trained`` is loaded into:
    from the run's own config, never from the model file."""
    assert trained.algorithm is not None
    scripts_dir = ScriptSource.of(trained.params).scripts_dir
    return ["--algo", trained.algorithm, *(["--scripts-dir", scripts_dir] if scripts_dir else [])]


def _script_family(algorithm: str) -> str:
    """The environment family a CleanRL script is bound to, by its name as CleanRL names them
    (``ppo_atari_envpool``: envpool, ``dqn_atari``: atari; "" for one that runs any family's ids), so
    that a run is judged without asking the bundle (which reads it from the script's imports:
    ``scripts.AlgorithmInfo.env_family``)."""
    own = next((family for family in OWN_MAKERS if family in algorithm), "")
    return own or ("atari" if "atari" in algorithm else "")


def _check_source(config: RunConfig) -> None:
    """Refuse a checkout or interpreter (``params.scripts_dir``, ``params.python``) that names no file.

    Raises:
        ConfigError: naming the parameter (``gym_gui.core.config.path_param``).
    """
    for name in SOURCE_PARAMS:
        path_param(config.params, name)


PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="cleanrl",
        display_name="CleanRL Worker",
        lane=Lane.ANALYTICS,
        # Pause stops the script's process (SIGSTOP) and resume continues it (SIGCONT).
        capabilities=Capabilities(pause=True, checkpoint=True, evaluation=True, warm_start=True),
        bundle=BUNDLE.name,
        rank=30,
        description="Real CleanRL scripts (ppo, dqn, sac, …) with their own arguments, metrics and models.",
        return_metric=cleanrl_form.RETURN_METRIC,
    ),
    bundle=BUNDLE,
    launcher=CleanRLLauncher,
    form=cleanrl_form.without_bundle(),
)
