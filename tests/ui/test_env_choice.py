"""What a new user trips over, on the real window against a real daemon and the cleanrl bundle: one
environment choice per run, a form with room (kept as the user leaves it), and the environments a
script cannot train on in its bundle greyed with why and how to get them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QWidget,
)
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.control_panel import AGENT, HUMAN
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import CONTROL_WIDTH, MainWindow
from gym_gui.ui.settings import Settings
from tests.ui.test_forms_and_runs import DESCRIBE_TIMEOUT

ENV_FIELDS = ("envPicker", "envId")  # the object names of every field that chooses an environment


def env_fields_in_view(window: MainWindow) -> list[QComboBox]:
    return [
        combo
        for combo in window.findChildren(QComboBox)
        if combo.objectName() in ENV_FIELDS and combo.isVisible()
    ]


def cleanrl_form(qtbot: QtBot, window: MainWindow) -> GeneratedForm:
    """Agent mode, the CleanRL Worker chosen in the roster, its script described."""
    window.control.set_mode(AGENT)
    window.control.roster.select("cleanrl")
    form = window.control.forms.currentWidget()
    assert isinstance(form, GeneratedForm)
    qtbot.waitUntil(lambda: form.description is not None, timeout=DESCRIBE_TIMEOUT)
    return form


def open_window(qtbot: QtBot, home: Home, size: tuple[int, int] | None = None) -> MainWindow:
    """A window of its own (closing it closes its link), as the next start of the cockpit opens it."""
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    if size is not None:
        window.resize(*size)
    window.show()
    return window


def tooltip(combo: QComboBox, text: str) -> str:
    return str(combo.itemData(combo.findText(text), Qt.ItemDataRole.ToolTipRole) or "")


def choosable(combo: QComboBox, text: str) -> bool:
    item = combo.model().index(combo.findText(text), 0)
    return bool(combo.model().flags(item) & Qt.ItemFlag.ItemIsEnabled)


# ------------------------------------------------------------------ one choice of environment


def test_one_environment_choice_is_on_screen_and_the_run_trains_what_it_says(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, home: Home
) -> None:
    control = window.control
    # Human play: the picker is the choice (what the centre plays), with its Game Info.
    assert control.mode == HUMAN
    assert env_fields_in_view(window) == [control.env_picker.combo]
    assert control.env_picker.env_id == "FrozenLake-v1" and control.env_picker.info.isVisible()

    # Training: the form's field is the one choice; the picker and its Game Info are not on screen.
    form = cleanrl_form(qtbot, window)
    assert env_fields_in_view(window) == [form.env_combo]
    assert not control.env_picker.isVisible()
    combo = form.env_combo
    combo.setCurrentIndex(combo.findText("Acrobot-v1"))  # as a pick from its list does
    form.budget_edit.setText("2048")
    form.dry_run_check.setChecked(True)  # resolved and recorded, nothing launched
    qtbot.waitUntil(lambda: "--env-id Acrobot-v1" in form.preview.text(), timeout=DESCRIBE_TIMEOUT)
    with qtbot.waitSignal(form.run_submitted, timeout=120_000) as submitted:
        form.submit_button.click()
    run_id = str(submitted.args[0])

    (shown,) = env_fields_in_view(window)
    stored = parse_run_config((home.run_dir(run_id) / "config.json").read_text())
    assert stored.env_id == shown.currentText() == "Acrobot-v1"
    assert client.get_run(run_id).record.env_id == "Acrobot-v1"

    control.set_mode(HUMAN)  # back to play: the picker again, alone, still on what it was
    assert env_fields_in_view(window) == [control.env_picker.combo]
    assert control.env_picker.env_id == "FrozenLake-v1"


# ------------------------------------------------------------------ the form's room


def test_the_form_has_the_room_of_the_window_s_whole_height(qtbot: QtBot, window: MainWindow) -> None:
    form = cleanrl_form(qtbot, window)
    height = window.height()
    assert (window.width(), height) == (1400, 900)  # the default size, nothing remembered yet
    assert window.control_dock.width() == CONTROL_WIDTH

    # The form runs down the window's whole height beside the runs; its fields scroll in one area.
    fields = form.findChild(QScrollArea, "formFields")
    assert fields is not None and fields.isVisible()
    assert form.height() >= 0.7 * height, (form.height(), height)
    assert fields.viewport().height() >= 0.5 * height, (fields.viewport().height(), height)
    viewport = fields.viewport()
    in_view = [
        editor
        for editor in fields.widget().findChildren(QWidget)
        if isinstance(editor, QLineEdit | QComboBox)
        and editor.isVisible()
        and viewport.rect().contains(editor.mapTo(viewport, editor.rect().center()))
    ]
    assert len(in_view) >= 12, len(in_view)
    assert fields.horizontalScrollBar().maximum() == 0  # as wide as the dock: nothing to scroll sideways

    # No scroll area inside another, and nothing else in the dock scrolls: the roster shows every kind.
    dock = window.control_dock
    for area in dock.findChildren(QScrollArea):
        parent = area.parentWidget()
        while parent is not None and parent is not dock:
            assert not isinstance(parent, QScrollArea), f"{area.objectName()} is inside a scroll area"
            parent = parent.parentWidget()
    scrolling = [
        area
        for area in dock.findChildren(QAbstractScrollArea)
        if area.isVisible()
        and not isinstance(area, QPlainTextEdit)  # a text field (notes, the command)
        and area.verticalScrollBar().maximum() > 0
    ]
    assert scrolling == [fields]
    roster = window.control.roster
    last = roster.item(roster.count() - 1)
    assert roster.viewport().rect().contains(roster.visualItemRect(last))
    # The runs beside it keep every button in view.
    assert all(button.isVisible() for button in window.runs.action_buttons)


def test_the_next_window_opens_as_the_user_left_the_docks(
    qtbot: QtBot, home: Home, client: DaemonClient
) -> None:
    # Within the test screen (800 × 800 offscreen): a saved geometry is fitted to the screen it opens on.
    window = open_window(qtbot, home, (790, 760))
    qtbot.waitUntil(lambda: window.control_dock.width() > 0, timeout=5_000)
    width = window.control_dock.width() - 40  # the user narrows the control dock …
    window.resizeDocks([window.control_dock], [width], Qt.Orientation.Horizontal)
    window.resizeDocks([window.runs_dock], [200], Qt.Orientation.Vertical)  # … and lowers the runs
    qtbot.waitUntil(lambda: window.control_dock.width() == width, timeout=5_000)
    qtbot.waitUntil(lambda: window.runs_dock.height() == 200, timeout=5_000)
    window.close()

    again = open_window(qtbot, home)
    qtbot.waitUntil(
        lambda: (again.control_dock.width(), again.runs_dock.height()) == (width, 200), timeout=5_000
    )
    assert (again.width(), again.height()) == (790, 760)
    again.close()


# ------------------------------------------------------------------ what the bundle cannot run


def test_an_env_the_script_cannot_train_on_is_greyed_with_why_and_is_no_run(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    form = cleanrl_form(qtbot, window)
    assert form.algorithm() == "ppo"
    combo = form.env_combo
    assert not combo.isEditable() and not form.env_note.isVisible()
    assert combo.currentText() == "CartPole-v1"
    for env_id in ("CartPole-v1", "Acrobot-v1"):
        assert choosable(combo, env_id) and tooltip(combo, env_id) == ""
    # The app's own ids the bundle's gym 0.23 does not have, each with the reason and what would help.
    lander = tooltip(combo, "LunarLander-v3")
    assert not choosable(combo, "LunarLander-v3")
    assert "not registered in gym 0.23.1" in lander and "LunarLander-v2" in lander
    assert "needs Box2D" in lander and "pip install box2d-py" in lander
    taxi = tooltip(combo, "Taxi-v4")
    assert not choosable(combo, "Taxi-v4") and "it has Taxi-v3" in taxi
    assert not choosable(combo, "HalfCheetah-v5") and "discrete actions only" in tooltip(
        combo, "HalfCheetah-v5"
    )
    # The bundle's own id that a missing package keeps from it: its install hint.
    assert not choosable(combo, "LunarLander-v2") and "pip install box2d-py" in tooltip(
        combo, "LunarLander-v2"
    )

    # A click on a greyed entry chooses nothing.
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=5_000)
    greyed = combo.model().index(combo.findText("LunarLander-v3"), 0)
    view.scrollTo(greyed)
    row = view.visualRect(greyed)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, row.center())
    combo.hidePopup()
    assert combo.currentText() == "CartPole-v1" and form.model.env_id == "CartPole-v1"
    form.set_env("LunarLander-v3")
    assert form.model.env_id == "CartPole-v1" and form.submit_button.isEnabled()

    # A config naming it anyway (a file, the CLI) is refused by the daemon, for the same reason.
    config = form.config().model_copy(update={"env_id": "LunarLander-v3"})
    with pytest.raises(ConfigError) as refused:
        client.submit(config)
    assert lander in str(refused.value)

    # Another script, another list: a continuous-action one trains on MuJoCo's -v4, not on CartPole.
    form.set_algorithm("sac_continuous_action")
    qtbot.waitUntil(
        lambda: form.description is not None and form.description.variant == "sac_continuous_action",
        timeout=DESCRIBE_TIMEOUT,
    )
    assert combo.currentText() == "Hopper-v4"  # the script's own default env
    assert choosable(combo, "Pendulum-v1") and choosable(combo, "HalfCheetah-v4")
    assert not choosable(combo, "CartPole-v1") and "continuous actions only" in tooltip(combo, "CartPole-v1")
    assert "choose HalfCheetah-v4" in tooltip(combo, "HalfCheetah-v5")


def test_a_remembered_env_the_script_cannot_train_on_gives_way_to_its_default(
    qtbot: QtBot, home: Home, client: DaemonClient
) -> None:
    settings = Settings(home.root)
    settings.set_form_values("cleanrl", {"algorithm": "ppo", "defaults_from": "ppo", "env_id": "Taxi-v4"})
    settings.sync()
    window = open_window(qtbot, home)
    form = cleanrl_form(qtbot, window)
    assert form.model.env_id == form.env_combo.currentText() == "CartPole-v1"
    assert form.submit_button.isEnabled() and "env_id" not in form.invalid_fields()
    window.close()
