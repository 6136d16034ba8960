"""Write src/gym_gui/envs/ale_actions.py: ALE's minimal action set of every game ale-py registers, read from the emulator.

Loading a ROM takes about a quarter of a second, too long to do for a hundred games each time the
catalog is read, so the sets are kept for the ale-py gym_gui installs. Run it after changing that
version (``tests/envs/test_ale.py`` fails until it is)::

    python scripts/ale_actions.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import ale_py

from gym_gui.envs.ale import games, read_minimal_actions

TABLE = Path(__file__).resolve().parent.parent / "src" / "gym_gui" / "envs" / "ale_actions.py"


def main() -> None:
    lines = [
        f'"""ALE\'s minimal action set of every game ale-py {ale_py.__version__} registers, by action name '
        '(written by scripts/ale_actions.py)."""',
        "",
        "MINIMAL_ACTIONS: dict[str, str] = {",
        *(
            f'    "{rom}": "{" ".join(read_minimal_actions(rom))}",'
            for rom in sorted(game.rom for game in games())
        ),
        "}",
        "",
    ]
    TABLE.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {TABLE}", file=sys.stderr)


if __name__ == "__main__":
    main()
