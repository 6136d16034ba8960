"""ReplayTab: step through any stored episode of the selected run, read straight from its telemetry database."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import StorageError
from gym_gui.core.records import EpisodeRecord, RunRecord, StepRecord
from gym_gui.envs.check import DEFAULT_RENDER_FPS, render_fps
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.artifacts import RunArtifacts, read_artifacts
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.panes.views import AgentPanes
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.transport import Transport
from gym_gui.ui.videos import VideosPanel

log = logging.getLogger(__name__)

# Steps held in memory around the slider; a seek outside them reads one new window (a primary-key range).
WINDOW = 256
MAX_TEXT = 20_000
POLL_MS = 1000
MAX_TICK_HZ = 30.0


def _pretty(text: str) -> str:
    try:
        shown = json.dumps(json.loads(text), indent=2, sort_keys=True)
    except (ValueError, TypeError):
        shown = text
    return shown if len(shown) <= MAX_TEXT else shown[:MAX_TEXT] + "\n…"


def _episode_label(episode: EpisodeRecord) -> str:
    return f"episode {episode.episode} — return {episode.total_reward:.6g}, {episode.steps} steps"


@dataclass
class _RenderHit:
    """The latest payload at or before ``upto`` in ``episode`` is the one of ``step`` (-1: none)."""

    episode: int
    upto: int
    step: int
    payload: bytes | None


class ReplayTab(RunTab):
    """Replay of the attached run's stored episodes.

    Storage is read directly (read-only, WAL: safe while the daemon writes). Only a window of
    :data:`WINDOW` steps around the slider is in memory; ``rows_loaded`` counts every step row
    read. Pixel runs store frames only at their render rate, so a step without one shows the
    latest frame at or before it, found with one indexed query (``render_queries`` counts them).
    While the run is active the episode list is polled for new episodes every second.
    """

    title = "Replay"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self.reader: TelemetryReader | None = None
        self.render_kind = ""
        self.rows_loaded = 0
        self.render_queries = 0
        self.episode: int | None = None
        self._episodes: list[EpisodeRecord] = []
        self._live: tuple[int, int] | None = None  # the episode being played now and its last stored step
        self._last_step = -1  # of the selected episode
        self._step = 0
        self._window: dict[int, StepRecord] = {}
        self._lo = 0
        self._hi = 0
        self._render_hit: _RenderHit | None = None
        self._shown_render: tuple[int, int] | None = None
        self._speed = 1.0
        self._play_pos = 0.0
        self._play_clock = 0.0
        self._play_timer = QTimer(self)
        self._play_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._play_timer.timeout.connect(self._tick)
        self._poll_timer = QTimer(self)
        self._poll_timer.setInterval(POLL_MS)
        self._poll_timer.timeout.connect(self.refresh_episodes)
        self._background = Background(self)
        self._videos_generation = 0
        self._build()
        self._set_enabled(False)

    def _build(self) -> None:
        self.episode_combo = QComboBox()
        self.episode_combo.setMinimumContentsLength(32)
        # Sizing to the contents would measure every label: runs have tens of thousands of episodes.
        self.episode_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.episode_combo.currentIndexChanged.connect(self._combo_changed)
        self.notice = QLabel()

        self.env_view = EnvView(self)
        self.step_fields = {
            name: QLabel() for name in ("step", "action", "reward", "terminated", "truncated")
        }
        for label in self.step_fields.values():
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.observation_text = QPlainTextEdit(readOnly=True)
        self.observation_text.setMaximumBlockCount(2000)
        self.info_text = QPlainTextEdit(readOnly=True)
        details = QWidget()
        form = QFormLayout(details)
        for name, label in self.step_fields.items():
            form.addRow(name.capitalize(), label)
        form.addRow("Observation", self.observation_text)
        form.addRow("Info", self.info_text)

        # The replayed step's action values, beliefs or conversation, when its payload carries them.
        self.panes = AgentPanes(follow_table=False)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.env_view)
        splitter.addWidget(self.panes)
        splitter.addWidget(details)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setStretchFactor(2, 2)

        self.transport = Transport("step", "Replay speed; 1× is the environment's own frame rate")
        self.transport.back.connect(self.step_back)
        self.transport.play_toggled.connect(self.toggle_play)
        self.transport.forward.connect(self.step_forward)
        self.transport.seeked.connect(self.seek)
        self.transport.speed_changed.connect(self.set_speed)

        top = QHBoxLayout()
        top.addWidget(QLabel("Episode"))
        top.addWidget(self.episode_combo, 1)
        top.addWidget(self.notice, 1)
        steps_page = QWidget()
        steps_layout = QVBoxLayout(steps_page)
        steps_layout.setContentsMargins(0, 0, 0, 0)
        steps_layout.addLayout(top)
        steps_layout.addWidget(splitter, 1)
        steps_layout.addWidget(self.transport)

        # A run that captured videos (CleanRL's capture-video) replays them here too.
        self.videos = VideosPanel()
        self.pages = QStackedWidget()
        self.pages.addWidget(steps_page)
        self.pages.addWidget(self.videos)
        self.source_combo = QComboBox()
        self.source_combo.addItems(["Stored steps", "Captured videos"])
        self.source_combo.setToolTip("Replay the run's stored steps or the videos it captured")
        self.source_combo.currentIndexChanged.connect(self.pages.setCurrentIndex)
        self.source_row = QWidget()
        source_layout = QHBoxLayout(self.source_row)
        source_layout.setContentsMargins(0, 0, 0, 0)
        source_layout.addWidget(QLabel("Replay"))
        source_layout.addWidget(self.source_combo)
        source_layout.addStretch(1)
        self.source_row.setVisible(False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.source_row)
        layout.addWidget(self.pages, 1)

        context = Qt.ShortcutContext.WidgetWithChildrenShortcut
        for key, slot in (
            (Qt.Key.Key_Space, self.toggle_play),
            (Qt.Key.Key_Left, self.step_back),
            (Qt.Key.Key_Right, self.step_forward),
        ):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(context)
            shortcut.activated.connect(slot)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def _set_enabled(self, enabled: bool) -> None:
        self.transport.set_controls_enabled(enabled)

    # ------------------------------------------------------------ RunTab

    def attach(self, run: RunRecord) -> None:
        super().attach(run)
        self._close_storage()
        self._episodes = []
        self._live = None
        self.episode = None
        self.rows_loaded = 0
        self.render_queries = 0
        self.episode_combo.blockSignals(True)
        self.episode_combo.clear()
        self.episode_combo.blockSignals(False)
        self._clear_step("Loading…")
        self._set_videos(None)
        self.panes.attach(run)
        self.refresh_episodes()  # selects the first episode
        self._update_polling()
        self.refresh_videos()

    def run_changed(self, run: RunRecord) -> None:
        super().run_changed(run)
        self.refresh_episodes()
        self._update_polling()
        self.refresh_videos()

    def detach(self) -> None:
        self.pause()
        self._poll_timer.stop()
        self._close_storage()
        self._episodes = []
        self._live = None
        self.episode = None
        self.episode_combo.blockSignals(True)
        self.episode_combo.clear()
        self.episode_combo.blockSignals(False)
        self._clear_step("No run selected.")
        self.panes.detach()
        self._videos_generation += 1
        self._set_videos(None)
        super().detach()

    def _update_polling(self) -> None:
        run = self.run
        active = False
        # An analytics-lane run never stores steps: nothing to poll for (its videos come with run_changed).
        if run is not None and run.lane != "analytics":
            active = not run.state.terminal
        if active:
            self._poll_timer.start()
        else:
            self._poll_timer.stop()

    # ------------------------------------------------------------ captured videos

    @property
    def showing_videos(self) -> bool:
        return self.pages.currentWidget() is self.videos

    def refresh_videos(self) -> None:
        """Re-read the run's captured videos from its manifest (off the GUI thread)."""
        run = self.run
        if run is None or not run.run_dir:
            return
        self._videos_generation += 1
        generation = self._videos_generation
        run_dir, worker = Path(run.run_dir), run.worker
        self._background.run(
            lambda: read_artifacts(run_dir, worker),
            lambda artifacts: (
                self._set_videos(artifacts, run_dir) if generation == self._videos_generation else None
            ),
            lambda message: log.warning("the manifest of %s could not be read: %s", run_dir, message),
            name=f"replay-videos-{run.run_id}",
        )

    def _set_videos(self, artifacts: RunArtifacts | None, run_dir: Path | None = None) -> None:
        videos = artifacts.videos if artifacts is not None else []
        self.videos.set_videos(run_dir, videos)
        self.source_row.setVisible(bool(videos))
        self.source_combo.setItemText(1, f"Captured videos ({len(videos)})")
        if not videos:
            self.source_combo.setCurrentIndex(0)
        elif not self._episode_numbers():
            # No stored steps (analytics lane): the videos are the replay.
            self.source_combo.setCurrentIndex(1)

    # ------------------------------------------------------------ storage

    @property
    def telemetry_path(self) -> Path | None:
        return RunDir(self.run.run_dir).telemetry_path if self.run is not None and self.run.run_dir else None

    def _open_storage(self) -> bool:
        if self.reader is not None:
            return True
        path = self.telemetry_path
        if path is None or not path.is_file():
            return False
        try:
            self.reader = TelemetryReader(path)
            self.render_kind = self.reader.meta("render_kind") or ""
        except StorageError as exc:
            self._close_storage()
            self.notice.setText(str(exc))
            return False
        return True

    def _close_storage(self) -> None:
        self.pause()
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        self._window = {}
        self._lo = self._hi = 0
        self._render_hit = None
        self._shown_render = None

    def _max_step(self, episode: int) -> int:
        """The last stored step of ``episode``; -1 when it has none (or storage cannot say)."""
        if self.reader is None:
            return -1
        try:
            last = self.reader.last_step_of(episode)
        except StorageError as exc:
            self.notice.setText(str(exc))
            return -1
        return -1 if last is None else last

    def _latest_render(self, episode: int, step: int) -> tuple[int, bytes | None]:
        """The latest payload at or before ``step`` and its step (-1: none)."""
        if self.reader is None:
            return -1, None
        self.render_queries += 1
        try:
            found = self.reader.latest_render(episode, step)
        except StorageError as exc:
            self.notice.setText(str(exc))
            return -1, None
        return (-1, None) if found is None else found

    # ------------------------------------------------------------ episodes

    def _episode_numbers(self) -> list[int]:
        numbers = [episode.episode for episode in self._episodes]
        if self._live is not None:
            numbers.append(self._live[0])
        return numbers

    def refresh_episodes(self) -> None:
        """Read episodes stored since the last refresh (and the one in progress) into the list."""
        if not self._open_storage():
            self._clear_step(self._no_steps_message("The run has stored no telemetry yet."))
            return
        reader = self.reader
        assert reader is not None
        try:
            new = reader.episodes(offset=len(self._episodes))
        except StorageError as exc:
            self.notice.setText(str(exc))
            return
        self.notice.setText("")
        try:
            last_key = reader.last_step_key()
        except StorageError as exc:
            self.notice.setText(str(exc))
            return
        newest = last_key[0] if last_key is not None else None
        finished = new or self._episodes
        last_finished = finished[-1] if finished else None
        live: tuple[int, int] | None = None
        if isinstance(newest, int) and (last_finished is None or newest > last_finished.episode):
            live = (newest, self._max_step(newest))
        if not new and live == self._live:
            if self.episode is None and not self._episodes and live is None:
                self._clear_step(self._no_steps_message("No steps stored yet."))
            return
        combo = self.episode_combo
        combo.blockSignals(True)
        try:
            if self._live is not None:
                combo.removeItem(combo.count() - 1)
            self._episodes.extend(new)
            combo.addItems([_episode_label(episode) for episode in new])
            self._live = live
            if live is not None:
                combo.addItem(f"episode {live[0]} — in progress, {live[1] + 1} steps so far")
            numbers = self._episode_numbers()
            if self.episode is not None:
                combo.setCurrentIndex(numbers.index(self.episode) if self.episode in numbers else -1)
        finally:
            combo.blockSignals(False)
        if self.episode is None:
            numbers = self._episode_numbers()
            if numbers:
                self.select_episode(numbers[0])
            else:
                self._clear_step(self._no_steps_message("No steps stored yet."))
        else:
            self._extend_current()

    def _no_steps_message(self, default: str) -> str:
        if self.run is not None and self.run.lane == "analytics":
            return (
                "This worker streams metrics, not steps: with capture-video ticked in its form, "
                "the episodes it films replay here."
            )
        return default

    def _extend_current(self) -> None:
        """The selected episode may have grown (live) or ended since it was selected."""
        if self.episode is None:
            return
        last = self._max_step(self.episode)
        if last != self._last_step:
            self._last_step = last
            self._window = {}
            self._lo = self._hi = 0
            self._configure_slider()

    def select_episode(self, n: int) -> None:
        """Show episode ``n`` from its first step.

        Raises:
            ValueError: when the run has no episode ``n`` (stored or in progress).
        """
        numbers = self._episode_numbers()
        if n not in numbers:
            raise ValueError(
                f"run {self.run.run_id if self.run else ''} has no episode {n}; it has {len(numbers)}"
            )
        self.pause()
        self.episode = n
        self._window = {}
        self._lo = self._hi = 0
        self._render_hit = None
        self._shown_render = None
        self._last_step = self._max_step(n)
        self.episode_combo.blockSignals(True)
        self.episode_combo.setCurrentIndex(numbers.index(n))
        self.episode_combo.blockSignals(False)
        self._configure_slider()
        if self._last_step < 0:
            self._clear_step(f"Episode {n} has no stored steps (the run did not store steps).")
            return
        self._set_enabled(True)
        self.seek(0)

    def _combo_changed(self, index: int) -> None:
        numbers = self._episode_numbers()
        if 0 <= index < len(numbers):
            self.select_episode(numbers[index])

    def _configure_slider(self) -> None:
        self.transport.set_range(self._last_step)
        self._show_position()

    # ------------------------------------------------------------ seeking

    def current_step(self) -> StepRecord | None:
        """The step shown now, None when nothing is."""
        if self.episode is None or self._last_step < 0:
            return None
        return self._record(self._step)

    @property
    def step(self) -> int:
        return self._step

    @property
    def last_step(self) -> int:
        """The last stored step of the selected episode (-1 when it has none)."""
        return self._last_step

    def seek(self, step: int) -> None:
        """Show ``step`` of the selected episode (clamped to the stored steps)."""
        if self.episode is None:
            return
        if step > self._last_step and self._live is not None and self.episode == self._live[0]:
            self._extend_current()
        step = max(0, min(step, self._last_step))
        self._step = step
        record = self._record(step)
        self._show_position()
        if record is None:
            self._clear_fields(f"Step {step} is not stored.")
            return
        self.step_fields["step"].setText(str(record.step))
        self.step_fields["action"].setText(record.action)
        self.step_fields["reward"].setText(f"{record.reward:g}")
        self.step_fields["terminated"].setText("yes" if record.terminated else "no")
        self.step_fields["truncated"].setText("yes" if record.truncated else "no")
        observation = record.observation
        self.observation_text.setPlainText(
            observation if len(observation) <= MAX_TEXT else observation[:MAX_TEXT] + "…"
        )
        self.info_text.setPlainText(_pretty(record.info))
        self._show_picture(record)
        self.panes.offer(record.episode, record.step, record.action, record.info)
        self.panes.show_offered()
        self.panes.refresh()

    def _show_position(self) -> None:
        self.transport.set_position(self._step, f"step {self._step} / {max(0, self._last_step)}")

    def _record(self, step: int) -> StepRecord | None:
        record = self._window.get(step)
        if record is None and (not self._lo <= step < self._hi or self._is_live()):
            self._load_window(step)
            record = self._window.get(step)
        return record

    def _is_live(self) -> bool:
        return self._live is not None and self.episode == self._live[0]

    def _load_window(self, step: int) -> None:
        if self.reader is None or self.episode is None:
            return
        # Going back, keep most of the window behind the step; otherwise ahead of it (play goes forward).
        behind = 3 * WINDOW // 4 if step < self._lo else WINDOW // 4
        start = max(0, step - behind)
        try:
            rows = self.reader.steps(self.episode, start, start + WINDOW)
        except StorageError as exc:
            self.notice.setText(str(exc))
            return
        self.rows_loaded += len(rows)
        self._window = {record.step: record for record in rows}
        self._lo, self._hi = start, start + WINDOW

    # ------------------------------------------------------------ the picture

    def _show_picture(self, record: StepRecord) -> None:
        payload: bytes | None = record.render
        if payload:
            step = record.step
        else:
            step, payload = self._payload_before(record.episode, record.step)
        if payload is None:
            self._shown_render = None
            self.env_view.clear("No picture stored at or before this step.")
            return
        shown = (record.episode, step)
        if shown != self._shown_render:  # the same frame again (sparse pixel frames): nothing to redraw
            self._shown_render = shown
            self.env_view.show_payload(payload)

    def _payload_before(self, episode: int, step: int) -> tuple[int, bytes | None]:
        # ``step`` is in the window (its record was just read), so the window covers [lo, step].
        hit = self._render_hit
        known = hit if hit is not None and hit.episode == episode and hit.step <= step else None
        if known is not None and step <= known.upto:
            return known.step, known.payload
        bottom = self._lo if known is None else max(self._lo, known.upto + 1)
        for s in range(step, bottom - 1, -1):
            record = self._window.get(s)
            if record is not None and record.render:
                self._render_hit = _RenderHit(episode, step, s, record.render)
                return s, record.render
        if known is not None and known.upto + 1 >= self._lo:
            found, payload = known.step, known.payload  # nothing newer between what was known and here
        elif self._lo == 0:
            found, payload = -1, None  # the window reaches the episode's start: no picture at all
        else:
            found, payload = self._latest_render(episode, step)
        self._render_hit = _RenderHit(episode, step, found, payload)
        return found, payload

    # ------------------------------------------------------------ playing

    @property
    def playing(self) -> bool:
        return self._play_timer.isActive()

    @property
    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> None:
        """Replay at ``speed`` × the environment's frame rate (0.25 to 8)."""
        self._speed = self.transport.set_speed(speed)
        if self.playing:
            self._play_timer.setInterval(self._tick_ms())

    def steps_per_second(self) -> float:
        env_id = self.run.env_id if self.run is not None else ""
        return (render_fps(env_id) if env_id else DEFAULT_RENDER_FPS) * self._speed

    def _tick_ms(self) -> int:
        # At most ~30 ticks a second: faster replays advance several steps per tick.
        return max(int(1000 / MAX_TICK_HZ), int(1000 / self.steps_per_second()))

    def play(self) -> None:
        """Advance through the episode at the chosen speed (from the start when at its end)."""
        if self.episode is None or self._last_step < 0:
            return
        if self._step >= self._last_step and not self._is_live():
            self.seek(0)
        self._play_pos = float(self._step)
        self._play_clock = time.monotonic()
        self._play_timer.start(self._tick_ms())
        self.transport.set_playing(True)

    def pause(self) -> None:
        self._play_timer.stop()
        self.transport.set_playing(False)

    def toggle_play(self) -> None:
        if self.showing_videos:
            self.videos.player.toggle_play()
            return
        if self.playing:
            self.pause()
        else:
            self.play()

    def step_back(self) -> None:
        if self.showing_videos:
            self.videos.player.step_back()
            return
        self.pause()
        self.seek(self._step - 1)

    def step_forward(self) -> None:
        if self.showing_videos:
            self.videos.player.step_forward()
            return
        self.pause()
        self.seek(self._step + 1)

    def _tick(self) -> None:
        now = time.monotonic()
        self._play_pos += (now - self._play_clock) * self.steps_per_second()
        self._play_clock = now
        target = int(self._play_pos)
        if target > self._last_step and self._is_live():
            self._extend_current()
        if target >= self._last_step and not self._is_live():
            self.seek(self._last_step)
            self.pause()
            return
        if target != self._step:
            self.seek(target)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        # The shortcuts need an active window; this catches the keys when they could not fire.
        key = event.key()
        if key == Qt.Key.Key_Space:
            self.toggle_play()
        elif key == Qt.Key.Key_Left:
            self.step_back()
        elif key == Qt.Key.Key_Right:
            self.step_forward()
        else:
            super().keyPressEvent(event)
            return
        event.accept()

    # ------------------------------------------------------------ empty states

    def _clear_fields(self, message: str) -> None:
        for label in self.step_fields.values():
            label.setText("")
        self.observation_text.setPlainText("")
        self.info_text.setPlainText(message)

    def _clear_step(self, message: str) -> None:
        self.pause()
        self._set_enabled(False)
        self._clear_fields("")
        self._shown_render = None
        self.env_view.clear(message)
        self.transport.position_label.setText("")
