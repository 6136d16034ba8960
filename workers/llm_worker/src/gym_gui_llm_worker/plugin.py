"""The LLM worker's plugin: how gym_gui lists, checks, describes and launches LLM runs.

This module runs in gym_gui's own environment (the daemon, the CLI and the window load it through
the ``gym_gui.workers`` entry point) and imports only the package's plain modules (parameters,
prompts, response-log names); the worker process runs in the llm bundle, which has openai.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_gui_sdk.contract import FormSpec, ManifestExtras

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.envs.catalog import env_entry
from gym_gui.envs.check import make_env
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import (
    BundleSpec,
    LaunchContext,
    LaunchPlan,
    ModuleLauncher,
    OperatorPlan,
    OperatorSource,
    WorkerPlugin,
)
from gym_gui_llm_worker import params as llm_params
from gym_gui_llm_worker import prompts
from gym_gui_llm_worker.card import operator_card
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
        environments without discrete actions, image input for an environment that renders no
        frames, a no-op fallback where there is none, and a ``resume_from`` run that is not a run
        of the same environment and seed.

        Raises:
            ConfigError: naming the field (``params.temperature``, ``env_id``, …) and what is wrong.
        """
        if config.mode != "train":
            raise ConfigError(f"field 'mode': the LLM worker plays runs of mode train, got {config.mode!r}")
        params, _text = self._checked(config)
        if params.resume_from:
            self._resumed(config, params.resume_from)

    def _checked(self, config: RunConfig) -> tuple[llm_params.LLMParams, prompts.EnvText]:
        """The parameters and what the prompts say of the environment, checked as :meth:`validate` says."""
        try:
            params = llm_params.parse(config.params)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if params.system_prompt and (problem := prompts.check_template(params.system_prompt)):
            raise ConfigError(f"field 'params.system_prompt': {problem}")
        text = self._env_text(config.env_id, config.env_kwargs, frames=params.shows_image)
        if params.fallback == "noop" and text.noop is None:
            raise ConfigError(
                f"field 'params.fallback': {config.env_id} has no action that does nothing; "
                "use random or repeat"
            )
        return params, text

    @staticmethod
    def _env_text(env_id: str, env_kwargs: Mapping[str, Any], frames: bool = False) -> prompts.EnvText:
        """What the prompts say of ``env_id``; with ``frames``, refusing an env that renders no RGB frame."""
        board = prompts.board_env_text(env_id)
        if board is not None:  # a seat of a board game: gym_gui sends each turn's board as text
            if frames:
                raise ConfigError(
                    f"field 'params.observation_input': a seat of {env_id} reads the board as text"
                )
            return board
        entry = env_entry(env_id)
        if entry is not None and entry.agents:
            raise ConfigError(
                f"field 'env_id': a language model holds a seat of a board game from the board's text, "
                f"which gym_gui draws for {', '.join(prompts.BOARD_GAMES)}; {env_id} has none"
            )
        try:
            env = make_env(env_id, **env_kwargs)
        except TypeError as exc:  # a keyword the environment does not take
            raise ConfigError(f"field 'env_kwargs': {env_id} refused them: {exc}") from None
        try:
            if frames and "rgb_array" not in (env.metadata.get("render_modes") or ()):
                raise ConfigError(
                    f"field 'params.observation_input': {env_id} renders no frames (no rgb_array "
                    "render mode) to show the model; use text"
                )
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

    def operator(self, source: OperatorSource) -> OperatorPlan:
        """The configuration of ``source`` (a finished llm run's, or an ``llm:CONFIG.json`` file's)
        asking its model for each turn's action: ``python -m gym_gui_llm_worker.operator`` in the
        llm bundle, given the environment and parameters as JSON (no secret is among them; the
        endpoint's key reaches it as the secret ``LLM_API_KEY`` only), and the home's response
        cache when the parameters use it.

        Raises:
            ConfigError: not an llm configuration, or one :meth:`validate` refuses (naming the field).
        """
        config = source.config
        if config.worker != PLUGIN.spec.kind:
            raise ConfigError(
                f"field 'worker': an LLM operator is an llm configuration, got {config.worker!r}"
            )
        params, text = self._checked(config)
        played = {"env_id": config.env_id, "env_kwargs": config.env_kwargs, "params": config.params}
        argv = [str(self.python()), "-m", f"{self.module}.operator", "--config", json.dumps(played)]
        argv += ["--source-run", source.run_id]
        if params.response_cache:
            argv += ["--cache", str(self.context.home.root / SHARED_CACHE)]
        return OperatorPlan(
            card=operator_card(params, text, source.run_id), argv=argv, secrets=(llm_params.API_KEY_ENV,)
        )

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
