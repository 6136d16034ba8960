"""The ingest of one worker's Publish stream: into storage, onto the RunBus, and into the run's state."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from typing import Any

import grpc
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.json_object import json_object

from gym_gui.bus.run_bus import STEPS, RunBus
from gym_gui.core.errors import DiskFull, GymGuiError
from gym_gui.core.records import ACTOR_COLUMNS, STEP_COLUMNS, ArtifactRecord, EventRecord
from gym_gui.daemon.supervisor import LiveRun, Supervisor
from gym_gui.protocol import convert
from gym_gui.protocol.convert import ProtocolViolation
from gym_gui.storage.telemetry import TelemetryReader

log = logging.getLogger(__name__)

Phase = pb.Lifecycle.Phase
# Episodes whose steps are followed at once, open and ended ones each (a worker playing more at
# once is not checked for all).
_FOLLOWED_EPISODES = 10_000
# Where a step row holds its agent, when it names one (after STEP_COLUMNS and ACTOR_COLUMNS).
_AGENT = len(STEP_COLUMNS) + len(ACTOR_COLUMNS)


class StreamIngest:
    """Reads one worker's Publish stream, on a thread of its own, until it ends or breaks the protocol.

    Every record goes into the run's storage (lossless: a full writer queue blocks the read, and
    gRPC flow control holds the worker back) and out on the RunBus to viewers (lossy). What the
    stream says about the run itself — that the worker lives, its lifecycle phases, its
    artifacts, a violation — goes to the ``Supervisor``, which changes the run. The ingest checks
    the protocol: messages in ``seq`` order, records only after STARTED, every step of an episode
    once and in order (none missing), no step of an agent after its last one, an episode's summary
    counting the steps sent (and giving a return for every agent that sent steps), well-formed JSON,
    artifact paths inside the run directory.
    """

    def __init__(self, supervisor: Supervisor, bus: RunBus, run: LiveRun, resumed: bool) -> None:
        self.supervisor = supervisor
        self.bus = bus
        self.run = run
        self.resumed = resumed
        self.last_seq = 0
        self.stored_seq = 0  # every message up to this one is in the writer's hands
        self.violation = ""
        self.ended_under_it = False  # the violation is that the run's end came while it still streamed
        self.done = threading.Event()
        # The run's storage, as it was when the stream opened: its end closes it (and takes it from
        # the run) at any moment, and what this stream still sends is then refused saying so.
        self.writer = run.writer
        self._store_steps = run.config.telemetry.store_steps
        self._store_render = run.config.telemetry.store_render
        # Episode -> the steps of it sent so far (the next step it must send), until its last step...
        self._open_episodes: dict[int, int] = {}
        # ...then until its summary, which must count them. (Both forget their oldest beyond a bound.)
        self._ended_episodes: dict[int, int] = {}
        # Episode -> its named agents (a multi-agent env's) that sent steps, each with whether its
        # last step (terminated or truncated) came: the episode goes on until its summary.
        self._episode_agents: dict[int, dict[str, bool]] = {}
        self._forgot_open = False  # more episodes were open at once than are followed
        self._stored: TelemetryReader | None = None  # what earlier streams stored (a resumed stream's)

    def _resend_filter(self) -> None:
        """On a reconnected stream, find where what the worker sends again stops being stored.

        The worker sends again, in order, every message the daemon had not confirmed; some of them
        were stored before the daemon went away. The writer commits what it is handed in order, so
        the stored ones are a prefix of those sent again: each record is looked up until the first
        one that is not stored, and everything from there on is new. Looking up each record, rather
        than comparing with the newest stored one, keeps the steps of episodes played at once (their
        steps interleave) that were sent before a newer episode's stored steps but not stored.
        """
        self._resend: TelemetryReader | None = None
        self._stored_last: dict[int, int | None] = {}  # episode -> its last step stored before this stream
        writer = self.writer
        if not self.resumed or writer is None:
            return
        writer.flush(timeout=60)
        self._resend = self._stored = TelemetryReader(writer.path)

    def _resent_over(self) -> None:
        """The first record not stored before was found: nothing more is filtered."""
        self._resend = None

    def _stored_last_step(self, episode: int) -> int | None:
        """The last step of ``episode`` stored before this (resumed) stream."""
        if episode not in self._stored_last and self._stored is not None:
            self._stored_last[episode] = self._stored.last_step_of(episode)
        return self._stored_last.get(episode)

    def _new_steps(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        reader = self._resend
        if reader is None or not self._store_steps:  # steps not stored tell nothing of the boundary
            return rows
        for index, row in enumerate(rows):
            episode, step = row[0], row[1]
            last = self._stored_last_step(episode)
            if last is None or step > last:
                self._resent_over()
                return rows[index:]
        return []

    def consume(self, messages: Iterator[pb.WorkerMessage]) -> None:
        run = self.run
        try:
            self._resend_filter()
            for message in messages:
                with self.supervisor.taking_in(run):
                    self._handle(message)
                self.stored_seq = message.seq
        except ProtocolViolation as exc:
            self.violation = self.violation or str(exc)
        except GymGuiError as exc:
            self.violation = self.violation or self._run_ended() or _storage_failure(exc)
        except grpc.RpcError:
            log.info("run %s: worker stream broke", run.run_id)
        except Exception as exc:  # a malformed message must fail the run, never the daemon
            log.exception("run %s: bad worker message", run.run_id)
            self.violation = (
                self.violation or f"could not process a worker message: {type(exc).__name__}: {exc}"
            )
        finally:
            self._resent_over()
            if self._stored is not None:
                self._stored.close()
                self._stored = None
            writer = self.writer
            if writer is not None and not self.ended_under_it:
                with contextlib.suppress(GymGuiError):
                    writer.flush(timeout=60)
                if writer.error is not None and not self.violation:
                    self.violation = _storage_failure(writer.error)
            if self.violation and not self.ended_under_it:
                self.supervisor.stream_failed(run, self.violation)
                log.warning("run %s: %s", run.run_id, self.violation)
            self.done.set()
            run.controls.put(None)  # the stream's handler answers the end now, not at its next look

    def storage_failed(self, error: GymGuiError) -> None:
        """Storage refused the stream's data, found while no message arrives: the stream fails with it."""
        self.violation = self.violation or _storage_failure(error)
        self.supervisor.stream_failed(self.run, self.violation)

    def _run_ended(self) -> str:
        """Why the stream stops when the run's end came while it still streamed (or "" when not)."""
        if self.run.end is None and self.writer is not None:
            return ""
        self.ended_under_it = True
        return self.run.ended_stream_message()

    def _handle(self, message: pb.WorkerMessage) -> None:
        run = self.run
        writer = self.writer
        if writer is None or run.end is not None:
            raise RunEnded(self._run_ended())
        if message.seq != self.last_seq + 1:
            raise ProtocolViolation(
                f"message out of order: expected seq {self.last_seq + 1}, got {message.seq}"
            )
        self.last_seq = message.seq
        if writer.error is not None:
            raise writer.error
        kind = message.WhichOneof("body")
        if kind is None:
            raise ProtocolViolation(f"message {message.seq} has no body")
        if kind == "heartbeat":
            return
        if kind != "lifecycle" and not run.started:
            raise ProtocolViolation(f"{kind} sent before the worker reported STARTED")
        if kind == "steps":
            batch = message.steps
            size = convert.step_batch_bytes(batch) if self._store_steps and batch.step else 0
            # Room for what the batch is about to take (its rows), before they are made: while there
            # is none (this run's storage, or every run's together, is behind) the stream waits.
            writer.reserve(size)
            try:
                rows = self._new_steps(convert.step_rows(batch, check_json=True))
                self._check_order(rows)
                if size and rows:
                    if not self._store_render:
                        rows = [(*row[:8], None, *row[9:]) for row in rows]
                    if batch.observation_dtype or batch.observation_fields:
                        # Packed observations became JSON text here: count that.
                        size += sum(len(row[6]) for row in rows)
                    writer.put_steps(rows, size)
            finally:
                writer.release()
            if batch.step:
                self.bus.publish(run.run_id, STEPS, batch)
            for episode in batch.episodes:
                self._episode(episode)
            if batch.metrics:
                self._metrics(batch.metrics)
        elif kind == "episode":
            self._episode(message.episode)
        elif kind == "metrics":
            self._metrics(message.metrics.metrics)
        elif kind == "lifecycle":
            self._lifecycle(message.lifecycle)
        elif kind == "artifact":
            self._artifact(message.artifact)
        elif kind == "log":
            line = message.log
            writer.put_event(
                EventRecord(
                    time=time.time(),
                    kind="log",
                    level="INFO",
                    message=line.line[:4000],
                    data=json.dumps({"stream": line.stream}),
                ),
            )
        elif kind == "event":
            event = message.event
            level = event.level.upper() if event.level.upper() in ("INFO", "WARNING", "ERROR") else "INFO"
            _json_object(event.data, "event data")
            writer.put_event(
                EventRecord(
                    time=time.time(),
                    kind="worker",
                    level=level,
                    message=event.message,
                    data=event.data or "{}",
                ),
            )
            self.bus.publish(run.run_id, "event", event)

    def _check_order(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Each step of an episode is sent once, in step order, none missing (episodes may interleave:
        a worker may play several at once). A repeat would fail storage without saying which step; a
        gap would leave a hole in the run no one is told of.

        A step of a named agent (a multi-agent env's: its steps and the other agents' share the
        episode's step numbers) ends only that agent's part at its terminated or truncated step; the
        other agents go on, and the episode ends with its summary. No step of an agent comes after
        its own last one.

        An episode is followed from its first step to its summary (see :meth:`_check_summary`);
        a step repeated after that is still refused, by storage ("storage rejected the worker's
        data: …").
        """
        open_episodes, ended_episodes = self._open_episodes, self._ended_episodes
        named = bool(rows) and len(rows[0]) > _AGENT  # a batch's rows are of one width
        for row in rows:
            episode, step = row[0], row[1]
            expected = open_episodes.get(episode)
            if expected is None:
                expected = self._first_step(episode, step)
            if step != expected:
                raise ProtocolViolation(_out_of_order(episode, step, expected))
            if named and row[_AGENT]:
                self._agent_step(episode, step, row[_AGENT], bool(row[3] or row[4]))
                open_episodes[episode] = step + 1
            elif row[3] or row[4]:  # terminated or truncated: its last step; its summary counts them
                open_episodes.pop(episode, None)
                ended_episodes[episode] = step + 1
            else:
                open_episodes[episode] = step + 1
        if len(open_episodes) > _FOLLOWED_EPISODES:
            # An episode forgotten may go on: from now on a step of one not followed is taken as it comes.
            self._forgot_open = True
            _forget_oldest(open_episodes)
        _forget_oldest(ended_episodes)  # only the check of its summary is lost
        _forget_oldest(self._episode_agents)

    def _agent_step(self, episode: int, step: int, agent: str, last: bool) -> None:
        """Follow ``agent``'s part of ``episode``: refuse its step after its own last one."""
        agents = self._episode_agents.setdefault(episode, {})
        if agents.get(agent):
            raise ProtocolViolation(
                f"step {step} of episode {episode} is agent {agent!r}'s, after its last step (terminated "
                "or truncated): a worker sends no step of an agent after that agent's end"
            )
        agents[agent] = last

    def _first_step(self, episode: int, step: int) -> int:
        """The step ``episode``, not seen on this stream before, must go on with.

        Step 0 on a stream of its own. On a resumed stream, the one after the last step earlier
        streams stored (the worker sends again only what was not confirmed); a run that stores no
        steps cannot say, so what comes is taken.
        """
        ended = self._ended_episodes.get(episode)
        if ended is not None:
            if step >= ended:
                raise ProtocolViolation(
                    f"step {step} of episode {episode} comes after its last step ({ended - 1}, "
                    "terminated or truncated): a worker sends no step of an episode after its end"
                )
            return ended  # sent again, or out of order: said so as for an open episode
        if step == 0 or not (self.resumed or self._forgot_open):
            return 0
        if self._forgot_open or not self._store_steps or self._stored is None:
            return step
        last = self._stored_last_step(episode)
        return 0 if last is None else last + 1

    def _check_summary(self, episode: pb.Episode) -> None:
        """An episode's summary counts the steps sent of it (when they were sent on this stream)."""
        number = episode.episode
        sent = self._ended_episodes.pop(number, None)
        if sent is None:
            sent = self._open_episodes.pop(number, None)
        if sent is not None and episode.steps != sent:
            raise ProtocolViolation(
                f"episode {number}'s summary says {episode.steps} steps, but {sent} were sent"
            )
        given = [r.agent for r in episode.agent_returns]
        if "" in given or len(set(given)) != len(given):
            raise ProtocolViolation(
                f"episode {number}'s summary must give each agent's return once, by a non-empty id: {given}"
            )
        missing = [agent for agent in self._episode_agents.pop(number, {}) if agent not in given]
        if missing:
            raise ProtocolViolation(
                f"episode {number}'s summary gives no return for agent {missing[0]!r}, whose steps were sent"
            )
        why = convert.json_problem(episode.info) if episode.info else ""
        if why:
            raise ProtocolViolation(f"episode {number}'s info is not valid JSON: {why}")

    def _episode(self, episode: pb.Episode) -> None:
        if self._resend is not None:
            if self._resend.has_episode(episode.episode):
                return
            self._resent_over()
        self._check_summary(episode)
        assert self.writer is not None
        self.writer.put_episode(convert.episode_record(episode))
        self.bus.publish(self.run.run_id, "episode", episode)

    def _metrics(self, metrics: Sequence[pb.Metric]) -> None:
        points = convert.metric_points(metrics)
        reader = self._resend
        if reader is not None:
            for index, point in enumerate(points):
                if not reader.has_metric(point.tag, point.step, point.value):
                    self._resent_over()
                    points = points[index:]
                    break
            else:
                points = []
        if points:
            assert self.writer is not None
            self.writer.put_metrics(points)
        self.bus.publish(self.run.run_id, "metrics", pb.MetricBatch(metrics=metrics))

    def _lifecycle(self, lifecycle: pb.Lifecycle) -> None:
        run = self.run
        phase = lifecycle.phase
        if phase == Phase.STARTED:
            if run.started and not self.resumed:
                raise ProtocolViolation("STARTED sent twice")
            _json_object(lifecycle.spaces or "{}", "spaces")
        elif phase not in (Phase.FAILED, Phase.CANCELLED):
            # Only a failure (or a stop) may come while the worker is still setting up, before STARTED.
            if not run.started:
                raise ProtocolViolation(f"lifecycle {Phase.Name(phase)} sent before STARTED")
            if phase not in (Phase.PAUSED, Phase.RESUMED, Phase.COMPLETED):
                raise ProtocolViolation(f"unknown lifecycle phase {phase}")
        self.supervisor.lifecycle(run, lifecycle)
        self.bus.publish(run.run_id, "lifecycle", lifecycle)

    def _artifact(self, artifact: pb.Artifact) -> None:
        run = self.run
        path = PurePosixPath(artifact.path)
        if not artifact.path or path.is_absolute() or ".." in path.parts:
            raise ProtocolViolation(f"artifact path {artifact.path!r} is not inside the run directory")
        meta = _json_object(artifact.meta or "{}", "artifact meta")
        assert self.writer is not None
        self.writer.put_artifact(
            ArtifactRecord(
                kind=artifact.kind, path=artifact.path, step=artifact.step, meta=artifact.meta or "{}"
            ),
        )
        self.supervisor.record_artifact(run, artifact.kind, artifact.path, artifact.step, meta)


def _forget_oldest(episodes: dict[int, Any]) -> None:
    """Forget the episodes followed longest, beyond the bound."""
    while len(episodes) > _FOLLOWED_EPISODES:
        del episodes[next(iter(episodes))]


def _out_of_order(episode: int, step: int, expected: int) -> str:
    """Why ``step`` of ``episode`` cannot come when step ``expected`` should."""
    rule = "a worker sends every step of an episode once, in order"
    if step < 0:
        return f"step {step} of episode {episode} is negative: steps count from 0"
    if step > expected:
        came = f"step {step} came after step {expected - 1}" if expected else f"step {step} came first"
        missing = (
            f"step {expected} of episode {episode} was never sent"
            if step == expected + 1
            else f"steps {expected}–{step - 1} of episode {episode} were never sent"
        )
        return f"{missing} ({came}): {rule}"
    how = (
        "was sent again" if step == expected - 1 else f"comes after step {expected - 1} of episode {episode}"
    )
    return f"step {step} of episode {episode} {how}: {rule}"


class RunEnded(GymGuiError):
    """The run's end came while its worker still streamed: nothing it sends is stored any more."""


def _storage_failure(error: GymGuiError) -> str:
    """The reason a run fails with when storage refused its data: a full disk says just that."""
    if isinstance(error, DiskFull):
        return str(error)
    return f"storage rejected the worker's data: {error}"


def _json_object(text: str, what: str) -> dict[str, Any]:
    return json_object(
        text,
        lambda why: ProtocolViolation(f"{what} is not valid JSON: {why}"),
        lambda _: ProtocolViolation(f"{what} must be a JSON object"),
    )
