"""Captured videos played inside the window (QtMultimedia): a player and a list-plus-player panel.

CleanRL's ``--capture-video`` films some training episodes into ``videos/<run>/*.mp4``; the worker
registers each with the episode it shows and its return (see ``gym_gui.ui.artifacts``). The
Checkpoints tab and the Replay tab of such a run both show a :class:`VideosPanel`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QKeyEvent
from PySide6.QtMultimedia import QMediaMetaData, QMediaPlayer, QVideoFrame, QVideoSink
from PySide6.QtWidgets import (
    QLabel,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gym_gui.ui.artifacts import Video
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.tables import read_only_item, row_table
from gym_gui.ui.transport import Transport

DEFAULT_VIDEO_FPS = 30.0


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.2f} s"


class VideoPlayer(QWidget):
    """One video file with the replay controls: play/pause, frame steps, a position slider, speed.

    No audio output is attached (the videos have none). ``frames_shown`` counts decoded frames
    that reached the view, ``error`` holds the player's last error (empty when none).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path: Path | None = None
        self.frames_shown = 0
        self.error = ""
        self._fps = DEFAULT_VIDEO_FPS
        self._first_frame_due = False
        self.player = QMediaPlayer(self)
        # Frames are drawn by the cockpit's own EnvView (scaled like every other picture, and
        # captured by grab()), not by a QVideoWidget, whose native surface a window grab misses.
        self.view = EnvView(self)
        self.view.clear("No video selected.")
        self.sink = QVideoSink(self)
        self.player.setVideoSink(self.sink)
        self.sink.videoFrameChanged.connect(self._frame_arrived)
        self.caption = QLabel("No video selected.")
        self.caption.setWordWrap(True)
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.transport = Transport("frame", "Playback speed; 1× is the video's own frame rate")
        self.transport.back.connect(self.step_back)
        self.transport.play_toggled.connect(self.toggle_play)
        self.transport.forward.connect(self.step_forward)
        self.transport.seeked.connect(self.seek)
        self.transport.speed_changed.connect(self.set_speed)
        self.player.positionChanged.connect(self._show_position)
        self.player.durationChanged.connect(self._duration_changed)
        self.player.playbackStateChanged.connect(
            lambda state: self.transport.set_playing(state == QMediaPlayer.PlaybackState.PlayingState)
        )
        self.player.mediaStatusChanged.connect(self._status_changed)
        self.player.errorOccurred.connect(self._error)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.transport)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.transport.set_controls_enabled(False)

    # ------------------------------------------------------------ what tests read

    @property
    def playing(self) -> bool:
        return self.player.playbackState() == QMediaPlayer.PlaybackState.PlayingState

    @property
    def position(self) -> int:
        """Milliseconds into the video."""
        return int(self.player.position())

    @property
    def duration(self) -> int:
        return int(self.player.duration())

    @property
    def frame_ms(self) -> int:
        """One frame's length: a single step moves this far."""
        return max(1, round(1000 / self._fps))

    @property
    def loaded(self) -> bool:
        return self.player.mediaStatus() in (
            QMediaPlayer.MediaStatus.LoadedMedia,
            QMediaPlayer.MediaStatus.BufferedMedia,
            QMediaPlayer.MediaStatus.BufferingMedia,
            QMediaPlayer.MediaStatus.EndOfMedia,
        )

    # ------------------------------------------------------------ loading

    def load(self, path: Path, caption: str) -> None:
        """Open ``path``, paused on its first frame; a missing file says so instead."""
        # Stopped with no source first: the previous video's own status changes must not pause the
        # player on its behalf, or the new one would load already paused and never show a frame.
        self._first_frame_due = False
        self.player.stop()
        self.player.setSource(QUrl())
        self.error = ""
        self.frames_shown = 0
        self._fps = DEFAULT_VIDEO_FPS
        if not path.is_file():
            self.clear(f"{path} is missing.")
            return
        self.path = path
        self.caption.setText(f"{caption}\n{path}")
        self._first_frame_due = True
        self.player.setSource(QUrl.fromLocalFile(str(path)))
        self.transport.set_controls_enabled(True)

    def clear(self, message: str) -> None:
        self.player.stop()
        self.player.setSource(QUrl())
        self.path = None
        self.caption.setText(message)
        self.view.clear(message)
        self.transport.set_range(0)
        self.transport.set_position(0, "")
        self.transport.set_controls_enabled(False)

    # ------------------------------------------------------------ controls

    def play(self) -> None:
        if self.path is not None:
            self.player.play()

    def pause(self) -> None:
        self.player.pause()

    def toggle_play(self) -> None:
        if self.playing:
            self.pause()
        else:
            self.play()

    def seek(self, ms: int) -> None:
        duration = self.duration
        self.player.setPosition(max(0, min(ms, duration) if duration > 0 else ms))

    def step_forward(self) -> None:
        self.pause()
        self.seek(self.position + self.frame_ms)

    def step_back(self) -> None:
        self.pause()
        self.seek(self.position - self.frame_ms)

    def set_speed(self, speed: float) -> None:
        self.player.setPlaybackRate(self.transport.set_speed(speed))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        actions = {
            Qt.Key.Key_Space: self.toggle_play,
            Qt.Key.Key_Left: self.step_back,
            Qt.Key.Key_Right: self.step_forward,
        }
        action = actions.get(Qt.Key(event.key()))
        if action is None:
            super().keyPressEvent(event)
            return
        action()
        event.accept()

    # ------------------------------------------------------------ player events

    def _frame_arrived(self, frame: QVideoFrame) -> None:
        if not frame.isValid():
            return
        image = frame.toImage()
        if not image.isNull():
            self.frames_shown += 1
            self.view.show_image(image)

    def _duration_changed(self, duration: int) -> None:
        self.transport.set_range(int(duration), page=max(1, self.frame_ms * 10))
        self._show_position(self.player.position())

    def _status_changed(self, status: QMediaPlayer.MediaStatus) -> None:
        if status == QMediaPlayer.MediaStatus.LoadedMedia:
            rate = self.player.metaData().value(QMediaMetaData.Key.VideoFrameRate)
            if isinstance(rate, int | float) and rate > 0:
                self._fps = float(rate)
            self._show_position(self.player.position())
            if self._first_frame_due:
                self._first_frame_due = False
                if self.player.playbackState() == QMediaPlayer.PlaybackState.StoppedState:
                    self.player.pause()  # paused, not stopped: the first frame shows, seeks draw theirs
        elif status == QMediaPlayer.MediaStatus.InvalidMedia and not self.error:
            self.error = "not a playable video"
            self.caption.setText(f"{self.path} could not be played: {self.error}.")

    def _error(self, error: QMediaPlayer.Error, message: str) -> None:
        if error == QMediaPlayer.Error.NoError:
            return
        self.error = message or str(error)
        self.caption.setText(f"{self.path} could not be played: {self.error}")
        self.transport.set_controls_enabled(False)

    def _show_position(self, position: int) -> None:
        duration = self.duration
        frame, frames = int(position) // self.frame_ms, max(1, duration // self.frame_ms)
        self.transport.set_position(
            int(position),
            f"frame {min(frame, frames)} / {frames} · {_seconds(int(position))} / {_seconds(duration)}",
        )


class VideosPanel(QWidget):
    """A run's captured videos — episode, return, length, training step — and the player.

    Selecting a video loads it (paused on its first frame); double-clicking plays it.
    """

    EMPTY = "No videos: tick capture-video among the script's parameters in the training form to record some."

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run_dir: Path | None = None
        self.videos: list[Video] = []
        self.player = VideoPlayer()
        self.table = row_table(["episode", "return", "length", "step", "file"])
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.cellDoubleClicked.connect(lambda _row, _col: self.player.play())
        self.message = QLabel(self.EMPTY)
        self.message.setWordWrap(True)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.message)
        left_layout.addWidget(self.table, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(self.player)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    def set_videos(self, run_dir: Path | None, videos: list[Video]) -> None:
        """List ``videos`` of ``run_dir``; the selected one stays selected (and loaded) when still listed."""
        if run_dir == self.run_dir and list(videos) == self.videos and (videos or run_dir is None):
            return  # re-read, unchanged: keep the table (and its scroll position) as it is
        selected = self.selected_video()
        same_run = run_dir == self.run_dir
        self.run_dir = run_dir
        self.videos = list(videos)
        self.table.blockSignals(True)
        try:
            self.table.setRowCount(0)
            for row, video in enumerate(self.videos):
                self.table.insertRow(row)
                episode = "?" if video.episode is None else str(video.episode)
                ret = "" if video.ret is None else f"{video.ret:.6g}"
                length = "" if video.length is None else f"{video.length:,}"
                self.table.setItem(row, 0, read_only_item(episode, video.path, align_right=True))
                self.table.setItem(row, 1, read_only_item(ret, align_right=True))
                self.table.setItem(row, 2, read_only_item(length, align_right=True))
                self.table.setItem(row, 3, read_only_item(f"{video.step:,}", align_right=True))
                self.table.setItem(
                    row, 4, read_only_item(video.path if video.exists else f"{video.path} (missing)")
                )
        finally:
            self.table.blockSignals(False)
        self.message.setText(
            f"{len(self.videos)} video(s) captured while training." if self.videos else self.EMPTY
        )
        if same_run and selected is not None and self._row_of(selected) is not None:
            self._select_row(self._row_of(selected), load=self.player.path is None)
        elif self.videos:
            self._select_row(0, load=True)
        else:
            self.player.clear("No video selected.")

    def selected_video(self) -> str | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows:
            return None
        item = self.table.item(rows[0].row(), 0)
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    def select_video(self, path: str) -> None:
        """Select (and load) the video at ``path`` inside the run directory.

        Raises:
            ValueError: when the run has no such video.
        """
        row = self._row_of(path)
        if row is None:
            raise ValueError(f"the run has no captured video {path!r}; it has {len(self.videos)}")
        self._select_row(row, load=True)

    def _row_of(self, path: str) -> int | None:
        return next((row for row, video in enumerate(self.videos) if video.path == path), None)

    def _select_row(self, row: int | None, load: bool) -> None:
        if row is None:
            return
        self.table.blockSignals(True)
        self.table.selectRow(row)
        self.table.blockSignals(False)
        if load:
            self._load(self.videos[row])

    def _selection_changed(self) -> None:
        path = self.selected_video()
        video = next((v for v in self.videos if v.path == path), None)
        if video is not None:
            self._load(video)

    def _load(self, video: Video) -> None:
        if self.run_dir is None:
            return
        self.player.load(self.run_dir / video.path, video.label)
