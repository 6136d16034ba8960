"""Background: results reach their callbacks on the GUI thread, and none reach an owner that is gone.

(The gate in ``Background.post`` also keeps a pool thread from emitting while Qt destroys the
object, a crash no test can time; what these tests hold is the behaviour around it.)
"""

from __future__ import annotations

import threading

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QThread
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from gym_gui.ui.background import Background


def test_a_result_is_delivered_on_the_gui_thread(qtbot: QtBot) -> None:
    owner = QObject()
    background = Background(owner, workers=1)
    delivered: list[tuple[int, bool]] = []
    background.run(
        lambda: 6 * 7, lambda value: delivered.append((value, QThread.currentThread() is owner.thread()))
    )
    qtbot.waitUntil(lambda: bool(delivered), timeout=10_000)
    assert delivered == [(42, True)]


def test_a_callback_never_runs_inside_the_call_that_hands_it_over(qtbot: QtBot) -> None:
    # Work done before ``run`` attaches its callback is handed over on the GUI thread itself (what
    # ``Future.add_done_callback`` does then): the callback must still wait for the event loop.
    owner = QObject()
    background = Background(owner, workers=1)
    delivered: list[int] = []
    background.post(delivered.append, 1)
    assert delivered == []
    qtbot.waitUntil(lambda: delivered == [1], timeout=10_000)


def test_results_on_their_way_when_the_owner_is_deleted_are_dropped(qtbot: QtBot) -> None:
    owner = QObject()
    background = Background(owner, workers=1)  # one thread: the calls and their callbacks run in order
    release = threading.Event()
    started = threading.Event()
    drained = threading.Event()
    delivered: list[object] = []

    def slow() -> str:
        started.set()
        release.wait(30)
        return "late"

    def failing() -> None:
        raise OSError("late failure")

    background.run(slow, delivered.append)
    background.run(failing, delivered.append, on_error=delivered.append)
    background.run(drained.set)  # after both calls' callbacks have posted, or not
    assert started.wait(10)
    shiboken6.delete(owner)  # the owner and its Background go while their work still runs
    release.set()
    assert drained.wait(30)
    QCoreApplication.processEvents()  # anything posted would be delivered here
    assert delivered == []


def test_a_widget_owner_is_destroyed_without_an_error_from_the_gate(qtbot: QtBot) -> None:
    # pytest-qt fails the test on any exception raised while Qt calls into Python, such as a
    # slot of the half-destroyed Background that Qt can no longer find.
    owner = QWidget()
    background = Background(owner, workers=1)
    gate_open: list[bool] = []
    background.run(lambda: None, lambda _: gate_open.append(True))
    qtbot.waitUntil(lambda: bool(gate_open), timeout=10_000)
    owner.deleteLater()
    qtbot.waitUntil(lambda: not shiboken6.isValid(owner), timeout=10_000)
    background.post(gate_open.append, False)  # the gate is closed: nothing is posted
    QCoreApplication.processEvents()
    assert gate_open == [True]
