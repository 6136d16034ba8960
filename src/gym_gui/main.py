"""`gym-gui`: with no arguments the cockpit window opens; with a command it is the CLI."""

from __future__ import annotations

import os
import sys


def main() -> None:
    # pygame prints a banner on stdout when imported, unless gymnasium (which hides it) came first;
    # the catalog imports it first to ask whether Toy Text or highway-env is installed, and the CLI's
    # output (`gym-gui envs --json`) must be its own.
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "hide")
    if len(sys.argv) == 1:
        from gym_gui.ui.app import main as cockpit

        sys.exit(cockpit(sys.argv))
    from gym_gui.cli import main as cli

    cli()
