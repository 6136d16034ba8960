"""ReplayTab: step through any stored episode of the selected run, read straight from its telemetry database."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import StorageError
from gym_gui.core.records import RunRecord, StepRecord
from gym_gui.envs.check import DEFAULT_RENDER_FPS, MAX_DRAW_FPS, render_fps
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.artifacts import RunArtifacts, read_artifacts
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.panes.views import AgentPanes
from gym_gui.ui.tabs.actor_strip import ActorStrip
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.tabs.episode_choice import EpisodeChoice
from gym_gui.ui.tabs.playback import Playback
from gym_gui.ui.tabs.replay_model import ReplayModel
from gym_gui.ui.tabs.replay_storage import ReplayStorage
from gym_gui.ui.tabs.step_details import StepDetails
from gym_gui.ui.transport import Transport
from gym_gui.ui.videos import VideosPanel

log = logging.getLogger(__name__)

POLL_MS = 1000


class ReplayTab(RunTab):
    """Replay of the attached run's stored episodes.

    Storage is read directly (read-only, WAL: safe while the daemon writes). Which steps are held,
    which is shown and the playback clock are the :class:`ReplayModel`'s (``model``): only a window
    of steps around the slider is in memory, and a step without a picture shows the latest one at
    or before it. The tab lists the episodes (:class:`EpisodeChoice`), polled for new ones every
    second while the run is active, and shows the model's step.
    """

    title = "Replay"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        # A failed read says why on the notice line (built below, before any read).
        storage = self.storage = ReplayStorage(on_error=lambda message: self.notice.setText(message))
        self.model = ReplayModel(
            storage.steps,
            storage.last_step_of,
            storage.latest_render,
            fps=DEFAULT_RENDER_FPS,
            actor_spans=storage.actor_spans,
        )
        self._shown_render: tuple[int, int] | None = None  # (episode, step) of the picture drawn
        self._poll_timer = QTimer(self)
        self._poll_timer.setInterval(POLL_MS)
        self._poll_timer.timeout.connect(self.refresh_episodes)
        self._background = Background(self)
        self._videos_generation = 0
        self._build()
        self._set_enabled(False)

    def _build(self) -> None:
        self.episode_combo = EpisodeChoice()
        self.episode_combo.picked.connect(self.select_episode)
        self.notice = QLabel()

        # Playback's clock paces the pictures (the env's rate × speed, at most 60 ticks a second): the
        # view draws each one it is given, as a dragged slider's, up to a screen's rate.
        self.env_view = EnvView(self, max_fps=MAX_DRAW_FPS)
        self.details = StepDetails()
        self.step_fields = self.details.step_fields

        # The replayed step's action values, beliefs or conversation, when its payload carries them.
        self.panes = AgentPanes(follow_table=False)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.env_view)
        splitter.addWidget(self.panes)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setStretchFactor(2, 2)

        self.transport = Transport("step", "Replay speed; 1× is the environment's own frame rate")
        self.transport.back.connect(self.step_back)
        self.transport.play_toggled.connect(self.toggle_play)
        self.transport.forward.connect(self.step_forward)
        self.transport.seeked.connect(self.seek)
        self.transport.speed_changed.connect(self.set_speed)
        self.playback = Playback(self.transport, self.model.clock, self._tick, self)
        self.actor_strip = ActorStrip(self.model.actors)
        self.transport.add_under_slider(self.actor_strip)

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
        self.model.rows_loaded = self.model.render_queries = 0
        self.episode_combo.forget()
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
        self.episode_combo.forget()
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
        elif not self.episode_combo.numbers():
            # No stored steps (analytics lane): the videos are the replay.
            self.source_combo.setCurrentIndex(1)

    # ------------------------------------------------------------ storage

    @property
    def telemetry_path(self) -> Path | None:
        return RunDir(self.run.run_dir).telemetry_path if self.run is not None and self.run.run_dir else None

    def _close_storage(self) -> None:
        self.pause()
        self.storage.close()
        self.model.clear()
        self._shown_render = None

    # ------------------------------------------------------------ episodes

    def refresh_episodes(self) -> None:
        """Read episodes stored since the last refresh (and the one in progress) into the list."""
        if not self.storage.open(self.telemetry_path):
            self._clear_step(self._no_steps_message("The run has stored no telemetry yet."))
            return
        reader = self.storage.reader
        assert reader is not None
        try:
            new = reader.episodes(offset=len(self.episode_combo.ended))
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
        choice = self.episode_combo
        finished = new or choice.ended
        last_finished = finished[-1] if finished else None
        live: tuple[int, int] | None = None
        if isinstance(newest, int) and (last_finished is None or newest > last_finished.episode):
            live = (newest, self.storage.last_step_of(newest))
        if not new and live == choice.live:
            if self.episode is None and not choice.ended and live is None:
                self._clear_step(self._no_steps_message("No steps stored yet."))
            return
        choice.add(new, live, self.episode)
        self.model.live_episode = live[0] if live is not None else None
        if self.episode is None:
            numbers = choice.numbers()
            if numbers:
                self.select_episode(numbers[0])
            else:
                self._clear_step(self._no_steps_message("No steps stored yet."))
        elif self.model.grow():  # the selected episode may have grown (live) or ended
            self._configure_slider()

    def _no_steps_message(self, default: str) -> str:
        if self.run is not None and self.run.lane == "analytics":
            return (
                "This worker streams metrics, not steps: with capture-video ticked in its form, "
                "the episodes it films replay here."
            )
        return default

    def select_episode(self, n: int) -> None:
        """Show episode ``n`` from its first step.

        Raises:
            ValueError: when the run has no episode ``n`` (stored or in progress).
        """
        numbers = self.episode_combo.numbers()
        if n not in numbers:
            raise ValueError(
                f"run {self.run.run_id if self.run else ''} has no episode {n}; it has {len(numbers)}"
            )
        self.pause()
        self.model.select(n)
        self._shown_render = None
        self.episode_combo.show_episode(n)
        self._configure_slider()
        if self.model.last_step < 0:
            self._clear_step(f"Episode {n} has no stored steps (the run did not store steps).")
            return
        self._set_enabled(True)
        self.seek(0)

    def _configure_slider(self) -> None:
        self.transport.set_range(self.model.last_step)
        self.actor_strip.show_episode(self.model.last_step + 1)
        self._show_position()

    # ------------------------------------------------------------ seeking

    @property
    def episode(self) -> int | None:
        """The selected episode, None when none is."""
        return self.model.episode

    @property
    def rows_loaded(self) -> int:
        """Step rows read from storage since the run was attached."""
        return self.model.rows_loaded

    @property
    def render_queries(self) -> int:
        """Storage queries for an earlier step's picture since the run was attached."""
        return self.model.render_queries

    def current_step(self) -> StepRecord | None:
        """The step shown now, None when nothing is."""
        return self.model.current()

    @property
    def step(self) -> int:
        return self.model.step

    @property
    def last_step(self) -> int:
        """The last stored step of the selected episode (-1 when it has none)."""
        return self.model.last_step

    def seek(self, step: int) -> None:
        """Show ``step`` of the selected episode (clamped to the stored steps)."""
        if self.episode is None:
            return
        self.model.seek(step)
        self._show_step()

    def _show_step(self) -> None:
        """Show the model's step: its fields, its picture and what the panes read of it."""
        # A live episode may have grown while seeking.
        self.transport.set_range(self.model.last_step)
        self.actor_strip.show_episode(self.model.last_step + 1)
        record = self.model.current()
        self._show_position()
        if record is None:
            self.details.clear(f"Step {self.model.step} is not stored.")
            return
        self.details.show_step(record)
        self._show_picture(record)
        self.panes.offer(record.episode, record.step, record.action, record.info)
        self.panes.show_offered()
        self.panes.refresh()

    def _show_position(self) -> None:
        step, last = self.model.step, self.model.last_step
        self.transport.set_position(step, f"step {step} / {max(0, last)}")

    def _show_picture(self, record: StepRecord) -> None:
        step, payload = self.model.picture_of(record)
        if payload is None:
            self._shown_render = None
            self.env_view.clear("No picture stored at or before this step.")
            return
        shown = (record.episode, step)
        if shown != self._shown_render:  # the same frame again (sparse pixel frames): nothing to redraw
            self._shown_render = shown
            self.env_view.show_payload(payload)

    # ------------------------------------------------------------ playing

    @property
    def playing(self) -> bool:
        return self.model.playing

    @property
    def speed(self) -> float:
        return self.model.speed

    def set_speed(self, speed: float) -> None:
        """Replay at ``speed`` × the environment's frame rate (0.25 to 8)."""
        self.playback.set_speed(speed)

    def play(self) -> None:
        """Advance through the episode at the chosen speed (from the start when at its end)."""
        env_id = self.run.env_id if self.run is not None else ""
        self.model.fps = render_fps(env_id) if env_id else DEFAULT_RENDER_FPS
        restarts = self.model.at_end
        if not self.model.play():
            return
        if restarts:
            self._show_step()
        self.playback.started()

    def pause(self) -> None:
        self.playback.stop()

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
        if self.episode is not None:
            self.model.previous()
            self._show_step()

    def step_forward(self) -> None:
        if self.showing_videos:
            self.videos.player.step_forward()
            return
        self.pause()
        if self.episode is not None:
            self.model.next()
            self._show_step()

    def _tick(self) -> None:
        step = self.model.tick()
        if step is not None:
            self.seek(step)
        if not self.model.playing:
            self.pause()

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

    def _clear_step(self, message: str) -> None:
        self.pause()
        self._set_enabled(False)
        self.actor_strip.setVisible(False)
        self.details.clear()
        self._shown_render = None
        self.env_view.clear(message)
        self.transport.position_label.setText("")
