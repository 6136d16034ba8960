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

from gym_gui_sdk.worker import Registration, WorkerSession, run_worker

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

    def play(session: WorkerSession, registration: Registration) -> str:
        config = registration.config
        params = llm_params.parse(config.get("params") or {})
        run_log = Path(registration.run_dir) / RUN_LOG
        cache = [arguments.cache] if arguments.cache else []
        log = ResponseLog(
            write_to=[run_log, *cache], read_from=[*arguments.replay, *cache], remember=bool(cache)
        )
        endpoint = ChatEndpoint(params, os.environ.get(llm_params.API_KEY_ENV))
        agent = LLMAgent(session, config, params, endpoint, log)
        return asyncio.run(_play(agent, endpoint))

    # An endpoint's failure is reported with its reason; an exit status would add nothing to it.
    return run_worker("llm worker", play, (EndpointError,), known_exit_code=0)


if __name__ == "__main__":
    sys.exit(main())
