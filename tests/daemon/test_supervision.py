"""The supervisor's contracts: the verdict on a run's end, and that only the supervisor changes a LiveRun."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from gym_gui_sdk import trainer_pb2 as pb

from gym_gui.core.states import RunState
from gym_gui.daemon.ending import Outcome, verdict
from gym_gui.daemon.live import LiveRun
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog
from tests.support import random_config

Phase = pb.Lifecycle.Phase
HEARTBEAT_TIMEOUT = 20.0

# ---------------------------------------------------------------- the verdict

VERDICTS = {
    "a violation outweighs everything": (
        Outcome(
            violation="message out of order: expected seq 2, got 3",
            cancel_requested=True,
            heartbeat_lost=True,
            exit_code=-9,
            reported=Phase.COMPLETED,
        ),
        RunState.FAILED,
        "message out of order: expected seq 2, got 3",
    ),
    "a sweep's pruner ends it PRUNED with its words, not CANCELLED": (
        Outcome(pruned="pruned by the median pruner at step 512: …", cancel_requested=True, exit_code=143),
        RunState.PRUNED,
        "pruned by the median pruner at step 512: …",
    ),
    "a cancel ends CANCELLED, however the worker went": (
        Outcome(cancel_requested=True, heartbeat_lost=True, exit_code=-9, reported=Phase.FAILED),
        RunState.CANCELLED,
        "cancelled by user",
    ),
    "a lost heartbeat fails the run": (
        Outcome(heartbeat_lost=True, exit_code=-9, stderr_tail="Traceback ..."),
        RunState.FAILED,
        "heartbeat lost: no message for 20s",
    ),
    "a signal fails it with the signal's number": (
        Outcome(exit_code=-9),
        RunState.FAILED,
        "killed by signal 9",
    ),
    "a signal fails it with the stderr tail": (
        Outcome(exit_code=-11, stderr_tail="Fatal Python error: Segmentation fault"),
        RunState.FAILED,
        "killed by signal 11: Fatal Python error: Segmentation fault",
    ),
    "an exit code fails it with the worker's own words first": (
        Outcome(
            exit_code=1,
            reported=Phase.FAILED,
            reported_message="ValueError: bad learning rate",
            stderr_tail="Traceback ...",
        ),
        RunState.FAILED,
        "exit code 1: ValueError: bad learning rate",
    ),
    "an exit code fails it with the stderr tail when the worker said nothing": (
        Outcome(exit_code=2, reported=Phase.FAILED, stderr_tail="usage: worker [-h]"),
        RunState.FAILED,
        "exit code 2: usage: worker [-h]",
    ),
    "an exit code outweighs a reported completion": (
        Outcome(exit_code=3, reported=Phase.COMPLETED, reported_message="done"),
        RunState.FAILED,
        "exit code 3",
    ),
    "exit 0 after COMPLETED completes with the worker's message": (
        Outcome(exit_code=0, reported=Phase.COMPLETED, reported_message="5 episodes"),
        RunState.COMPLETED,
        "5 episodes",
    ),
    "exit 0 after a bare COMPLETED": (
        Outcome(exit_code=0, reported=Phase.COMPLETED),
        RunState.COMPLETED,
        "completed",
    ),
    "exit 0 after the worker stopped itself": (
        Outcome(exit_code=0, reported=Phase.CANCELLED),
        RunState.CANCELLED,
        "stopped by the worker",
    ),
    "exit 0 after a reported failure": (
        Outcome(exit_code=0, reported=Phase.FAILED, reported_message="env crashed"),
        RunState.FAILED,
        "env crashed",
    ),
    "exit 0 after a bare reported failure": (
        Outcome(exit_code=0, reported=Phase.FAILED),
        RunState.FAILED,
        "the worker reported a failure",
    ),
    "exit 0 without a word is no completion": (
        Outcome(exit_code=0),
        RunState.FAILED,
        "worker exited without reporting completion",
    ),
    "a client-driven run whose stream closed without a word": (
        Outcome(),
        RunState.FAILED,
        "worker exited without reporting completion",
    ),
    "an adopted worker that completed": (
        Outcome(adopted=True, reported=Phase.COMPLETED),
        RunState.COMPLETED,
        "completed",
    ),
    "an adopted worker that vanished without a word": (
        Outcome(adopted=True),
        RunState.FAILED,
        "worker ended without reporting completion (exit code unknown: started by an earlier daemon)",
    ),
}


@pytest.mark.parametrize("rule", VERDICTS)
def test_the_verdict_on_a_runs_end(rule: str) -> None:
    outcome, state, reason = VERDICTS[rule]
    assert verdict(outcome, HEARTBEAT_TIMEOUT) == (state, reason)


def test_the_stderr_a_failed_run_is_judged_on_leaves_its_warnings_out(tmp_path: Path) -> None:
    """Issue 30: a killed worker's reason took the end of its stderr, a gym deprecation banner."""
    files = RunDir(tmp_path / "run")
    files.create()
    files.worker_stderr_log.write_text(
        "Traceback (most recent call last):\n"
        '  File "worker.py", line 3, in <module>\n'
        "MemoryError\n"
        "/venv/gym/core.py:172: DeprecationWarning: WARN: Function `env.seed(seed)` is deprecated\n"
        "  deprecation(\n"
    )
    config = random_config()
    run = LiveRun(run_id="r", spec=worker_catalog().spec("random"), config=config, run_dir=files.path)
    run.exit_code = -9
    outcome = Outcome.of(run)
    assert outcome.stderr_tail.endswith("MemoryError"), outcome.stderr_tail
    assert verdict(outcome, HEARTBEAT_TIMEOUT)[1].startswith("killed by signal 9: Traceback")
    files.worker_stderr_log.write_text("/venv/gym/core.py:172: DeprecationWarning: WARN: x\n  deprecation(\n")
    assert verdict(Outcome.of(run), HEARTBEAT_TIMEOUT) == (RunState.FAILED, "killed by signal 9")


def test_the_heartbeat_verdict_names_the_timeout() -> None:
    assert verdict(Outcome(heartbeat_lost=True), 7.0) == (
        RunState.FAILED,
        "heartbeat lost: no message for 7s",
    )


# ---------------------------------------------------------------- only the supervisor changes a LiveRun

SRC = Path(__file__).resolve().parents[2] / "src" / "gym_gui"
DAEMON = SRC / "daemon"
# LiveRun is the daemon's own (no module outside gym_gui.daemon uses it); within the daemon, only
# Supervisor and its parts, which LiveRun's docstring names, change one.
SUPERVISOR = {
    DAEMON / f"{name}.py"
    for name in ("supervisor", "live", "scheduler", "launching", "ending", "disk", "recovery")
}
FIELDS = {field.name for field in dataclasses.fields(LiveRun)}
# Fields that change by a method call rather than an assignment.
MUTATORS = {"stream_done": {"set", "clear"}, "manifest": {"update", "add_artifact"}, "secret_env": {"clear"}}


def _field_writes(source: str) -> list[tuple[int, str]]:
    """Each place ``source`` changes a LiveRun field of something other than ``self``, with its line."""
    found = []

    def foreign(node: ast.Attribute) -> bool:
        return node.attr in FIELDS and not (isinstance(node.value, ast.Name) and node.value.id == "self")

    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Attribute)
            and foreign(node.func.value)
            and node.func.attr in MUTATORS.get(node.func.value.attr, ())
        ):
            found.append((node.lineno, ast.unparse(node.func)))
        for target in targets:
            found += [
                (sub.lineno, ast.unparse(sub))
                for sub in ast.walk(target)
                if isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, (ast.Store, ast.Del))
                and foreign(sub)
            ]
    return sorted(found)


def test_only_the_supervisor_changes_a_live_run() -> None:
    assert all(path.exists() for path in SUPERVISOR)
    offenders = [
        f"{path.relative_to(SRC.parent)}:{line} changes {what}"
        for path in sorted(DAEMON.rglob("*.py"))
        if path not in SUPERVISOR
        for line, what in _field_writes(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "report it through a Supervisor method instead:\n" + "\n".join(offenders)


def test_the_scan_sees_what_it_should() -> None:
    # The check above would pass vacuously if the scan missed writes: prove it catches them.
    sample = (
        "run.stream_open = True\n"
        "self.run.violation = reason\n"
        "run.last_seen += 1.0\n"
        "run.started, other = True, 1\n"
        "run.stream_done.clear()\n"
        "run.manifest.add_artifact('model', 'm.pt', 1, {})\n"
        "self.violation = ''\n"
        "ok = run.stream_open\n"
        "run.writer.flush(timeout=5)\n"
        "run.send(command)\n"
    )
    assert _field_writes(sample) == [
        (1, "run.stream_open"),
        (2, "self.run.violation"),
        (3, "run.last_seen"),
        (4, "run.started"),
        (5, "run.stream_done.clear"),
        (6, "run.manifest.add_artifact"),
    ]
    assert any(_field_writes(path.read_text(encoding="utf-8")) for path in SUPERVISOR)
