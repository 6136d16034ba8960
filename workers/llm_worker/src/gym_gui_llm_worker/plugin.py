"""The LLM worker's plugin: how gym_gui lists, checks, describes and launches LLM runs.

This module runs in gym_gui's own environment (the daemon, the CLI and the window load it through
the ``gym_gui.workers`` entry point) and imports only the package's plain modules (parameters,
prompts, response-log names); the worker process runs in the llm bundle, which has openai.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_gui_sdk.contract import FormSpec, ManifestExtras

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.envs.check import make_env
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import BundleSpec, LaunchContext, LaunchPlan, ModuleLauncher, WorkerPlugin
from gym_gui_llm_worker import params as llm_params
from gym_gui_llm_worker import prompts
from gym_gui_llm_worker.responses import RUN_LOG, SHARED_CACHE

BUNDLE = BundleSpec(
    name="llm",
    requirements="workers/llm_worker/requirements.txt",
    local_packages=("sdk", "workers/llm_worker"),
    check_imports=("openai", "gymnasium", "minigrid", "gym_gui_sdk", "gym_gui_llm_worker"),
)


class LLMLauncher(ModuleLauncher):
    """``python -m gym_gui_llm_worker`` in the llm bundle, after checking what it cannot play."""

    def __init__(self, context: LaunchContext) -> None:
        super().__init__(context, "gym_gui_llm_worker", bundle=BUNDLE.name)

    def validate(self, config: RunConfig) -> None:
        """Refuse, before the run is stored, bad parameters, a template with unknown placeholders,
        environments without discrete actions, a no-op fallback where there is none, and a
        ``resume_from`` run that is not a run of the same environment and seed.

        Raises:
            ConfigError: naming the field (``params.temperature``, ``env_id``, …) and what is wrong.
        """
        if config.mode != "train":
            raise ConfigError(f"field 'mode': the LLM worker plays runs of mode train, got {config.mode!r}")
        try:
            params = llm_params.parse(config.params)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if params.system_prompt and (problem := prompts.check_template(params.system_prompt)):
            raise ConfigError(f"field 'params.system_prompt': {problem}")
        text = self._env_text(config.env_id, config.env_kwargs)
        if params.fallback == "noop" and text.noop is None:
            raise ConfigError(
                f"field 'params.fallback': {config.env_id} has no action that does nothing; "
                "use random or repeat"
            )
        if params.resume_from:
            self._resumed(config, params.resume_from)

    @staticmethod
    def _env_text(env_id: str, env_kwargs: Mapping[str, Any]) -> prompts.EnvText:
        try:
            env = make_env(env_id, **env_kwargs)
        except TypeError as exc:  # a keyword the environment does not take
            raise ConfigError(f"field 'env_kwargs': {env_id} refused them: {exc}") from None
        try:
            return prompts.env_text(env, env_id)
        except ValueError as exc:
            raise ConfigError(f"field 'env_id': {exc}") from None
        finally:
            env.close()

    def _resumed(self, config: RunConfig, run_id: str) -> Path:
        """The response log of the run ``config`` resumes."""
        field = "field 'params.resume_from'"
        try:
            run_dir = RunDir(self.context.home.run_dir(validate_run_id(run_id)))
        except GymGuiError as exc:
            raise ConfigError(f"{field}: {exc}") from None
        if not run_dir.path.is_dir():
            raise ConfigError(f"{field}: no run {run_id}")
        try:
            earlier = run_dir.read_config()
        except GymGuiError as exc:
            raise ConfigError(f"{field}: {exc}") from None
        if earlier.worker != config.worker or earlier.env_id != config.env_id or earlier.seed != config.seed:
            raise ConfigError(
                f"{field}: run {run_id} is a {earlier.worker} run of {earlier.env_id} with seed "
                f"{earlier.seed}; a resumed run plays the same environment with the same seed"
            )
        log = run_dir.path / RUN_LOG
        if not log.is_file():
            raise ConfigError(f"{field}: run {run_id} has no response log ({RUN_LOG})")
        return log

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        params = llm_params.parse(config.params)
        argv = [str(self.python()), "-m", self.module]
        if params.resume_from:
            argv += ["--replay", str(self._resumed(config, params.resume_from))]
        if params.response_cache:
            argv += ["--cache", str(self.context.home.root / SHARED_CACHE)]
        # The endpoint's key, when the run was given one; no other secret reaches this worker.
        key = secret_env.get(llm_params.API_KEY_ENV)
        secrets = {llm_params.API_KEY_ENV: key} if key else {}
        extras = ManifestExtras({"llm": {"base_url": params.base_url, "model": params.model}})
        return LaunchPlan(argv=argv, secrets=secrets, extras=extras)

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        """The parameters the generated form shows; with ``env_id`` in ``query``, the system
        prompt's default is that environment's template (the worker uses it when the parameter is
        left as it is), so the form asks again when its environment changes."""
        defaults: dict[str, Any] = {}
        env_id = query.get("env_id")
        if env_id:
            try:
                family = self._env_text(env_id, {}).family
            except GymGuiError:
                family = ""  # the form marks the env id itself
            if family:
                defaults["system_prompt"] = prompts.template(family)
        return FormSpec(parameters=llm_params.describe(defaults), env_dependent=True)


PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="llm",
        display_name="LLM Multi-Step Worker",
        # Every step with its prompt and reply (replayable), and the run's metrics in Charts.
        lane=Lane.HYBRID,
        capabilities=Capabilities(pause=True),
        bundle=BUNDLE.name,
        rank=20,
        description="An agent that asks a language model behind an OpenAI-compatible endpoint for its actions.",
        secrets=(llm_params.API_KEY_ENV,),
        default_budget=("episodes", 20),
    ),
    bundle=BUNDLE,
    launcher=LLMLauncher,
)
