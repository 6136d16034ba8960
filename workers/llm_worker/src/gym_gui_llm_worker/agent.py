"""The LLM agent: episodes played concurrently, each asking the model for a plan and stepping through it.

``parallel`` episodes run at once on one asyncio loop, each with its own environment, so the model's
latency is spent waiting together. Within an episode the agent asks the model, executes the plan it
answers (up to ``plan_length`` actions), and asks again when the plan is used up, when an action
changed nothing the model can see, or after ``replan_every`` steps. A reply that is not a plan is
counted as invalid and the ``fallback`` action is taken.

Every step is sent with the call that chose its action in its ``info["llm"]`` (see
docs/runbooks/llm.md, "What a run stores"); the system prompt, the same for every call of a run, is
sent once as an event and named by its id in each call.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.worker import WorkerSession

from gym_gui_llm_worker import prompts
from gym_gui_llm_worker.conversation import Call, Conversation, ModelAsker, make_env
from gym_gui_llm_worker.endpoint import ChatEndpoint, Reply
from gym_gui_llm_worker.params import LLMParams
from gym_gui_llm_worker.responses import ResponseLog

# How often a stop request is looked for while calls are in flight.
_STOP_POLL_SECONDS = 0.05
# Games whose success is reaching the end (every step costs, so the return says little).
_SUCCESS_IS_TERMINATION = frozenset({"cliffwalking", "taxi"})


@dataclass
class Totals:
    """The run's counts behind its metrics."""

    steps: int = 0
    episodes: int = 0
    successes: int = 0
    calls: int = 0
    invalid: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)


class LLMAgent:
    """Plays a run's episodes with a model's plans and reports every step to ``session``."""

    def __init__(
        self,
        session: WorkerSession,
        config: dict[str, Any],
        params: LLMParams,
        endpoint: ChatEndpoint,
        log: ResponseLog,
    ) -> None:
        self.session = session
        self.config = config
        self.params = params
        self.endpoint = endpoint
        self.log = log
        self.env_id: str = config["env_id"]
        budget = config["budget"]
        self.max_episodes: int | None = budget.get("episodes")
        self.max_steps: int | None = budget.get("timesteps")
        self.seed: int | None = config.get("seed")
        self.totals = Totals()
        self._next_episode = 0
        self._steps_reserved = 0
        self._pause = asyncio.Lock()
        self._envs: list[gym.Env[Any, Any]] = []
        self.text: prompts.EnvText
        self.asker: ModelAsker
        self.render_kind = render.NONE
        self._frames = render.FramePacer()  # at the render rate, at most a tenth of the time

    # ------------------------------------------------------------ setup

    def make_env(self) -> gym.Env[Any, Any]:
        """One environment of the run (each concurrent episode plays in its own)."""
        env = make_env(self.env_id, self.config.get("env_kwargs") or {})
        self._envs.append(env)
        return env

    def prepare(self) -> None:
        """The system prompt and the environment's description; tells the daemon the run started."""
        env = self.make_env()
        self.text = prompts.env_text(env, self.env_id)
        self.render_kind = render.render_kind_of(env)
        self.asker = ModelAsker(self.params, self.endpoint, self.log, self.text)
        self.session.started(
            render_kind=self.render_kind,
            spaces={"observation": str(env.observation_space), "action": str(env.action_space)},
        )
        # The prefix of every prompt, stored once: each call names it by its id.
        asker = self.asker
        self.session.event(
            "INFO",
            f"system prompt {asker.prefix_id} ({len(asker.system)} characters, {self.text.family} template)",
            {
                "llm_prefix": {
                    "id": asker.prefix_id,
                    "messages": [{"role": "system", "content": asker.system}],
                }
            },
        )

    # ------------------------------------------------------------ the run

    async def run(self) -> str:
        """Play until the budget is spent or a stop is asked; returns "completed" or "stopped".

        Raises:
            EndpointError: the endpoint stopped answering; every step sent so far is kept.
        """
        envs = [self._envs[0]] + [self.make_env() for _ in range(self.params.parallel - 1)]
        players = [asyncio.create_task(self._player(env)) for env in envs]
        watcher = asyncio.create_task(self._watch_stop(players))
        try:
            await asyncio.gather(*players)
        except asyncio.CancelledError:
            if not self.session.stop_requested.is_set():
                raise
            return "stopped"
        finally:
            watcher.cancel()
            for task in players:
                task.cancel()
            await asyncio.gather(*players, watcher, return_exceptions=True)
            for env in self._envs:
                env.close()
        return "stopped" if self.session.stop_requested.is_set() else "completed"

    async def _watch_stop(self, players: list[asyncio.Task[None]]) -> None:
        while not self.session.stop_requested.is_set():
            await asyncio.sleep(_STOP_POLL_SECONDS)
        for task in players:
            task.cancel()

    async def _player(self, env: gym.Env[Any, Any]) -> None:
        while True:
            episode = self._take_episode()
            if episode is None:
                return
            await self._episode(env, episode)

    def _take_episode(self) -> int | None:
        if self.max_episodes is not None and self._next_episode >= self.max_episodes:
            return None
        if self.max_steps is not None and self._steps_reserved >= self.max_steps:
            return None
        episode = self._next_episode
        self._next_episode += 1
        return episode

    def _take_step(self) -> bool:
        if self.max_steps is not None and self._steps_reserved >= self.max_steps:
            return False
        self._steps_reserved += 1
        return True

    async def _unpaused(self) -> None:
        # One episode waits out a pause (reporting PAUSED and RESUMED once); the others queue behind it.
        if not self.session.paused:
            return
        async with self._pause:
            if self.session.paused:
                await asyncio.to_thread(self.session.wait_if_paused)

    async def _episode(self, env: gym.Env[Any, Any], episode: int) -> None:
        episode_seed = None if self.seed is None else self.seed + episode
        observation, info = env.reset(seed=episode_seed)
        grid = render.grid_description(env) if self.render_kind == render.GRID else None
        conversation = Conversation(
            self.asker,
            prompts.observation_text(self.text, observation, grid),
            np.random.default_rng(episode_seed),
        )
        started_at = time.time()
        total_reward = 0.0
        step = 0
        counts = Totals()
        terminated = truncated = False
        while not (terminated or truncated):
            await self._unpaused()
            if not self._take_step():
                truncated = True
                break
            action, llm, call = await conversation.next_action(lambda: self._frame(env))
            if call is not None:
                self._count(call)
                counts.calls += 1
                counts.invalid += not call.valid
                counts.tokens_in += call.reply.tokens_in
                counts.tokens_out += call.reply.tokens_out
                counts.cost_usd += self._cost(call.reply)
            observation, reward_value, terminated, truncated, info = env.step(action)
            reward = float(reward_value)
            total_reward += reward
            grid = render.grid_description(env) if self.render_kind == render.GRID else None
            if not conversation.stepped(
                action, reward, prompts.observation_text(self.text, observation, grid)
            ):
                llm["unchanged"] = True  # the model asked for something that did nothing: ask again
            self.session.step(
                episode,
                step,
                reward,
                bool(terminated),
                bool(truncated),
                encoding.dumps(action),
                observation,  # numeric arrays travel packed; the daemon stores a screen compact
                encoding.dumps({**info, "llm": llm}),
                self._payload(env, grid),
            )
            step += 1
        if step:  # an episode the step budget ran out on before its first step is no episode
            self._end_episode(
                episode, episode_seed, started_at, step, total_reward, terminated, truncated, counts
            )

    @staticmethod
    def _frame(env: gym.Env[Any, Any]) -> bytes | None:
        """The env's rendered frame as PNG (what a vision model is shown), None when it renders none."""
        frame = env.render()
        return render.frame_payload(frame) if isinstance(frame, np.ndarray) else None

    def _payload(self, env: gym.Env[Any, Any], grid: dict[str, Any] | None) -> bytes:
        if grid is not None:
            return json.dumps(grid, separators=(",", ":")).encode("utf-8")
        if self.render_kind == render.PIXELS:
            return self._frames.frame(lambda: self._frame(env), self.session.render_fps) or b""
        return b""

    def _count(self, call: Call) -> None:
        totals, reply = self.totals, call.reply
        totals.calls += 1
        totals.invalid += not call.valid
        totals.tokens_in += reply.tokens_in
        totals.tokens_out += reply.tokens_out
        if reply.source == "cache":
            totals.cached += 1
            return
        totals.latencies_ms.append(reply.latency_ms)
        totals.cost_usd += self._cost(reply)

    def _cost(self, reply: Reply) -> float:
        """What a reply cost in USD at the prices given (nothing when it came from a response log)."""
        if reply.source == "cache":
            return 0.0
        return (reply.tokens_in * self.params.price_in + reply.tokens_out * self.params.price_out) / 1e6

    def success(self, total_reward: float, terminated: bool) -> bool:
        """Whether an episode reached its goal: the end itself where every step costs (CliffWalking,
        Taxi), else a positive return (FrozenLake, MiniGrid, Blackjack, …)."""
        if self.text.game in _SUCCESS_IS_TERMINATION:
            return terminated
        return total_reward > 0

    def _end_episode(
        self,
        episode: int,
        seed: int | None,
        started_at: float,
        steps: int,
        total_reward: float,
        terminated: bool,
        truncated: bool,
        counts: Totals,
    ) -> None:
        totals = self.totals
        success = self.success(total_reward, terminated)
        totals.steps += steps
        totals.episodes += 1
        totals.successes += success
        self.session.episode(
            episode,
            steps=steps,
            total_reward=total_reward,
            terminated=bool(terminated),
            truncated=bool(truncated),
            started_at=started_at,
            seed=seed,
            info=encoding.dumps(
                {
                    "success": success,
                    "calls": counts.calls,
                    "invalid": counts.invalid,
                    "tokens_in": counts.tokens_in,
                    "tokens_out": counts.tokens_out,
                    "cost_usd": counts.cost_usd,
                }
            ),
        )
        at = totals.steps
        latencies = totals.latencies_ms
        points = [
            ("episode/return", at, total_reward),
            ("episode/length", at, float(steps)),
            ("llm/success_rate", at, totals.successes / totals.episodes),
            ("llm/invalid_reply_rate", at, totals.invalid / max(totals.calls, 1)),
            ("llm/tokens_per_episode", at, float(counts.tokens_in + counts.tokens_out)),
            ("llm/calls", at, float(totals.calls)),
            ("llm/cached_calls", at, float(totals.cached)),
            ("llm/cost_usd", at, totals.cost_usd),
        ]
        if latencies:
            p50, p95 = np.percentile(latencies, [50, 95])
            points += [("llm/latency_p50_ms", at, float(p50)), ("llm/latency_p95_ms", at, float(p95))]
        self.session.metrics(points)
