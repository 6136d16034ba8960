"""`python -m gym_gui_llm_worker`: play a run's environment with the actions a language model chooses.

The daemon starts this process in the llm bundle with the run's address, id and token in its
environment and the endpoint's API key, when the run was given one, in ``LLM_API_KEY``. The plugin
adds where the response logs to read are (``--replay``: a resumed run's; ``--cache``: the home's
shared cache, also written).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from gym_gui_sdk.worker import Phase, WorkerError, WorkerSession

from gym_gui_llm_worker import params as llm_params
from gym_gui_llm_worker.agent import LLMAgent
from gym_gui_llm_worker.endpoint import ChatEndpoint, EndpointError
from gym_gui_llm_worker.responses import RUN_LOG, ResponseLog


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gym_gui_llm_worker")
    parser.add_argument("--replay", type=Path, action="append", default=[], help="a response log to read")
    parser.add_argument("--cache", type=Path, help="the shared response cache (read and written)")
    return parser.parse_args(argv)


async def _play(agent: LLMAgent, endpoint: ChatEndpoint) -> str:
    try:
        # Before anything else: a wrong URL or model fails the run here, saying which.
        await endpoint.check()
        agent.prepare()
        return await agent.run()
    finally:
        await endpoint.close()


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(sys.argv[1:] if argv is None else argv)
    session = WorkerSession.from_env()
    session.install_signal_handlers()
    registration = session.start()
    config = registration.config
    telemetry = config.get("telemetry") or {}
    session.batch_steps = int(telemetry.get("batch_steps", session.batch_steps))
    session.batch_seconds = float(telemetry.get("batch_seconds", session.batch_seconds))
    try:
        params = llm_params.parse(config.get("params") or {})
        run_log = Path(registration.run_dir) / RUN_LOG
        cache = [arguments.cache] if arguments.cache else []
        log = ResponseLog(
            write_to=[run_log, *cache], read_from=[*arguments.replay, *cache], remember=bool(cache)
        )
        endpoint = ChatEndpoint(params, os.environ.get(llm_params.API_KEY_ENV))
        agent = LLMAgent(session, config, params, endpoint, log)
        outcome = asyncio.run(_play(agent, endpoint))
    except WorkerError as exc:
        print(f"llm worker: {exc}", file=sys.stderr)
        return 1
    except EndpointError as exc:
        # Reported with its reason; the exit status adds nothing to it.
        session.finish(Phase.FAILED, str(exc))
        return 0
    except Exception as exc:
        session.finish(Phase.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    if outcome == "stopped":
        session.finish(Phase.CANCELLED, "stopped on request")
    else:
        session.finish(Phase.COMPLETED, "budget reached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
