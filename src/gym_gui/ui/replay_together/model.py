"""Replay together's model: 2–4 runs' stored steps of one episode, read at one shared step (plain Python;
its view, :class:`~gym_gui.ui.replay_together.view.ReplayTogetherView`, brings Qt and calls it off the
GUI thread)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError, StorageError
from gym_gui.core.records import EpisodeRecord, RunRecord, StepRecord
from gym_gui.envs.check import DEFAULT_RENDER_FPS, render_fps
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.tabs.replay_model import WINDOW, ReplayModel
from gym_gui.ui.tabs.replay_storage import ReplayStorage

MIN_RUNS, MAX_RUNS = 2, 4


def check_run_count(count: int, what: str = "the selection") -> None:
    """Refuse a number of runs the view cannot show side by side.

    Raises:
        ConfigError: naming ``what`` held how many runs.
    """
    if not MIN_RUNS <= count <= MAX_RUNS:
        raise ConfigError(
            f"Replay together shows {MIN_RUNS} to {MAX_RUNS} runs side by side; {what} has {count}"
        )


def operator_title(run: RunRecord, config: RunConfig | None) -> str:
    """Who played a run, as its pane's title: its config's ``algorithm`` (an operator's card name), with
    ``params.operator`` where that names something else (a run id, an LLM configuration); the run's kind
    when its config says neither (a person's run) or cannot be read."""
    if config is None:
        return run.worker
    name = config.algorithm or run.worker
    operator = config.params.get("operator")
    if isinstance(operator, str) and operator and operator != name:
        return f"{name} ({operator})"
    return name


@dataclass(frozen=True)
class RunListing:
    """One run as the view lists it: who played it and its episodes."""

    run_id: str
    title: str
    ended: dict[int, EpisodeRecord]  # its stored episodes by number
    unfinished: int | None = None  # an episode with steps stored but no end: in play, or the run stopped
    live: bool = False  # the run is still playing ``unfinished``


@dataclass(frozen=True)
class Listing:
    """The runs' episodes, read when the view opens them."""

    runs: list[RunListing]
    fps: float  # the first run's env's own frame rate: 1× speed
    errors: list[str]

    @property
    def episodes(self) -> list[int]:
        """Every episode number some run stores, in order (the arena's runs play episode i on one seed)."""
        numbers = {n for run in self.runs for n in run.ended}
        numbers.update(run.unfinished for run in self.runs if run.unfinished is not None)
        return sorted(numbers)

    def label(self, episode: int) -> str:
        """``episode`` as the episode choice lists it: its seed when the runs agree, each run's return."""
        records = [run.ended.get(episode) for run in self.runs]
        seeds = {record.seed for record in records if record is not None and record.seed is not None}
        seed = f", seed {seeds.pop()}" if len(seeds) == 1 else ""
        returns = [
            f"{record.total_reward:g}" if record is not None else _unfinished(run, episode)
            for run, record in zip(self.runs, records, strict=True)
        ]
        return f"episode {episode}{seed} — returns {' · '.join(returns)}"


def _unfinished(run: RunListing, episode: int) -> str:
    if run.unfinished != episode:
        return "–"
    return "in play" if run.live else "unfinished"


@dataclass(frozen=True)
class PaneStep:
    """What one run's pane shows at the shared step."""

    run_id: str
    step: int  # the run's step shown: the shared one, or its last when its episode is shorter (-1: none)
    last_step: int  # of the run's episode (-1: it stores none)
    record: StepRecord | None
    picture: bytes | None  # the payload to draw: the step's own, else the latest before it
    return_so_far: float | None  # None: storage could not say
    done: bool  # the episode is over and the shared step is at or past its last step
    finished: bool  # the episode ended (terminated or truncated), not stopped with its run
    spans: list[tuple[int, int, str]]  # who acted in the episode (ActorTimeline's spans)
    note: str = ""  # why no step shows

    @property
    def actor(self) -> str:
        """Who acted at the step shown: "operator", "human", or "" when the step does not say."""
        return self.record.actor if self.record is not None else ""

    def status(self) -> str:
        """The pane's line: where it is and its return so far (or why nothing shows)."""
        if self.note:
            return self.note
        if self.done:
            where = f"{'done' if self.finished else 'stopped'} at step {self.last_step}"
        else:
            where = f"step {self.step}"
        earned = "?" if self.return_so_far is None else f"{self.return_so_far:g}"
        return f"{where} · return {earned}"


@dataclass(frozen=True)
class Shown:
    """Every pane at one shared step of one episode."""

    episode: int
    step: int  # the shared step
    last_step: int  # the longest episode's last step: the shared slider's end
    live: bool  # some run is still playing this episode (its end grows)
    panes: list[PaneStep]
    errors: list[str]

    @property
    def at_end(self) -> bool:
        """Whether every pane is at its last step and none can grow (playing again starts from 0)."""
        return self.step >= self.last_step and not self.live


class _RunSteps:
    """One run's telemetry: its storage reads and the Replay tab's model over them."""

    def __init__(self, run: RunRecord, on_error: Callable[[str], None], window: int) -> None:
        self.run = run
        self.storage = ReplayStorage(on_error)
        self.model = ReplayModel(
            self.storage.steps,
            self.storage.last_step_of,
            self.storage.latest_render,
            fps=DEFAULT_RENDER_FPS,  # the view's clock plays; this model's stays still
            window=window,
            actor_spans=self.storage.actor_spans,
        )
        self.ended: dict[int, EpisodeRecord] = {}

    def open(self) -> RunListing:
        files = RunDir(self.run.run_dir) if self.run.run_dir else None
        config: RunConfig | None = None
        if files is not None:
            try:
                config = files.read_config()
            except StorageError as exc:
                self.storage.on_error(f"run {self.run.run_id}: {exc}")
        unfinished: int | None = None
        if self.storage.open(files.telemetry_path if files is not None else None):
            reader = self.storage.reader
            assert reader is not None
            try:
                self.ended = {episode.episode: episode for episode in reader.episodes()}
                newest = reader.last_step_key()
            except StorageError as exc:
                self.storage.on_error(str(exc))
                newest = None
            if newest is not None and newest[0] not in self.ended:
                unfinished = newest[0]
        live = unfinished is not None and not self.run.state.terminal
        self.model.live_episode = unfinished if live else None
        return RunListing(self.run.run_id, operator_title(self.run, config), self.ended, unfinished, live)

    def at(self, episode: int, step: int) -> PaneStep:
        model = self.model
        spans = model.actors.spans
        if model.last_step < 0:
            why = "stored no steps" if self.storage.reader is None else f"stores no episode {episode}"
            return PaneStep(self.run.run_id, -1, -1, None, None, None, False, False, spans, f"this run {why}")
        model.seek(step)
        record = model.current()
        done = step >= model.last_step and not model.is_live
        finished = episode in self.ended
        if record is None:
            note = f"step {model.step} is not stored"
            return PaneStep(
                self.run.run_id, model.step, model.last_step, None, None, None, done, finished, spans, note
            )
        _, picture = model.picture_of(record)
        earned = self.storage.return_through(episode, model.step)
        return PaneStep(
            self.run.run_id,
            model.step,
            model.last_step,
            record,
            picture,
            earned,
            done,
            finished,
            model.actors.spans,
        )


class TogetherReplay:
    """2–4 runs read at one shared step of one episode number, each through its own
    :class:`~gym_gui.ui.tabs.replay_model.ReplayModel` (a window of steps, the latest picture at or
    before a step, who acted).

    A run whose episode is shorter shows its last step from there on, done; a run that stores no such
    episode says so. Every call reads storage and blocks, and the runs' readers belong to the thread
    that opened them: call it from one thread (the view's reading thread), never the GUI's.

    Raises:
        ConfigError: for fewer than 2 or more than 4 runs, naming ``what`` held them (:func:`check_run_count`).
    """

    def __init__(
        self, runs: Sequence[RunRecord], *, what: str = "the selection", window: int = WINDOW
    ) -> None:
        check_run_count(len(runs), what)
        self._errors: list[str] = []
        self._runs = [_RunSteps(run, self._errors.append, window) for run in runs]
        self.episode: int | None = None
        self.step = 0

    def open(self) -> Listing:
        """Read each run's config and episodes."""
        runs = [run.open() for run in self._runs]
        fps = render_fps(self._runs[0].run.env_id) if self._runs[0].run.env_id else DEFAULT_RENDER_FPS
        return Listing(runs, fps, self._drain())

    def select(self, episode: int) -> Shown:
        """Show episode ``episode`` of every run, from its first step."""
        self.episode = episode
        for run in self._runs:
            run.model.select(episode)
        return self.seek(0)

    def seek(self, step: int) -> Shown:
        """Move every pane to ``step`` (clamped to the longest episode; a run still playing the episode
        reads on past what it had).

        Raises:
            ValueError: when no episode is selected.
        """
        if self.episode is None:
            raise ValueError("select an episode before seeking")
        models = [run.model for run in self._runs]
        if not any(model.is_live for model in models):
            step = min(step, max(model.last_step for model in models))
        step = max(0, step)
        panes = [run.at(self.episode, step) for run in self._runs]
        last = max(model.last_step for model in models)
        self.step = min(step, max(0, last))
        live = any(model.is_live for model in models)
        return Shown(self.episode, self.step, last, live, panes, self._drain())

    def close(self) -> None:
        """Close every run's reader (from the thread that read)."""
        for run in self._runs:
            run.model.clear()
            run.storage.close()

    def _drain(self) -> list[str]:
        errors, self._errors[:] = list(self._errors), []
        return errors
