"""The tabular_q worker kind as gym_gui sees it: listed, described, checked and launched.

gym_gui loads this module through the ``gym_gui.workers`` entry point (pyproject.toml), in its own
environment: the daemon, the CLI and the window each import it once. It is the only module of the
package that imports gym_gui; the worker process (``__main__``) never does.
"""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium
from gym_gui_sdk.contract import FormSpec, Section

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.workers import LaunchContext, ModuleLauncher, WorkerPlugin
from tabular_q_worker.params import PARAMETERS, problems


class TabularQLauncher(ModuleLauncher):
    """``python -m tabular_q_worker`` in gym_gui's own environment, after checking what it cannot learn."""

    def __init__(self, context: LaunchContext) -> None:
        super().__init__(context, "tabular_q_worker")

    def validate(self, config: RunConfig) -> None:
        """Refuse, before the run is stored, parameters it does not have or cannot use, and
        environments without a finite number of states and actions (no table can hold them).

        Raises:
            ConfigError: naming the field (``params.alpha``, ``env_id``, …) and what is wrong.
        """
        if config.mode != "train":
            raise ConfigError(f"field 'mode': tabular Q-learning runs train, got {config.mode!r}")
        for name, problem in problems(config.params):
            raise ConfigError(f"field 'params.{name}': {problem}")
        try:
            env = gymnasium.make(config.env_id, **config.env_kwargs)
        except TypeError as exc:  # a keyword the environment does not take
            raise ConfigError(f"field 'env_kwargs': {config.env_id} refused them: {exc}") from None
        try:
            observations, actions = env.observation_space, env.action_space
        finally:
            env.close()
        for what, space in (("observations", observations), ("actions", actions)):
            if not isinstance(space, gymnasium.spaces.Discrete):
                raise ConfigError(
                    f"field 'env_id': tabular Q-learning needs discrete observations and actions; "
                    f"{config.env_id} has {what} {space}"
                )

    def describe(self, query: Mapping[str, str]) -> FormSpec:
        """The parameters gym_gui's generated form shows, one editor each, and its checkpoints section
        (a Q-table saved every N steps, besides the one "Checkpoint now" saves)."""
        return FORM


FORM = FormSpec(parameters=PARAMETERS, sections=frozenset({Section.CHECKPOINTS}))

PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="tabular_q",
        display_name="Tabular Q-Learning",
        # Every step is stored: watched live, replayed, and the learning curve is in Charts.
        lane=Lane.TELEMETRY,
        # Pause stops it between two steps; Checkpoint now saves the Q-table as it is.
        capabilities=Capabilities(pause=True, checkpoint=True),
        description="Epsilon-greedy Q-learning on toy-text environments (FrozenLake, CliffWalking, Taxi): an example plugin.",
    ),
    launcher=TabularQLauncher,
    form=FORM,
    tabs={Lane.TELEMETRY: ("live", "charts", "replay")},
)
