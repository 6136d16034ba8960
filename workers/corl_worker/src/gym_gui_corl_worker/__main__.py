"""``python -m gym_gui_corl_worker --script PATH --checkpoints DIR -- ARGS``: the CORL worker process.

It runs the script in this process, as ``python PATH ARGS`` would (its ``__main__`` block, pyrallis reading
ARGS), with gym_gui's d4rl stand-in first on its path and its ``wandb.init``, ``wandb.log`` and
``torch.save`` bridged to the run (``bridge.py``): metrics live, checkpoints as artifacts, pause and stop
at the script's next log. One process: the bridge hands each logged dict to the run's ``WorkerSession``
(whose courier process holds the stream) with no pipe or parsing between them.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from pathlib import Path
from types import TracebackType

from gym_gui_sdk.worker import Registration, WorkerSession, run_worker

from gym_gui_corl_worker.bridge import RunStopped, WandbBridge
from gym_gui_corl_worker.scripts import STANDIN


class ScriptFailed(Exception):
    """The script ended with an error: the run fails with this one line (its traceback is in the log)."""


def failure_line(exc: BaseException, script: str) -> str:
    """What went wrong, in one line: the exception and where in the script it came from."""
    text = (str(exc).strip().splitlines() or [""])[0]
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    where = _script_line(exc.__traceback__, script)
    return f"{line} ({Path(script).name} line {where})" if where else line


def _script_line(tb: TracebackType | None, script: str) -> int | None:
    found = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == script:
            found = lineno
    return found


def train(session: WorkerSession, registration: Registration, args: argparse.Namespace) -> str:
    """Run the script to its end; ``"stopped"`` when the run was stopped on request."""
    run_dir = Path(registration.run_dir)
    session.started(render_kind="none", spaces={})
    import torch
    import wandb

    from gym_gui_corl_worker import offline_env

    bridge = WandbBridge(session, run_dir, Path(args.checkpoints))
    bridge.install(wandb, torch)
    offline_env.SCORE_LISTENERS.append(bridge.score)
    script = str(Path(args.script).resolve())
    # As `python SCRIPT` would have it, with the stand-in before everything so `import d4rl` finds it.
    sys.path[:0] = [str(STANDIN), str(Path(script).parent)]
    sys.argv = [script, *args.script_args]
    os.chdir(run_dir)
    outcome, exit_code = "completed", 0
    try:
        runpy.run_path(script, run_name="__main__")
    except RunStopped:
        outcome, exit_code = "stopped", 1
    except SystemExit as exc:
        if exc.code not in (0, None):
            exit_code = 1
            raise ScriptFailed(f"the script exited with {exc.code}") from None
    except Exception as exc:
        exit_code = 1
        traceback.print_exc()
        raise ScriptFailed(failure_line(exc, script)) from None
    finally:
        if wandb.run is not None:
            wandb.finish(exit_code=exit_code)
    final = bridge.final_model()
    if final is not None:
        path, step = final
        session.artifact("model", path, step, {"saved_by": "torch.save", "final": True})
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gym_gui_corl_worker")
    parser.add_argument("--script", required=True, help="the CORL script (algorithms/offline/NAME.py)")
    parser.add_argument(
        "--checkpoints", required=True, help="the run's checkpoints directory (checkpoints_path)"
    )
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.script_args[:1] == ["--"]:
        args.script_args = args.script_args[1:]
    # W&B writes at exit: the process ends through Python's own teardown (sys.exit, not exit_now).
    return run_worker(
        "corl worker", lambda session, registration: train(session, registration, args), (ScriptFailed,)
    )


if __name__ == "__main__":
    sys.exit(main())
