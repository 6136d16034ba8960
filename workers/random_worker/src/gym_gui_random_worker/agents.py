"""Random seats in a multi-agent env (PettingZoo): a turn-based AEC game one seat at a time, legal moves
drawn from the action mask, or a parallel env with every agent acting at each step."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.worker import WorkerSession

# A stored step waiting for its agent's next turn: its action (JSON) and the frame drawn after it.
Pending = tuple[str, bytes]


def legal_sample(space: Any, observation: Any, info: Any) -> Any:
    """A random action of ``space``, among the legal ones where the env gives an action mask (in the
    observation, as PettingZoo's Classic games do, or in the info)."""
    mask = None
    if isinstance(observation, dict):
        mask = observation.get("action_mask")
    if mask is None and isinstance(info, dict):
        mask = info.get("action_mask")
    if mask is None:
        return space.sample()
    return space.sample(mask=np.asarray(mask, dtype=np.int8))


def _info_text(info: Any) -> str:
    return encoding.dumps(info) if info else "{}"


def _spaces(env: Any) -> dict[str, Any]:
    agents = list(env.possible_agents)
    return {
        "agents": agents,
        "observation": {agent: str(env.observation_space(agent)) for agent in agents},
        "action": {agent: str(env.action_space(agent)) for agent in agents},
    }


class AgentsPlay:
    """Plays a run's episodes of one multi-agent env with random seats, storing every agent's steps.

    A step is stored as a single agent's is (the action, then the observation, reward and end the agent
    met after it), naming its agent; the episode's step numbers count every agent's steps in the order
    they are stored. Turn-based, an agent's step is stored at its next turn (or at its end, when it
    learns what its last move gave it), with the frame drawn right after its move; parallel, the
    agents' steps of one env step are stored together in the env's agent order, the frame with the
    first. A timesteps budget counts stored steps and truncates the episode it ends.
    """

    def __init__(self, session: WorkerSession, config: dict[str, Any], env: Any, parallel: bool) -> None:
        self.session = session
        self.env = env
        self.parallel = parallel
        budget = config["budget"]
        self.max_episodes: int | None = budget.get("episodes")
        self.max_steps: int | None = budget.get("timesteps")
        self.seed: int | None = config.get("seed")
        self.pixels = env.render_mode == "rgb_array"
        self.pacer = render.FramePacer()
        self.total_steps = 0

    def frame(self) -> bytes:
        if not self.pixels:
            return b""

        def draw() -> bytes:
            frame = self.env.render()
            return b"" if frame is None else render.frame_payload(frame)

        return self.pacer.frame(draw, self.session.render_fps) or b""

    def spent(self) -> bool:
        return self.max_steps is not None and self.total_steps >= self.max_steps

    def play(self) -> str:
        """Play until the budget is spent or a stop is asked; returns how it ended."""
        session = self.session
        session.started(render_kind=render.PIXELS if self.pixels else render.NONE, spaces=_spaces(self.env))
        episode = 0
        while (self.max_episodes is None or episode < self.max_episodes) and not self.spent():
            episode_seed = None if self.seed is None else self.seed + episode
            started_at = time.time()
            play = self._parallel_episode if self.parallel else self._turns_episode
            outcome = play(episode, episode_seed)
            if outcome is None:
                return "stopped"
            steps, returns, terminated, truncated = outcome
            total = sum(returns.values())
            session.episode(
                episode,
                steps=steps,
                total_reward=total,
                terminated=terminated,
                truncated=truncated,
                started_at=started_at,
                seed=episode_seed,
                agent_returns=list(returns.items()),
            )
            session.metrics(
                [
                    ("episode/return", self.total_steps, total),
                    ("episode/length", self.total_steps, float(steps)),
                ]
                + [(f"episode/return/{agent}", self.total_steps, value) for agent, value in returns.items()]
            )
            episode += 1
        return "completed"

    def _held(self) -> bool:
        """Wait out a pause between two moves; True when a stop came meanwhile."""
        session = self.session
        if session.held:
            session.wait_if_paused()
            return session.stop_requested.is_set()
        return False

    def _seed_spaces(self, episode_seed: int | None) -> None:
        # Each agent's space from its own seed, so a seeded run plays the same games again.
        for index, agent in enumerate(self.env.possible_agents):
            self.env.action_space(agent).seed(None if episode_seed is None else episode_seed + index)

    def _turns_episode(
        self, episode: int, episode_seed: int | None
    ) -> tuple[int, dict[str, float], bool, bool] | None:
        env, session = self.env, self.session
        env.reset(seed=episode_seed)
        self._seed_spaces(episode_seed)
        returns = {agent: 0.0 for agent in env.possible_agents}
        pending: dict[str, Pending] = {}
        step = 0
        ended_terminated = ended_truncated = False
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            returns[agent] += float(reward)
            if agent in pending:
                action, frame = pending.pop(agent)
                self.total_steps += 1
                cut = self.spent() and not (terminated or truncated)
                session.step(
                    episode, step, float(reward), bool(terminated), bool(truncated or cut),
                    action, observation, _info_text(info), frame, agent=agent,
                )  # fmt: skip
                step += 1
                if cut:  # the budget's last step: the others' moves waiting are stored truncated too
                    return self._cut(episode, step, pending, returns), returns, False, True
            if terminated or truncated:
                ended_terminated |= bool(terminated)
                ended_truncated |= bool(truncated)
                env.step(None)  # PettingZoo's way for a finished agent to leave
                continue
            if self._held():
                return None
            action = legal_sample(env.action_space(agent), observation, info)
            env.step(action)
            pending[agent] = (encoding.dumps(action), self.frame())
        return step, returns, ended_terminated, ended_truncated and not ended_terminated

    def _cut(self, episode: int, step: int, pending: dict[str, Pending], returns: dict[str, float]) -> int:
        """Store the moves still waiting for their agents' next turns as the episode's truncated last
        steps, with what each agent was given since; returns the episode's step count."""
        env = self.env
        given = getattr(env, "_cumulative_rewards", {})  # what env.last() would give each agent
        for agent, (action, frame) in pending.items():
            reward = float(given.get(agent, 0.0))
            returns[agent] += reward
            self.session.step(
                episode, step, reward, False, True, action, env.observe(agent), "{}", frame, agent=agent
            )
            step += 1
        self.total_steps += len(pending)
        return step

    def _parallel_episode(
        self, episode: int, episode_seed: int | None
    ) -> tuple[int, dict[str, float], bool, bool] | None:
        env, session = self.env, self.session
        observations, infos = env.reset(seed=episode_seed)
        self._seed_spaces(episode_seed)
        returns = {agent: 0.0 for agent in env.possible_agents}
        step = 0
        ended_terminated = ended_truncated = False
        while env.agents:
            if self._held():
                return None
            agents = list(env.agents)
            actions = {
                agent: legal_sample(env.action_space(agent), observations[agent], infos.get(agent))
                for agent in agents
            }
            observations, rewards, terminations, truncations, infos = env.step(actions)
            frame = self.frame()
            self.total_steps += len(agents)
            cut = self.spent()
            ends = [bool(terminations[agent]) for agent in agents]
            cuts = [
                bool(truncations[agent]) or (cut and not end) for agent, end in zip(agents, ends, strict=True)
            ]
            for agent in agents:
                returns[agent] += float(rewards[agent])
            session.steps(
                [episode] * len(agents),
                list(range(step, step + len(agents))),
                [float(rewards[agent]) for agent in agents],
                ends,
                cuts,
                [encoding.dumps(actions[agent]) for agent in agents],
                [observations[agent] for agent in agents],
                [_info_text(infos.get(agent)) for agent in agents],
                [frame] + [b""] * (len(agents) - 1),
                agent=agents,
            )
            step += len(agents)
            ended_terminated |= any(ends)
            ended_truncated |= any(cuts)
            if cut:
                break
        return step, returns, ended_terminated, ended_truncated and not ended_terminated
