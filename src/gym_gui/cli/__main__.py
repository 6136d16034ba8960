"""`python -m gym_gui.cli`: the command line alone (`gym-gui` also opens the window with no arguments)."""

from __future__ import annotations

from gym_gui.cli import main

main()
