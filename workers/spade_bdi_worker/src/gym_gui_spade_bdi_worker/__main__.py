"""`python -m gym_gui_spade_bdi_worker [--q-table PATH]`: a SPADE BDI agent learns the run's environment.

The daemon starts this process in the spade_bdi bundle with the run's address, id and token in its
environment; everything else (the validated run config) comes from registering. ``--q-table`` is
the checked Q-table the plugin resolved: a warm start, or the table an evaluation plays.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import loguru
from gym_gui_sdk import render
from gym_gui_sdk.worker import WorkerSession, exit_now, run_worker
from spade.container import Container

from gym_gui_spade_bdi_worker.agent import PlansError, QLearningAgent, run_agent, shipped_plans
from gym_gui_spade_bdi_worker.checkpoint import CheckpointRefused, QTableFile
from gym_gui_spade_bdi_worker.environments import EnvRefused, make_env, run_env_kwargs
from gym_gui_spade_bdi_worker.params import PASSWORD_ENV, resolve
from gym_gui_spade_bdi_worker.plans import PlansRefused, read_plans
from gym_gui_spade_bdi_worker.training import Settings, Training
from gym_gui_spade_bdi_worker.xmpp import EmbeddedXMPP, XMPPAccount, XMPPUnavailable, check_ready

HYPERPARAMETERS = (
    "alpha",
    "gamma",
    "epsilon_start",
    "epsilon_end",
    "epsilon_decay",
    "exploration_fraction",
    "max_steps",
    "mode",
)
# What the exploration schedule reads (Training.epsilon_decay).
EXPLORATION = ("epsilon_start", "epsilon_end", "epsilon_decay", "exploration_fraction")


class RunFailed(RuntimeError):
    """The run cannot go on; the message is what the user sees as its end."""


@contextlib.asynccontextmanager
async def xmpp_account(values: dict[str, Any], session: WorkerSession) -> AsyncIterator[XMPPAccount]:
    """The account the agent logs in with: on the embedded server (started here, stopped after) or
    on the external one the parameters name, checked ready either way."""
    if values["xmpp_server"] == "external":
        account = XMPPAccount(
            jid=str(values["xmpp_jid"]).strip(),
            password=os.environ.get(PASSWORD_ENV, ""),
            host=str(values["xmpp_host"]).strip(),
            port=int(values["xmpp_port"]),
            register=False,
        )
        await check_ready(account)
        yield account
        return
    async with EmbeddedXMPP() as account:
        # pyjabber took SIGTERM and SIGINT for itself when it started: a stop must reach the session.
        session.install_signal_handlers()
        yield account


async def train(session: WorkerSession, config: dict[str, Any], run_dir: Path, q_table: Path | None) -> str:
    """Run the agent until its plans finish; returns how they ended (``completed`` or ``stopped``)."""
    params = config.get("params") or {}
    values = resolve(params)
    evaluating = config.get("mode") == "evaluate"
    env_id = config["env_id"]
    start = QTableFile.load(q_table) if q_table is not None else None
    kwargs = run_env_kwargs(config, start)
    env = make_env(env_id, kwargs)
    budget = config["budget"]
    settings = Settings(
        env_id=env_id,
        env_kwargs=kwargs,
        episodes=budget.get("episodes"),
        timesteps=budget.get("timesteps"),
        seed=config.get("seed"),
        alpha=float(values["alpha"]),
        gamma=float(values["gamma"]),
        mode=str(values["mode"]),
        checkpoint_every=int(values["checkpoint_every"]),
        success_window=int(values["success_window"]),
        evaluating=evaluating,
        real_time=bool((config.get("evaluation") or {}).get("real_time")),
        hyperparameters={name: values[name] for name in HYPERPARAMETERS},
        exploration={name: values[name] for name in EXPLORATION},
    )
    training = Training(session, env, settings, run_dir, None if start is None else start.q)
    if start is not None:
        start.check_fits(env_id, training.shape, training.map, q_table or Path())
    try:
        plans = read_plans(Path(values["asl"]) if str(values["asl"]).strip() else shipped_plans())
    except PlansRefused as exc:
        raise PlansError(str(exc)) from None
    states, actions = training.shape

    def started() -> None:
        # RUNNING from here: the agent is logged in and its first reasoning step is next.
        session.started(
            render_kind=render.GRID if training.grid else render.NONE,
            spaces={
                "observation": str(env.observation_space),
                "action": str(env.action_space),
                "q_table": {"states": states, "actions": actions},
                "map": training.map,
                "mode": settings.mode,
                "plans": str(plans.path),
            },
        )
        if start is not None:
            # The table the run starts from: with the steps' q_after rows it gives the table at any step.
            session.event(
                "INFO",
                f"{'playing' if evaluating else 'warm start from'} {q_table}",
                {
                    "kind": "q_table",
                    "source": str(q_table),
                    "episode": start.episode,
                    "q_table": start.q.tolist(),
                },
            )

    try:
        async with xmpp_account(values, session) as account:
            agent = QLearningAgent(account, plans, training)
            agent.set_percepts(
                mode=settings.mode,
                evaluating=evaluating,
                epsilon=0.0 if evaluating else float(values["epsilon_start"]),
                epsilon_decay=training.epsilon_decay(),
                epsilon_end=float(values["epsilon_end"]),
                episode=0,
                episodes_left=training.episodes_left,
                success_rate=0.0,
            )
            try:
                outcome = await run_agent(agent, started)
            except TimeoutError:
                raise RunFailed(f"XMPP login as {account.jid} at {account.address} timed out") from None
            except PlansError:
                raise
            except Exception as exc:
                if type(exc).__module__.startswith(("spade", "slixmpp")):
                    raise RunFailed(
                        f"XMPP login as {account.jid} at {account.address} failed: {type(exc).__name__}: {exc}"
                    ) from None
                raise
    finally:
        env.close()
    if not evaluating:
        training.save_final(outcome)
    return outcome


def _run_in_spade_loop(coroutine: Any) -> Any:
    """Run ``coroutine`` in SPADE's event loop (its agents live there), then close that loop."""
    container = Container()
    loop = container.loop
    try:
        return loop.run_until_complete(coroutine)
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


# Seconds a thread waiting for the GIL lets the holder run before asking it to let go (Python's
# default is 0.005).
SWITCH_INTERVAL = 0.00005


def main(argv: list[str] | None = None) -> int:
    # A step loop whose numpy calls release the GIL at every step (the sampling of an env stepped by
    # its own step: FrozenLake's and CliffWalking's table step has none) hands it back to a
    # telemetry thread that wants it (the acknowledgements read, the heartbeat) only after the
    # switch interval, each of the loop's takes in between a contended one. A short interval lets
    # such a thread in at once: measured before the courier and the table step, a stored fast-mode
    # step 33 -> 27 us.
    sys.setswitchinterval(SWITCH_INTERVAL)
    parser = argparse.ArgumentParser(prog="python -m gym_gui_spade_bdi_worker")
    parser.add_argument("--q-table", type=Path, default=None, help="the Q-table to start from or to play")
    args = parser.parse_args(argv)
    # SPADE, pyjabber and slixmpp log through loguru and logging; only their warnings reach the
    # run's log (never a stanza: an external server's login would be in it).
    loguru.logger.remove()
    loguru.logger.add(sys.stderr, level="WARNING")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    return run_worker(
        "spade_bdi worker",
        lambda session, registration: _run_in_spade_loop(
            train(session, registration.config, Path(registration.run_dir), args.q_table)
        ),
        (RunFailed, PlansError, XMPPUnavailable, EnvRefused, CheckpointRefused),
    )


if __name__ == "__main__":
    exit_now(main())
