"""gym_gui's processes fork only to exec at once: gRPC's fork handlers must not run in them.

With the handlers on, a child forked while another thread waits inside gRPC restarts gRPC's
threads and can hang before it execs (QtWebEngine's helper processes then never start).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Imports gym_gui, then forks children that exit at once for as long as another thread waits
# inside gRPC for a server that is not there (3 s).
FORK_BESIDE_A_CALL = """
import os, threading, time
import gym_gui
import grpc

call = grpc.insecure_channel("127.0.0.1:1").unary_unary("/gym_gui.Nowhere/Call")

def blocked():
    try:
        call(b"", timeout=3, wait_for_ready=True)
    except grpc.RpcError:
        pass

thread = threading.Thread(target=blocked)
thread.start()
forks = 0
while thread.is_alive():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    forks += 1
    time.sleep(0.02)
print("forked", forks)
"""
HANDLERS_RAN = "skipping fork() handlers"  # what gRPC's pre-fork handler logs beside a waiting thread


def test_forking_beside_a_waiting_grpc_call_runs_no_grpc_handlers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    with (tmp_path / "stderr").open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", FORK_BESIDE_A_CALL], env=env, stdout=subprocess.PIPE, stderr=err, text=True
        )
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and out.startswith("forked ") and int(out.split()[1]) > 0
    assert HANDLERS_RAN not in (tmp_path / "stderr").read_text()


@pytest.mark.parametrize(("given", "seen"), [(None, "0"), ("1", "1")])
def test_gym_gui_sets_the_fork_setting_before_grpc_reads_it_and_a_users_own_wins(
    given: str | None, seen: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    if given is not None:
        env["GRPC_ENABLE_FORK_SUPPORT"] = given
    # gRPC reads the setting once, when it is imported: importing gym_gui must not import it first.
    probe = "import os, sys, gym_gui; print(os.environ['GRPC_ENABLE_FORK_SUPPORT'], 'grpc' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [seen, "False"]
