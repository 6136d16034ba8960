"""exit_now: a worker's process ends with its status and its buffered output, without teardown."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_exit_now_keeps_the_status_and_the_buffered_output_and_skips_atexit() -> None:
    program = textwrap.dedent(
        """
        import atexit, logging, sys
        from gym_gui_sdk.worker import exit_now
        atexit.register(lambda: print("atexit ran"))
        logging.basicConfig(stream=sys.stderr, format="%(message)s")
        print("last line", end="")  # still in stdout's buffer (a pipe is block-buffered)
        logging.getLogger("worker").warning("logged")
        exit_now(3)
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == "last line"
    assert done.stderr == "logged\n"
