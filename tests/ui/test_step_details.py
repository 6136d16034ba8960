"""The Replay tab's step details show a screen stored compact as its dtype, shape and values, not its
base64, and any other observation as its JSON text."""

from __future__ import annotations

import numpy as np
from gym_gui_sdk.encoding import compact_json
from pytestqt.qtbot import QtBot

from gym_gui.core.records import StepRecord
from gym_gui.ui.tabs.step_details import StepDetails


def record(observation: str) -> StepRecord:
    return StepRecord(0, 3, 1.0, False, False, "2", observation, "{}", None, 0.0)


def test_a_compact_screen_shows_as_its_array_and_a_list_as_its_text(qtbot: QtBot) -> None:
    details = StepDetails()
    qtbot.addWidget(details)
    screen = np.zeros((210, 160, 3), dtype=np.uint8)
    screen[100:104, 50:52] = 200
    details.show_step(record(compact_json(screen)))
    shown = details.observation_text.toPlainText()
    assert shown.startswith("uint8 array, 210 × 160 × 3, values 0 to 200\n[[[0 0 0]")
    assert "zlib" not in shown
    details.show_step(record("[0.5,-1.0,null]"))
    assert details.observation_text.toPlainText() == "[0.5,-1.0,null]"
    damaged = '{"ndarray":{"dtype":"|u1","shape":[4],"zlib":"AAAA"}}'
    details.show_step(record(damaged))
    assert details.observation_text.toPlainText().startswith(
        "(this observation cannot be read: compact array: its bytes cannot be read"
    )
