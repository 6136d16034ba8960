"""The Spade BDI worker's plugin: how gym_gui lists, checks, describes and launches its runs.

This module runs in gym_gui's own environment (the daemon loads it through the ``gym_gui.workers``
entry point), with the plain modules it shares with the worker (params, environments, checkpoint);
everything that imports SPADE runs inside the spade_bdi bundle.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from gym_gui_sdk.contract import FormSpec, ManifestExtras

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, InvalidRunId
from gym_gui.core.ids import validate_run_id
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.envs.check import check_env
from gym_gui.workers import (
    BundleSpec,
    LaunchContext,
    LaunchPlan,
    ModelCheck,
    ModuleLauncher,
    OperatorPlan,
    OperatorSource,
    WorkerPlugin,
)
from gym_gui_spade_bdi_worker.checkpoint import FINAL, CheckpointRefused, QTableFile
from gym_gui_spade_bdi_worker.environments import EnvRefused, grid_map, make_env, run_env_kwargs, table_shape
from gym_gui_spade_bdi_worker.operator import operator_card
from gym_gui_spade_bdi_worker.params import (
    PARAMETERS,
    PASSWORD_ENV,
    PLANS_SUFFIX,
    final_epsilon,
    problems,
    resolve,
)

PACKAGE = "gym_gui_spade_bdi_worker"
# A plans check is a Python start in the bundle and one parse: well under a second.
_PLANS_CHECK_SECONDS = 60
# How far above epsilon_end a run's last episode may still explore before the plan says so.
_STILL_EXPLORING = 0.05

BUNDLE = BundleSpec(
    name="spade_bdi",
    requirements="workers/spade_bdi_worker/requirements.txt",
    local_packages=("sdk", "workers/spade_bdi_worker"),
    check_imports=("spade", "spade_bdi", "pyjabber", "gymnasium", "gym_gui_sdk", PACKAGE),
)


class SpadeBDILauncher(ModuleLauncher):
    """``python -m gym_gui_spade_bdi_worker`` in the spade_bdi bundle, after checking what it cannot learn."""

    def __init__(self, context: LaunchContext) -> None:
        super().__init__(context, PACKAGE, bundle=BUNDLE.name)

    def validate(self, config: RunConfig) -> None:
        """Refuse, before the run is stored, parameters it does not have, environments without a
        table, plans that are not there, and Q-tables of another environment, shape or content.

        Raises:
            ConfigError: naming the field and what is wrong.
        """
        self._q_table(config)

    def _q_table(self, config: RunConfig) -> Path | None:
        """The checked Q-table the run starts from (warm start, or the one an evaluation plays)."""
        if config.mode not in ("train", "evaluate"):
            raise ConfigError(f"field 'mode': the Spade BDI worker trains or evaluates, got {config.mode!r}")
        for name, problem in problems(config.params):
            raise ConfigError(f"field 'params.{name}': {problem}")
        values = resolve(config.params)
        asl = str(values["asl"]).strip()
        if asl:
            self._check_plans(Path(asl))
        check_env(config.env_id)
        source: Path | None = None
        if config.mode == "evaluate":
            if config.evaluation is None or config.budget.episodes is None:
                raise ConfigError("field 'budget.episodes': an evaluation plays a number of episodes")
            field = "evaluation.checkpoint"
            source = self._in_run(config.evaluation.run_id, config.evaluation.checkpoint, field)
        elif str(values["warm_start"]).strip():
            run_id, _, inside = str(values["warm_start"]).strip().partition("/")
            field = "params.warm_start"
            source = self._in_run(run_id, inside or None, field)
        table = None
        if source is not None:
            try:
                table = QTableFile.load(source)
            except CheckpointRefused as exc:
                raise ConfigError(f"field '{field}': {exc}") from None
        try:
            env = make_env(config.env_id, run_env_kwargs(config.model_dump(), table))
        except EnvRefused as exc:
            raise ConfigError(str(exc)) from None
        try:
            shape, grid = table_shape(env), grid_map(env)
        finally:
            env.close()
        if table is None or source is None:
            return None
        try:
            table.check_fits(config.env_id, shape, grid, source)
        except CheckpointRefused as exc:
            raise ConfigError(f"field '{field}': {exc}") from None
        return source

    def _check_plans(self, path: Path) -> None:
        """Refuse an ``asl`` that is no plans file: a relative path, a name not ending in .asl, no
        file, or (once the bundle is installed: at submit, else at launch) text that does not parse
        as plans, checked in the bundle by ``gym_gui_spade_bdi_worker.plans``, whose parser this is.
        Its answer names a line, never the file's text.

        Raises:
            ConfigError: naming the field and what is wrong.
        """
        field = "field 'params.asl'"
        if not path.is_absolute():
            raise ConfigError(
                f"{field}: must be an absolute path (got {str(path)!r}); the daemon has another working directory"
            )
        if path.suffix != PLANS_SUFFIX:
            raise ConfigError(f"{field}: {path} is not a plans file: its name must end in {PLANS_SUFFIX}")
        if not path.is_file():
            raise ConfigError(f"{field}: no plans file at {path}")
        if not self.context.bundles.installed(BUNDLE.name):
            return  # the run waits for its bundle, and its plan checks the plans before launch
        try:
            checked = subprocess.run(
                [str(self.python()), "-m", f"{PACKAGE}.plans", str(path)],
                capture_output=True,
                text=True,
                timeout=_PLANS_CHECK_SECONDS,
                env={"PATH": os.defpath},  # nothing of the daemon's environment for a file to show
            )
            answer = json.loads(checked.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            # The check's own output is not shown: it could quote the file.
            raise ConfigError(
                f"{field}: the plans in {path} could not be checked: {type(exc).__name__}"
            ) from None
        if not isinstance(answer, dict) or "error" in answer or checked.returncode != 0:
            why = answer.get("error") if isinstance(answer, dict) else None
            raise ConfigError(f"{field}: {why or f'the plans check failed (exit code {checked.returncode})'}")

    def _in_run(self, run_id: str, inside: str | None, field: str) -> Path:
        """A file inside run ``run_id`` (its final Q-table by default), refusing paths that leave it."""
        try:
            validate_run_id(run_id)
        except InvalidRunId as exc:
            raise ConfigError(f"field '{field}': {exc}") from None
        run_dir = self.context.home.run_dir(run_id)
        if not run_dir.is_dir():
            raise ConfigError(f"field '{field}': no run {run_id}")
        path = (run_dir / (inside or FINAL)).resolve()
        if not path.is_relative_to(run_dir.resolve()):
            raise ConfigError(f"field '{field}': {inside!r} is outside run {run_id}")
        if not path.is_file():
            raise ConfigError(f"field '{field}': run {run_id} has no Q-table at {inside or FINAL}")
        return path

    def plan(
        self, run_id: str, config: RunConfig, run_dir: Path, secret_env: Mapping[str, str]
    ) -> LaunchPlan:
        source = self._q_table(config)
        argv = [str(self.python()), "-m", PACKAGE]
        if source is not None:
            argv += ["--q-table", str(source)]
        secrets: dict[str, str] = {}
        if resolve(config.params)["xmpp_server"] == "external":
            if not secret_env.get(PASSWORD_ENV):
                raise ConfigError(
                    f"field 'params.xmpp_server': an external XMPP server needs the agent's password "
                    f"in the run's environment as {PASSWORD_ENV}"
                )
            secrets[PASSWORD_ENV] = secret_env[PASSWORD_ENV]
        return LaunchPlan(
            argv=argv,
            secrets=secrets,
            warnings=_exploration_warnings(config),
            extras=ManifestExtras({"q_table_source": str(source) if source else None}),
        )

    def check_model(self, path: Path, algorithm: str, env_id: str) -> ModelCheck:
        """Read ``path`` as an evaluation would (plain JSON checked by its hash, no code of it run) and
        refuse it unless it is a Q-table of ``env_id`` that fits the environment its own arguments
        make (its map, its ice). ``algorithm`` names the run only: a table is a table.

        Raises:
            ConfigError: it is not a Q-table, or one of another environment, shape or map.
        """
        try:
            table = QTableFile.load(path)
        except CheckpointRefused as exc:
            raise ConfigError(str(exc)) from None
        check_env(env_id)
        try:
            env = make_env(env_id, run_env_kwargs({"env_id": env_id, "mode": "evaluate"}, table))
        except EnvRefused as exc:
            raise ConfigError(f"Q-table {path}: {exc}") from None
        try:
            shape, grid = table_shape(env), grid_map(env)
        finally:
            env.close()
        try:
            table.check_fits(env_id, shape, grid, path)
        except CheckpointRefused as exc:
            raise ConfigError(str(exc)) from None
        return ModelCheck(stored_as=FINAL, step=table.steps)

    def operator(self, source: OperatorSource) -> OperatorPlan:
        """The run's Q-table (or the checkpoint ``source`` names) played greedily by
        ``python -m gym_gui_spade_bdi_worker.operator`` in the spade_bdi bundle; the card is read
        from the file itself (plain JSON, a few kilobytes).

        Raises:
            ConfigError: the run left no Q-table, or the file is not one (damaged: its hash).
        """
        if source.model is None:
            raise ConfigError(f"run {source.run_id or '(config)'} has no Q-table to play")
        try:
            table = QTableFile.load(source.model)
        except CheckpointRefused as exc:
            raise ConfigError(str(exc)) from None
        argv = [str(self.python()), "-m", f"{PACKAGE}.operator", "--q-table", str(source.model)]
        argv += ["--source-run", source.run_id]
        return OperatorPlan(card=operator_card(table, source.run_id), argv=argv)

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        """The parameters gym_gui's generated form shows, one editor each; a run counts episodes."""
        return FormSpec(parameters=PARAMETERS, budget_bounds=("episodes", "timesteps"))


def _exploration_warnings(config: RunConfig) -> list[str]:
    """What the form's preview and the run say when the run's own ``epsilon_decay`` leaves epsilon
    well above its floor in its last episode: it still explores as it ends (the schedule fitted to
    the budget, without ``epsilon_decay``, always ends at ``epsilon_end``)."""
    values = resolve(config.params)
    episodes = config.budget.episodes
    if config.mode != "train" or values["epsilon_decay"] is None or not episodes:
        return []
    final, floor = final_epsilon(values, episodes), float(values["epsilon_end"])
    if final - floor <= _STILL_EXPLORING:
        return []
    return [
        f"epsilon_decay {values['epsilon_decay']:g} leaves epsilon at {final:.2f} in the last of "
        f"{episodes} episodes (epsilon_end {floor:g}): the run still explores as it ends; leave "
        "epsilon_decay empty to fit the schedule to the budget"
    ]


PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="spade_bdi",
        display_name="Spade BDI Worker",
        # Every step is stored: watched live, replayed with its Q-values, curves in Charts.
        lane=Lane.TELEMETRY,
        # Pause halts the reasoning cycle; Checkpoint now saves the Q-table; its tables play back greedily.
        capabilities=Capabilities(pause=True, checkpoint=True, evaluation=True),
        bundle=BUNDLE.name,
        rank=10,
        # An external XMPP server's password: from the submitter's shell (CLI) or the form, never stored.
        secrets=(PASSWORD_ENV,),
        default_budget=("episodes", 5000),
        description="A SPADE BDI agent whose AgentSpeak plans learn by Q-learning (FrozenLake, CliffWalking, Taxi).",
    ),
    bundle=BUNDLE,
    launcher=SpadeBDILauncher,
    tabs={Lane.TELEMETRY: ("live", "charts", "checkpoints", "replay")},
)
