"""`gym-gui`: with no arguments the cockpit window opens; with a command it is the CLI."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) == 1:
        from gym_gui.ui.app import main as cockpit

        sys.exit(cockpit(sys.argv))
    from gym_gui.cli import main as cli

    cli()
