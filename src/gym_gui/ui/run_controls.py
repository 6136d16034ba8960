"""Run controls in the window — pause, resume, checkpoint now, render rate — enabled from a run's state and worker."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QWidget

from gym_gui.core.config import MAX_RENDER_FPS
from gym_gui.core.controls import Control, control_refusal
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord
from gym_gui.core.workers import Capabilities, Lane, Launch
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.capabilities import capabilities_of, spec_of
from gym_gui.ui.daemon_link import DaemonLink

# What each control's button says it does (its tooltip while it applies).
DESCRIPTIONS = {
    Control.PAUSE: "Pause the run: its worker keeps its process and stops stepping",
    Control.RESUME: "Resume the run from the step it was paused at",
    Control.CHECKPOINT: "Save the model now (listed in the Checkpoints tab)",
    Control.RENDER_RATE: "Frames per second a pixel environment renders for this view and the replay "
    "(grid games send their grid every step)",
}
# A render rate is sent once the spin box has been still this long (arrow clicks come in bursts).
RENDER_RATE_DELAY_MS = 300


def refusal(run: RunRecord, control: Control) -> str:
    """Why ``control`` does not apply to ``run`` now (empty when it does)."""
    return control_refusal(control, run.state, capabilities_of(run.worker), run.worker, run.lane)


RERUN_DESCRIPTION = (
    "Run it again: the same config and seed; a package set that differs from the one it ran with "
    "is shown to confirm first, and the re-run says at its end whether its returns are identical"
)


def rerun_refusal(run: RunRecord) -> str:
    """Why ``run`` cannot be re-run now (empty when it can): it must have ended, and its worker kind
    must be one the daemon launches (a person's play cannot be repeated)."""
    if not run.state.terminal:
        return f"{run.run_id} has not ended; re-run it once it has"
    try:
        launch = spec_of(run.worker).launch
    except GymGuiError as exc:
        return str(exc)
    if launch is not Launch.DAEMON:
        return f"{run.worker} runs are played by a person, not launched: they cannot be re-run"
    return ""


def send_control(
    link: DaemonLink,
    run_id: str,
    control: Control,
    on_done: Callable[[RunRecord], None] | None = None,
    on_error: Callable[[str], None] | None = None,
    render_fps: float = 0.0,
) -> None:
    """Send ``control`` to the run's worker through the daemon (off the GUI thread)."""

    def call(client: DaemonClient) -> RunRecord:
        return client.control(run_id, control, render_fps)

    link.call(call, on_done, on_error)


class RunControlBar(QWidget):
    """Pause, Resume, Checkpoint now and the render rate of one run (the Live tab's header).

    Pause and Resume show for every run, enabled as the run's state and its worker allow (the
    tooltip says why not); Checkpoint now shows only for workers that can checkpoint, and the
    render rate only for telemetry-lane runs, which stream frames.
    """

    message = Signal(str)  # the outcome of the last control, or the daemon's refusal

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.run: RunRecord | None = None
        self.pause_button = QPushButton("Pause")
        self.pause_button.setObjectName("livePause")
        self.resume_button = QPushButton("Resume")
        self.resume_button.setObjectName("liveResume")
        self.checkpoint_button = QPushButton("Checkpoint now")
        self.checkpoint_button.setObjectName("liveCheckpoint")
        self.render_label = QLabel("Render rate")
        self.render_spin = QDoubleSpinBox()
        self.render_spin.setObjectName("liveRenderRate")
        self.render_spin.setRange(0.0, MAX_RENDER_FPS)
        self.render_spin.setDecimals(0)
        self.render_spin.setSuffix(" fps")
        self.render_spin.setSpecialValueText("no frames")
        # Typing sends once, on Enter or focus-out; arrow clicks are gathered by the timer.
        self.render_spin.setKeyboardTracking(False)
        self.render_spin.setToolTip(DESCRIPTIONS[Control.RENDER_RATE])
        self.render_label.setToolTip(DESCRIPTIONS[Control.RENDER_RATE])
        self.buttons = {
            Control.PAUSE: self.pause_button,
            Control.RESUME: self.resume_button,
            Control.CHECKPOINT: self.checkpoint_button,
        }
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for button in self.buttons.values():
            layout.addWidget(button)
        layout.addSpacing(12)
        layout.addWidget(self.render_label)
        layout.addWidget(self.render_spin)
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(RENDER_RATE_DELAY_MS)
        self._render_timer.timeout.connect(self._send_render_rate)
        self.pause_button.clicked.connect(lambda: self.apply(Control.PAUSE))
        self.resume_button.clicked.connect(lambda: self.apply(Control.RESUME))
        self.checkpoint_button.clicked.connect(lambda: self.apply(Control.CHECKPOINT))
        self.render_spin.valueChanged.connect(lambda _value: self._render_timer.start())
        self.set_run(None)

    def set_run(self, run: RunRecord | None) -> None:
        """Follow ``run`` (None: nothing attached); a new run's render rate is read from its config."""
        previous = self.run
        self.run = run
        self._render_timer.stop()
        if run is not None and (previous is None or previous.run_id != run.run_id):
            self._load_render_rate(run)
        self._update()

    def run_changed(self, run: RunRecord) -> None:
        if self.run is not None and run.run_id == self.run.run_id:
            self.run = run
            self._update()

    def _update(self) -> None:
        run = self.run
        capabilities = capabilities_of(run.worker) if run is not None else Capabilities()
        self.checkpoint_button.setVisible(capabilities.checkpoint)
        streams_frames = run is not None and run.lane != Lane.ANALYTICS.value
        self.render_label.setVisible(streams_frames)
        self.render_spin.setVisible(streams_frames)
        for control, button in self.buttons.items():
            why = refusal(run, control) if run is not None else "no run attached"
            button.setEnabled(not why)
            button.setToolTip(why or DESCRIPTIONS[control])
        why = refusal(run, Control.RENDER_RATE) if run is not None else "no run attached"
        self.render_spin.setEnabled(not why)

    def apply(self, control: Control) -> None:
        """Send ``control`` to the attached run (the buttons call this)."""
        run = self.run
        if run is None:
            return
        render_fps = self.render_spin.value() if control is Control.RENDER_RATE else 0.0
        run_id = run.run_id

        def done(_info: RunRecord) -> None:
            asked = {
                Control.PAUSE: "pausing",
                Control.RESUME: "resuming",
                Control.CHECKPOINT: "checkpoint asked of",
                Control.RENDER_RATE: f"render rate {render_fps:g} fps for",
            }[control]
            self.message.emit(f"{asked} {run_id}")

        send_control(self.link, run_id, control, done, self.message.emit, render_fps)

    def _send_render_rate(self) -> None:
        if self.run is not None and self.render_spin.isEnabled():
            self.apply(Control.RENDER_RATE)

    def _load_render_rate(self, run: RunRecord) -> None:
        run_id = run.run_id

        def read(client: DaemonClient) -> float:
            config: dict[str, Any] = json.loads(client.get_run(run_id).config_json or "{}")
            return float((config.get("telemetry") or {}).get("render_fps", 0.0))

        def done(fps: float) -> None:
            if self.run is not None and self.run.run_id == run_id:
                # Shown, not sent: the run already renders at the rate it was started with.
                self.render_spin.blockSignals(True)
                self.render_spin.setValue(fps)
                self.render_spin.blockSignals(False)

        self.link.call(read, done, lambda _message: None)
