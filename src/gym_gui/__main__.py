"""`python -m gym_gui`: the same as the `gym-gui` command."""

from __future__ import annotations

from gym_gui.cli import main

main()
