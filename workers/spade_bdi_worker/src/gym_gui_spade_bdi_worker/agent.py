"""The SPADE BDI agent: AgentSpeak plans (``asl/q_learning.asl`` or the user's) with Python actions
that do the Q-table work, logged in to an XMPP server.

The worker posts ``!run``; the plans then drive the run and end it with ``.finish``. Between two
reasoning steps the agent looks at the daemon's controls: a pause halts the reasoning cycle, a
stop or a checkpoint request becomes a belief the plans act on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import agentspeak as asp
from agentspeak import runtime as asp_runtime
from spade_bdi.bdi import BDIAgent
from spade_bdi.bdi_behaviour import BDIBehaviour

from gym_gui_spade_bdi_worker.plans import Plans
from gym_gui_spade_bdi_worker.training import Training
from gym_gui_spade_bdi_worker.xmpp import XMPPAccount

# How often the agent looks at the daemon's controls (pause, stop, checkpoint now), in seconds.
CONTROL_PERIOD = 0.05
# Reasoning steps one pass of the behaviour takes before letting the event loop run (XMPP, controls).
STEPS_PER_PASS = 64
# Beliefs the worker sets from what happened (percepts); the plans may add their own.
_EPISODE_BELIEFS = ("goal_reached", "gave_up", "episode_over")


def shipped_plans() -> Path:
    """The plans file shipped with the worker."""
    return Path(str(resources.files("gym_gui_spade_bdi_worker") / "asl" / "q_learning.asl"))


class PlansError(RuntimeError):
    """The plans file cannot be loaded or the plans failed; the message names the file."""


class _Reasoning(BDIBehaviour):
    """spade_bdi's reasoning cycle, taking up to STEPS_PER_PASS steps per pass (one per pass leaves
    most of the time to the event loop's bookkeeping) and idling while nothing is to be done."""

    async def run(self) -> None:
        agent = self.agent
        if not agent.bdi_enabled:
            await asyncio.sleep(0.1)
            return
        if agent.bdi_intention_buffer or self.mailbox_size():
            await super().run()  # messages and posted events go through spade_bdi's own handling
            return
        for _ in range(STEPS_PER_PASS):
            if not agent.bdi_agent.step():
                await asyncio.sleep(0.01)
                return


class QLearningAgent(BDIAgent):
    """A BDI agent whose plans learn a Q-table through the actions of a :class:`Training`."""

    def __init__(self, account: XMPPAccount, plans: Plans, training: Training) -> None:
        self.training = training
        self.account = account
        self.checked_plans = plans
        self.finished: asyncio.Future[str] = asyncio.get_event_loop().create_future()
        super().__init__(account.jid, account.password, str(plans.path), port=account.port)

    # ------------------------------------------------------------ spade hooks

    def add_behaviour(self, behaviour: Any, template: Any = None) -> None:
        if type(behaviour) is BDIBehaviour:
            behaviour = _Reasoning()
        super().add_behaviour(behaviour, template)

    def _load_asl(self) -> None:
        # spade_bdi's own load opens the file again: the agent is built from the text that was
        # checked (plans.read_plans) instead, so what runs is what was checked.
        self.pause_bdi()
        source = asp.StringSource(str(self.checked_plans.path), self.checked_plans.text)
        try:
            self.bdi_agent = self.bdi_env.build_agent(
                source, self.bdi_actions, name=str(self.jid).split("@")[0]
            )
        except Exception as exc:
            raise PlansError(f"plans {self.asl_file}: {exc}") from None
        self.bdi_agent.name = self.jid
        self.resume_bdi()

    async def _async_connect(self) -> None:
        # spade connects to the JID's domain; the server may live elsewhere (or be named by address).
        assert self.client is not None
        connect = self.client.connect
        server = self.account.host

        def connect_to_server(*args: Any, **kwargs: Any) -> Any:
            return connect(*args, **{**kwargs, "host": server})

        self.client.connect = connect_to_server
        await super()._async_connect()

    # ------------------------------------------------------------ beliefs

    def believe(self, name: str, *args: Any) -> None:
        """Replace every ``name/len(args)`` belief by ``name(args)``."""
        beliefs = self.bdi_agent.beliefs[(name, len(args))]
        beliefs.clear()
        beliefs.add(asp.Literal(name, tuple(asp.Literal(a) if isinstance(a, str) else a for a in args)))

    def forget(self, name: str, arity: int = 0) -> None:
        self.bdi_agent.beliefs[(name, arity)].clear()

    def holds(self, name: str, arity: int = 0) -> bool:
        return bool(self.bdi_agent.beliefs[(name, arity)])

    def belief_strings(self) -> list[str]:
        return sorted(str(belief) for group in self.bdi_agent.beliefs.values() for belief in group)

    def post(self, goal: str) -> None:
        """Post the achievement goal ``!goal`` (taken up by the next reasoning step)."""
        self.bdi_intention_buffer.append(
            (asp.Trigger.addition, asp.GoalType.achievement, asp.Literal(goal), asp_runtime.Intention())
        )

    # ------------------------------------------------------------ actions

    def add_custom_actions(self, actions: asp.Actions) -> None:
        training = self.training

        def action(name: str, arity: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
            """Register ``f(*grounded arguments)``; a result (a tuple for several) binds the last arguments."""

            def register(f: Callable[..., Any]) -> Callable[..., Any]:
                def run(agent: Any, term: Any, intention: Any) -> Iterator[None]:
                    scope = intention.scope
                    # Unbound arguments (the outputs) arrive as None.
                    args = [
                        asp.grounded(arg, scope) if asp.is_ground(arg, scope) else None for arg in term.args
                    ]
                    try:
                        result = f(intention, *args)
                    except Exception as exc:
                        self._fail(exc)
                        return
                    if result is None:
                        yield
                        return
                    results = result if isinstance(result, tuple) else (result,)
                    outputs = term.args[len(term.args) - len(results) :]
                    if all(
                        asp.unify(out, value, intention.scope, intention.stack)
                        for out, value in zip(outputs, results, strict=True)
                    ):
                        yield

                actions.add(name, arity, run)
                return f

            return register

        @action(".run_episode", 1)
        def _run_episode(_intention: Any, epsilon: float) -> None:
            training.run_episode(float(epsilon))
            self._episode_percepts()

        @action(".reset", 1)
        def _reset(_intention: Any, _state: Any) -> int:
            state = training.reset()
            self._episode_percepts()
            return state

        @action(".choose", 3)
        def _choose(_intention: Any, state: int, epsilon: float, _action: Any) -> int:
            return training.choose(int(state), float(epsilon))

        @action(".act", 3)
        def _act(_intention: Any, state: int, action: int, _next: Any) -> int:
            outcome = training.act(int(state), int(action))
            self._episode_percepts()
            return outcome.next_state

        @action(".learn", 3)
        def _learn(intention: Any, state: int, action: int, _next: int) -> None:
            assert training.outcome is not None, ".learn before .act"
            training.deliberation = {
                "beliefs": self.belief_strings(),
                "intention": self._intention_of(intention),
            }
            training.learn(int(state), int(action), training.outcome)

        @action(".end_episode", 1)
        def _end_episode(_intention: Any, _how: Any) -> None:
            training.end_episode()
            for name in _EPISODE_BELIEFS:
                self.forget(name)
            self.forget("checkpoint_due")
            if training.checkpoint_due:
                self.believe("checkpoint_due")
            self.believe("episode", training.episode)
            self.believe("episodes_left", training.episodes_left)
            self.believe("epsilon_decay", training.epsilon_decay())
            self.believe("success_rate", training.success_rate)

        @action(".save_checkpoint", 1)
        def _save_checkpoint(_intention: Any, reason: Any) -> None:
            training.save_checkpoint(str(reason))
            self.forget("checkpoint_due")
            if str(reason) == "requested":
                self.forget("checkpoint_requested")

        @action(".finish", 1)
        def _finish(_intention: Any, outcome: Any) -> None:
            if not self.finished.done():
                self.finished.set_result(str(outcome))

    def _episode_percepts(self) -> None:
        """What the environment says after a step or an episode, as beliefs the plans test."""
        training = self.training
        for name, holds in (
            ("episode_over", training.episode_over),
            ("goal_reached", training.goal_reached),
            ("gave_up", training.gave_up),
        ):
            if holds:
                self.believe(name)
            else:
                self.forget(name)

    def _intention_of(self, intention: Any) -> list[str]:
        """The goals of the intention ``intention`` belongs to, outermost first."""
        for stack in self.bdi_agent.intentions:
            if stack and stack[-1] is intention:
                return [str(frame.head_term) for frame in stack]
        return [str(intention.head_term)]

    def _fail(self, exc: BaseException) -> None:
        if not self.finished.done():
            self.finished.set_exception(exc)

    # ------------------------------------------------------------ a run

    def set_percepts(self, **values: Any) -> None:
        """The run's starting beliefs: ``mode=fast`` → ``mode(fast)``, ``evaluating=True`` → ``evaluating``."""
        for name, value in values.items():
            if value is True:
                self.believe(name)
            elif value is not False and value is not None:
                self.believe(name, value)

    async def watch_controls(self) -> None:
        """Pause, stop and checkpoint-now from the daemon, looked at between reasoning steps."""
        session = self.training.session
        loop = asyncio.get_running_loop()
        while not self.finished.done():
            if self.bdi.is_killed():
                self._fail(PlansError(f"plans {self.asl_file}: {self.bdi.exit_code}"))
                return
            if session.checkpoint_requested.is_set():
                session.checkpoint_requested.clear()
                self.believe("checkpoint_requested")
            if session.stop_requested.is_set():
                self.believe("stop_requested")
            elif session.paused:
                self.pause_bdi()
                # Reports PAUSED, then RESUMED (or returns at a stop); the event loop goes on meanwhile.
                await loop.run_in_executor(None, session.wait_if_paused)
                self.resume_bdi()
                continue
            await asyncio.sleep(CONTROL_PERIOD)


async def run_agent(agent: QLearningAgent, ready: Callable[[], None], login_timeout: float = 30.0) -> str:
    """Log the agent in, call ``ready``, post ``!run``, and wait for the plans to finish; returns how
    they ended.

    Raises:
        PlansError: the plans failed (no applicable plan, an action raised).
        TimeoutError / spade's login errors: the agent could not log in.
    """
    await asyncio.wait_for(agent.start(auto_register=agent.account.register), login_timeout)
    ready()
    watcher = asyncio.create_task(agent.watch_controls(), name="controls")
    agent.post("run")
    try:
        return await agent.finished
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await agent.stop()
