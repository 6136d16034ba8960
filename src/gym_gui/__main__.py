"""`python -m gym_gui`: the same as `gym-gui` (the window with no arguments, else the CLI)."""

from __future__ import annotations

from gym_gui.main import main

main()
