"""Reading a run's telemetry database (TelemetryReader), and the metric a run's return is read from.

Its schema is :mod:`gym_gui.storage.telemetry_schema`; its one writer, :mod:`gym_gui.storage.telemetry_writer`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_gui.core.errors import StorageError
from gym_gui.core.records import (
    ACTOR_COLUMNS,
    AGENT_COLUMNS,
    STEP_COLUMNS,
    ArtifactRecord,
    EpisodeInterventions,
    EpisodeRecord,
    EventRecord,
    MetricPoint,
    StepRecord,
)
from gym_gui.storage.database import schema_version
from gym_gui.storage.telemetry_schema import ACTORS_SINCE, AGENTS_SINCE, TELEMETRY_DATABASE, open_telemetry_db

_STEP_SELECT = f"SELECT {', '.join(STEP_COLUMNS + ACTOR_COLUMNS + AGENT_COLUMNS)} FROM steps"
# A file from before AGENTS_SINCE has no agent column: its steps are of the one implicit agent "".
_STEP_SELECT_BEFORE_AGENTS = f"SELECT {', '.join(STEP_COLUMNS + ACTOR_COLUMNS)}, '' FROM steps"
# A file from before ACTORS_SINCE has no actor columns either: its steps say nothing of who acted.
_STEP_SELECT_BEFORE_ACTORS = f"SELECT {', '.join(STEP_COLUMNS)}, '', '', '' FROM steps"
# Consecutive steps of one episode with the same actor, among the steps that say (the partial
# index steps_actor holds exactly those): a new span where the actor changes or a step is missing.
_ACTOR_SPANS = (
    "SELECT MIN(step), MAX(step) + 1, actor FROM ("
    " SELECT step, actor, SUM(fresh) OVER (ORDER BY step) AS span FROM ("
    "  SELECT step, actor, (actor IS NOT LAG(actor) OVER w OR step != LAG(step) OVER w + 1) AS fresh"
    "  FROM steps WHERE episode = ? AND step >= ? AND actor != '' WINDOW w AS (ORDER BY step)))"
    " GROUP BY span ORDER BY span"
)
# Per episode: its steps that say who acted, those a person acted, and the times a person took over.
_INTERVENTIONS = (
    "SELECT episode, COUNT(*), SUM(actor = 'human'), SUM(actor = 'human' AND before IS NOT 'human') FROM ("
    " SELECT episode, actor, LAG(actor) OVER (PARTITION BY episode ORDER BY step) AS before"
    " FROM steps WHERE actor != '')"
    " GROUP BY episode ORDER BY episode"
)
# A run's final return is the mean of this many of its last episodic returns.
FINAL_RETURN_EPISODES = 20
_EPISODE_COLUMNS = "episode, seed, steps, total_reward, terminated, truncated, started_at, ended_at, info"
_EPISODE_SELECT = f"SELECT {_EPISODE_COLUMNS}, agent_returns FROM episodes"
_EPISODE_SELECT_BEFORE_AGENTS = f"SELECT {_EPISODE_COLUMNS}, '[]' FROM episodes"


class TelemetryReader:
    """Read-only access to one run's telemetry, safe to use while the writer writes (WAL).

    Each thread gets its own read-only connection. Every query sees what was committed
    when it started.
    """

    def __init__(self, path: Path) -> None:
        """Open ``path`` read-only for the calling thread.

        Raises:
            StorageError: when the file is missing, not initialised, or of a newer schema.
        """
        self._path = Path(path)
        self._local = threading.local()
        self._conn()

    @property
    def path(self) -> Path:
        return self._path

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_telemetry_db(self._path, readonly=True)
            self._local.conn = conn
            version = schema_version(conn)
            self._local.actors = version >= ACTORS_SINCE
            self._local.agents = version >= AGENTS_SINCE
        return conn

    def _has_actors(self) -> bool:
        """Whether the file's steps table has the actor columns (a file of an older version has not)."""
        self._conn()
        return bool(self._local.actors)

    def _has_agents(self) -> bool:
        """Whether the file's steps name their agents (a file of an older version's do not)."""
        self._conn()
        return bool(self._local.agents)

    def _step_select(self) -> str:
        if self._has_agents():
            return _STEP_SELECT
        return _STEP_SELECT_BEFORE_AGENTS if self._has_actors() else _STEP_SELECT_BEFORE_ACTORS

    def _episode_select(self) -> str:
        return _EPISODE_SELECT if self._has_agents() else _EPISODE_SELECT_BEFORE_AGENTS

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{TELEMETRY_DATABASE} {self._path}: read failed: {exc}") from exc

    def _scalar(self, sql: str, params: Sequence[object] = ()) -> Any:
        return self._rows(sql, params)[0][0]

    @staticmethod
    def _episode(row: tuple[Any, ...]) -> EpisodeRecord:
        episode, seed, steps, total_reward, terminated, truncated, started_at, ended_at, info, returns = row
        return EpisodeRecord(
            episode=episode,
            seed=seed,
            steps=steps,
            total_reward=total_reward,
            terminated=bool(terminated),
            truncated=bool(truncated),
            started_at=started_at,
            ended_at=ended_at,
            info=info,
            agent_returns=tuple((str(agent), float(value)) for agent, value in json.loads(returns)),
        )

    @staticmethod
    def _step(row: tuple[Any, ...]) -> StepRecord:
        (
            episode,
            step,
            reward,
            terminated,
            truncated,
            action,
            observation,
            info,
            render,
            wall_time,
            actor,
            proposed_action,
            agent,
        ) = row
        return StepRecord(
            episode,
            step,
            reward,
            bool(terminated),
            bool(truncated),
            action,
            observation,
            info,
            render,
            wall_time,
            actor,
            proposed_action,
            agent,
        )

    def episodes(self, offset: int = 0, limit: int | None = None) -> list[EpisodeRecord]:
        """Episode summaries in episode order, skipping ``offset`` and returning at most ``limit``."""
        rows = self._rows(
            f"{self._episode_select()} ORDER BY episode LIMIT ? OFFSET ?",
            (-1 if limit is None else limit, offset),
        )
        return [self._episode(row) for row in rows]

    def episode(self, n: int) -> EpisodeRecord:
        """The summary of episode ``n``.

        Raises:
            StorageError: naming the episode when it is not stored (yet).
        """
        rows = self._rows(f"{self._episode_select()} WHERE episode = ?", (n,))
        if not rows:
            raise StorageError(
                f"{TELEMETRY_DATABASE} {self._path}: episode {n} is not stored (it may not have ended yet); "
                f"{self.episode_count()} episodes are"
            )
        return self._episode(rows[0])

    def episode_count(self) -> int:
        """Number of stored episode summaries."""
        return int(self._scalar("SELECT COUNT(*) FROM episodes"))

    def episodic_returns(self, metric: str = "", last: int | None = None) -> list[float]:
        """Every finished episode's return, in order (with ``last``, only the last ``last``): the points
        of ``metric`` (the run's kind's ``return_metric``: a CleanRL training run stores no episodes), in
        step order and, within a step, in the order they were stored (the order the script printed
        them); without any (no metric, or an evaluation run that stores episodes), the stored
        episodes' total rewards."""
        limit = -1 if last is None else last
        rows = []
        if metric:
            rows = self._rows(
                "SELECT value FROM metrics WHERE tag = ? ORDER BY step DESC, rowid DESC LIMIT ?",
                (metric, limit),
            )
        if not rows:
            rows = self._rows("SELECT total_reward FROM episodes ORDER BY episode DESC LIMIT ?", (limit,))
        return [float(value) for (value,) in reversed(rows)]

    def steps(self, episode: int, start: int = 0, stop: int | None = None) -> list[StepRecord]:
        """Steps ``start <= step < stop`` of ``episode`` in step order (a primary-key range: immediate)."""
        select = self._step_select()
        if stop is None:
            rows = self._rows(f"{select} WHERE episode = ? AND step >= ? ORDER BY step", (episode, start))
        else:
            rows = self._rows(
                f"{select} WHERE episode = ? AND step >= ? AND step < ? ORDER BY step",
                (episode, start, stop),
            )
        return [self._step(row) for row in rows]

    def transitions(self, episode: int) -> list[tuple[Any, ...]]:
        """What a dataset keeps of each step of ``episode``, in step order, without its render or info:
        ``(step, reward, terminated, truncated, action, observation, actor, proposed_action)`` (the
        JSON columns as stored; actor and proposal ``""`` for a step that does not say who acted)."""
        actors = "actor, proposed_action" if self._has_actors() else "'', ''"
        return self._rows(
            f"SELECT step, reward, terminated, truncated, action, observation, {actors} FROM steps"
            " WHERE episode = ? ORDER BY step",
            (episode,),
        )

    def step(self, episode: int, step: int) -> StepRecord:
        """One step.

        Raises:
            StorageError: naming the episode and step when it is not stored.
        """
        rows = self._rows(f"{self._step_select()} WHERE episode = ? AND step = ?", (episode, step))
        if not rows:
            raise StorageError(
                f"{TELEMETRY_DATABASE} {self._path}: step {step} of episode {episode} is not stored"
            )
        return self._step(rows[0])

    def step_infos(self, after: tuple[int, int] | None = None, limit: int = -1) -> list[tuple[int, int, str]]:
        """``(episode, step, info)`` of the steps after the key ``after`` (all when None), in key order.

        At most ``limit`` rows (-1: no limit). A range of the primary key: a view that follows a
        run reads only what is new since its last read, however long the run.
        """
        if after is None:
            rows = self._rows(
                "SELECT episode, step, info FROM steps ORDER BY episode, step LIMIT ?", (limit,)
            )
        else:
            rows = self._rows(
                "SELECT episode, step, info FROM steps WHERE (episode, step) > (?, ?) "
                "ORDER BY episode, step LIMIT ?",
                (after[0], after[1], limit),
            )
        return [(episode, step, info) for episode, step, info in rows]

    def step_count(self, episode: int | None = None) -> int:
        """Number of stored steps, of one episode or of the whole run."""
        if episode is None:
            return int(self._scalar("SELECT COUNT(*) FROM steps"))
        return int(self._scalar("SELECT COUNT(*) FROM steps WHERE episode = ?", (episode,)))

    def steps_per_episode(self) -> dict[int, int]:
        """Stored steps of each episode that has any, by episode number."""
        return dict(self._rows("SELECT episode, COUNT(*) FROM steps GROUP BY episode ORDER BY episode"))

    def actor_spans(self, episode: int, start: int = 0) -> list[tuple[int, int, str]]:
        """Who acted in ``episode`` from step ``start`` on: ``(first, stop, actor)`` for each run of
        consecutive steps ``first <= step < stop`` with the same ``actor``, in step order. Steps that
        do not say who acted are in no span (a run whose steps never say has none).

        Read from the index of the steps that say, not from the steps' rows.
        """
        if not self._has_actors():
            return []
        rows = self._rows(_ACTOR_SPANS, (episode, start))
        return [(int(first), int(stop), str(actor)) for first, stop, actor in rows]

    def interventions(self) -> list[EpisodeInterventions]:
        """For each episode with steps that say who acted, in episode order: those steps, the ones
        a person acted, and how many times a person took over from the operator.

        One aggregate over the index of the steps that say (empty for a run whose steps never do).
        """
        if not self._has_actors():
            return []
        return [
            EpisodeInterventions(episode, steps, human, taken)
            for episode, steps, human, taken in self._rows(_INTERVENTIONS)
        ]

    def intervention_rate(self) -> float | None:
        """The share of the run's steps that say who acted that a person acted, in [0, 1]; None when
        no step says."""
        if not self._has_actors():
            return None
        steps, human = self._rows("SELECT COUNT(*), SUM(actor = 'human') FROM steps WHERE actor != ''")[0]
        return human / steps if steps else None

    def last_step_key(self) -> tuple[int, int] | None:
        """The largest stored ``(episode, step)``, or None when no step is stored."""
        rows = self._rows("SELECT episode, step FROM steps ORDER BY episode DESC, step DESC LIMIT 1")
        return (rows[0][0], rows[0][1]) if rows else None

    def last_step_of(self, episode: int) -> int | None:
        """The largest stored step of ``episode``, or None when it has none.

        MAX over the ``(episode, step)`` primary key: one index descent, whatever the episode's length.
        """
        value = self._scalar("SELECT MAX(step) FROM steps WHERE episode = ?", (episode,))
        return None if value is None else int(value)

    def return_through(self, episode: int, step: int) -> float:
        """The sum of the rewards of ``episode``'s stored steps up to and including ``step`` (its return
        so far; 0 when none is stored). A range of the primary key."""
        value = self._scalar("SELECT SUM(reward) FROM steps WHERE episode = ? AND step <= ?", (episode, step))
        return 0.0 if value is None else float(value)

    def latest_render(self, episode: int, step: int) -> tuple[int, bytes] | None:
        """The newest render payload stored at or before ``step`` of ``episode``, with its step; None when none is.

        Pixel runs store frames only at their render rate: this is the frame to show for a step
        without one. One backwards walk of the primary key from ``step``.
        """
        rows = self._rows(
            "SELECT step, render FROM steps WHERE episode = ? AND step <= ? AND render IS NOT NULL "
            "ORDER BY step DESC LIMIT 1",
            (episode, step),
        )
        if not rows or not isinstance(rows[0][1], bytes):
            return None
        return int(rows[0][0]), rows[0][1]

    def last_episode(self) -> int | None:
        """The largest stored episode number, or None when no episode is stored."""
        rows = self._rows("SELECT MAX(episode) FROM episodes")
        return rows[0][0] if rows else None

    def has_episode(self, episode: int) -> bool:
        """Whether the summary of ``episode`` is stored."""
        return bool(self._rows("SELECT 1 FROM episodes WHERE episode = ?", (episode,)))

    def has_metric(self, tag: str, step: int, value: float) -> bool:
        """Whether a point of ``tag`` at ``step`` with ``value`` is stored (the (tag, step) index)."""
        return bool(
            self._rows("SELECT 1 FROM metrics WHERE tag = ? AND step = ? AND value = ?", (tag, step, value))
        )

    def metric_high_water(self) -> dict[str, int]:
        """The largest stored step of each metric tag."""
        return dict(self._rows("SELECT tag, MAX(step) FROM metrics GROUP BY tag"))

    def latest_metrics(self) -> list[MetricPoint]:
        """The last stored point of each metric tag (the highest step, the last stored of that step), by tag."""
        rows = self._rows(
            "SELECT tag, step, wall_time, value FROM metrics WHERE rowid IN "
            "(SELECT rowid FROM (SELECT rowid, ROW_NUMBER() OVER (PARTITION BY tag ORDER BY step DESC, rowid DESC)"
            " AS n FROM metrics) WHERE n = 1) ORDER BY tag"
        )
        return [MetricPoint(tag, step, wall_time, value) for tag, step, wall_time, value in rows]

    def metric_tags(self) -> list[str]:
        """The distinct metric tags, sorted."""
        return [tag for (tag,) in self._rows("SELECT DISTINCT tag FROM metrics ORDER BY tag")]

    def metrics(self, tag: str, since_step: int | None = None, limit: int | None = None) -> list[MetricPoint]:
        """The series of ``tag`` in step order; with ``since_step``, only points at steps after it."""
        lower = "" if since_step is None else "AND step > ?"
        params: list[object] = [tag] if since_step is None else [tag, since_step]
        params.append(-1 if limit is None else limit)
        rows = self._rows(
            f"SELECT tag, step, wall_time, value FROM metrics WHERE tag = ? {lower} ORDER BY step, rowid LIMIT ?",
            params,
        )
        return [MetricPoint(tag, step, wall_time, value) for tag, step, wall_time, value in rows]

    def metric_rows(self, tag: str, since_step: int | None = None) -> list[tuple[int, float, float]]:
        """The series of ``tag`` as ``(step, wall_time, value)`` rows in step order (after ``since_step``
        when given): what :meth:`metrics` gives, without a record a point, for a chart's hundreds of
        thousands of them."""
        lower = "" if since_step is None else "AND step > ?"
        params: list[object] = [tag] if since_step is None else [tag, since_step]
        return self._rows(
            f"SELECT step, wall_time, value FROM metrics WHERE tag = ? {lower} ORDER BY step, rowid", params
        )

    def final_return(self, metric: str = "", last: int = FINAL_RETURN_EPISODES) -> tuple[float, int] | None:
        """The mean of the run's last ``last`` episodic returns (:meth:`episodic_returns`) and how many
        there were; None with none."""
        returns = self.episodic_returns(metric, last)
        return (sum(returns) / len(returns), len(returns)) if returns else None

    def metric_count(self, tag: str | None = None) -> int:
        """Number of stored metric points, of one tag or of all."""
        if tag is None:
            return int(self._scalar("SELECT COUNT(*) FROM metrics"))
        return int(self._scalar("SELECT COUNT(*) FROM metrics WHERE tag = ?", (tag,)))

    def events(self, since_id: int = 0) -> list[EventRecord]:
        """Events with id greater than ``since_id``, oldest first.

        Event ids are 1, 2, 3, … with no gaps (events are never deleted and a rolled-back
        batch gives its ids back), so ``since_id`` is the number of events already seen.
        """
        rows = self._rows(
            "SELECT time, kind, level, message, data FROM events WHERE id > ? ORDER BY id", (since_id,)
        )
        return [EventRecord(*row) for row in rows]

    def artifacts(self) -> list[ArtifactRecord]:
        """Registered artifacts in the order they were registered."""
        rows = self._rows("SELECT kind, path, step, meta FROM artifacts ORDER BY id")
        return [ArtifactRecord(*row) for row in rows]

    def meta(self, key: str) -> str | None:
        """The value stored under ``key`` (e.g. ``render_kind``), or ``None``."""
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return None if not rows else str(rows[0][0])

    def close(self) -> None:
        """Close the calling thread's connection (another call reopens one)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()
