"""The worker side of the telemetry path: register with the daemon, stream batched records, take control."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence, Sized
from typing import Any

import numpy as np

from gym_gui_sdk import ENV_DAEMON_ADDRESS, ENV_HOME, ENV_RUN_ID, ENV_RUN_TOKEN, encoding
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.channel import WorkerError
from gym_gui_sdk.session_link import Registration, SessionLink
from gym_gui_sdk.step_batch import ACTORS, StepBatch, actor_code

Phase = pb.Lifecycle.Phase

# Importers name these here, with the session.
__all__ = ["ACTORS", "Phase", "Registration", "WorkerError", "WorkerSession", "exit_now", "run_worker"]


class WorkerSession(SessionLink):
    """One run's connection to the daemon.

    Records are buffered and sent in batches on one bidirectional ``Publish`` stream; steps
    travel column-wise in batches of at most ``batch_steps`` or ``batch_seconds``. Sending
    blocks when the daemon is behind (gRPC flow control fills the bounded outbox), so nothing
    is ever dropped on the way to storage. Control messages from the daemon update
    :attr:`stop_requested`, :attr:`paused`, :attr:`held` and :attr:`render_fps`.

    The session is thread-safe: steps may be recorded from one thread while another records
    metrics. Call :meth:`start` first and :meth:`finish` last.

    With ``courier`` the stream is sent by a child process (see :mod:`gym_gui_sdk.courier`), so
    gRPC's threads never compete with the worker's loop for the GIL: what a worker process the
    daemon started (:meth:`from_env`) does. Without it, gRPC runs in this process: for a process
    that holds many sessions, or one that is not a worker.
    """

    def __init__(
        self,
        address: str,
        run_id: str,
        run_token: str,
        *,
        batch_steps: int = 2048,
        batch_seconds: float = 0.2,
        heartbeat_seconds: float = 1.0,
        outbox_size: int = 8,
        reconnect_seconds: float = 60.0,
        home: str | None = None,
        tls_ca: str | None = None,
        courier: bool = False,
    ) -> None:
        super().__init__(
            address,
            run_id,
            run_token,
            outbox_size=outbox_size,
            reconnect_seconds=reconnect_seconds,
            home=home,
            tls_ca=tls_ca,
            courier=courier,
        )
        self.batch_seconds = batch_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self._ticker: threading.Thread | None = None
        self._batch = StepBatch(batch_steps)

    @property
    def batch_steps(self) -> int:
        """The most steps one batch carries (fewer when its packed observations would pass 2 MiB)."""
        return self._batch.batch_steps

    @batch_steps.setter
    def batch_steps(self, steps: int) -> None:
        with self._lock:
            self._batch.set_batch_steps(steps)

    # ------------------------------------------------------------ setup

    @classmethod
    def from_env(cls, **kwargs: Any) -> WorkerSession:
        """Build a session from the variables the daemon puts in every worker's environment (its
        stream sent by a courier process unless ``courier=False`` is given)."""
        missing = [
            name for name in (ENV_DAEMON_ADDRESS, ENV_RUN_ID, ENV_RUN_TOKEN) if not os.environ.get(name)
        ]
        if missing:
            raise WorkerError(
                "not started by the gym_gui daemon: missing environment variable(s) " + ", ".join(missing)
            )
        kwargs.setdefault("home", os.environ.get(ENV_HOME))
        kwargs.setdefault("courier", True)
        return cls(
            os.environ[ENV_DAEMON_ADDRESS], os.environ[ENV_RUN_ID], os.environ[ENV_RUN_TOKEN], **kwargs
        )

    def start(self) -> Registration:
        """Register with the daemon and open the Publish stream.

        Raises:
            WorkerError: when the daemon is unreachable or refuses the run token.
        """
        registration = self._register()
        self._ticker = threading.Thread(target=self._tick, name="gym-gui-heartbeat", daemon=True)
        self._ticker.start()
        return registration

    # ------------------------------------------------------------ records

    def started(self, render_kind: str = "none", spaces: dict[str, Any] | None = None) -> None:
        """Tell the daemon the worker is running (the run becomes RUNNING)."""
        message = pb.WorkerMessage(
            lifecycle=pb.Lifecycle(
                phase=Phase.STARTED, render_kind=render_kind, spaces=json.dumps(spaces or {})
            )
        )
        with self._lock:
            self._started_message = message
            self._send_locked(message, keep=False)

    def step(
        self,
        episode: int,
        step: int,
        reward: float,
        terminated: bool,
        truncated: bool,
        action: str,
        observation: Any,
        info: str = "{}",
        render: bytes = b"",
        wall_time: float | None = None,
        *,
        actor: str = "",
        proposed_action: str = "",
        agent: str = "",
    ) -> None:
        """Record one step; ``action`` and ``info`` are JSON text (see :mod:`encoding`).

        ``observation`` is JSON text, or the observation itself: a numeric numpy array travels packed
        with the batch's others of its dtype and shape (its bytes are taken now, so the env may
        reuse its buffer; the daemon writes the JSON :func:`encoding.dumps` gives), anything else is
        encoded here by :func:`encoding.dumps`.

        ``actor`` says who chose the action where an operator plays and a person may take over: one
        of :data:`ACTORS` (``""``: the step does not say); ``proposed_action`` the action (JSON) the
        operator proposed where the person overrode it.

        ``agent`` names the agent the step is of in a multi-agent environment (a PettingZoo seat,
        ``"player_0"``); ``""``, the default, is a single-agent run's one implicit agent. ``step``
        counts the episode's steps of all its agents together: the next step of the episode, whichever
        agent's it is.

        Raises:
            ValueError: ``actor`` is not one of :data:`ACTORS`, or a proposed action comes without one.
            TypeError: ``agent`` is not text.
        """
        with self._lock:
            batch = self._batch
            # Checked before anything is taken: a refused step leaves the batch as it was.
            who = actor_code(actor, proposed_action) if actor or proposed_action else 0
            if type(agent) is not str:
                raise TypeError(f"agent must be text, got {type(agent).__name__}")
            # The common case first, in as few operations as a step can take: an env's array of the
            # dtype and shape the batch already packs. Its bytes count as the batch's row count does.
            if (
                type(observation) is np.ndarray
                and observation.dtype is batch.dtype
                and observation.shape == batch.shape
            ):
                observation = observation.tobytes()
            else:
                observation = batch.observation(observation)
            rows = batch.rows
            if who:
                batch.set_actor(len(rows), who, proposed_action)
            if agent:
                batch.agents[len(rows)] = agent
            rows.append(
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
                    time.time() if wall_time is None else wall_time,
                )
            )
            if render:
                batch.bytes += len(render)
            if len(rows) >= batch.limit or (batch.bytes and batch.full()):
                self._flush_steps_locked()

    def steps(
        self,
        episode: Sequence[int],
        step: Sequence[int],
        reward: Sequence[float],
        terminated: Sequence[bool],
        truncated: Sequence[bool],
        action: Sequence[str],
        observation: Sequence[Any],
        info: Sequence[str] | None = None,
        render: Sequence[bytes] | None = None,
        wall_time: Sequence[float] | None = None,
        *,
        actor: Sequence[str] | None = None,
        proposed_action: Sequence[str] | None = None,
        agent: Sequence[str] | None = None,
    ) -> None:
        """Record many steps at once, column-wise (a vector environment's step, or steps made elsewhere).

        Each column holds one value per step, as :meth:`step` takes them; ``observation`` may also
        be one numeric array whose rows are the steps' observations (a vector env's), packed as
        its bytes in one go. ``info`` defaults to
        ``"{}"``, ``render`` to no payload, ``wall_time`` to now, ``actor`` and ``proposed_action``
        to ``""`` for every step, and ``agent`` (a parallel env's step: each agent's) to the one
        implicit agent ``""``. The steps go into batches of at most ``batch_steps`` as :meth:`step`'s do.

        Raises:
            ValueError: when the columns differ in length, or an actor is not one of :data:`ACTORS`
                (then nothing is recorded).
            TypeError: an agent is not text (then nothing is recorded).
        """
        n = len(step)
        info = ["{}"] * n if info is None else info
        render = [b""] * n if render is None else render
        wall_time = [time.time()] * n if wall_time is None else wall_time
        columns: tuple[Sized, ...] = (
            episode,
            reward,
            terminated,
            truncated,
            action,
            observation,
            info,
            render,
            wall_time,
        )
        who: list[int] = []  # the steps' actor codes, when the call says who acted
        proposed: Sequence[str] = ()
        if actor is not None or proposed_action is not None:
            actor = [""] * n if actor is None else actor
            proposed = [""] * n if proposed_action is None else proposed_action
            columns += (actor, proposed)
        agents: Sequence[str] = () if agent is None else agent
        if agent is not None:
            columns += (agent,)
            wrong = [a for a in agent if type(a) is not str]
            if wrong:
                raise TypeError(f"agent must be text, got {type(wrong[0]).__name__}")
        if any(len(column) != n for column in columns):
            raise ValueError(f"step columns differ in length: {n} steps but {[len(c) for c in columns]}")
        if actor is not None:  # checked before any step is recorded: a refused call records nothing
            who = [actor_code(a, p) for a, p in zip(actor, proposed, strict=True)]
        # A vector env's observations as one numeric array (a row a step): its bytes, cut in rows.
        block = observation if type(observation) is np.ndarray and observation.ndim >= 1 else None
        spec = encoding.pack_spec(block[0]) if block is not None and n else None
        rows: Sequence[Any] = observation
        if spec is not None:
            assert block is not None
            data, size = np.ascontiguousarray(block).tobytes(), block[0].nbytes
            rows = [data[i * size : (i + 1) * size] for i in range(n)]
        start = 0
        with self._lock:
            batch = self._batch
            while start < n:
                end = min(n, start + max(1, batch.limit - len(batch.rows)))
                part = slice(start, end)
                if spec is not None and batch.packs(spec):
                    observations = rows[part]
                else:
                    observations = [batch.observation(o) for o in observation[part]]
                batch.rows.extend(
                    zip(
                        episode[part],
                        step[part],
                        reward[part],
                        terminated[part],
                        truncated[part],
                        action[part],
                        observations,
                        info[part],
                        render[part],
                        wall_time[part],
                        strict=True,
                    )
                )
                first = len(batch.rows) - (end - start)
                for index in range(start, end) if who else ():
                    if who[index]:
                        batch.set_actor(first + index - start, who[index], proposed[index])
                for index in range(start, end) if agents else ():
                    if agents[index]:
                        batch.agents[first + index - start] = agents[index]
                batch.bytes += sum(map(len, render[part]))
                if len(batch.rows) >= batch.limit or (batch.bytes and batch.full()):
                    self._flush_steps_locked()
                start = end

    def episode(
        self,
        episode: int,
        steps: int,
        total_reward: float,
        terminated: bool,
        truncated: bool,
        started_at: float,
        ended_at: float | None = None,
        seed: int | None = None,
        info: str = "{}",
        agent_returns: Sequence[tuple[str, float]] = (),
    ) -> None:
        """Record the end of an episode; it travels with (and is stored after) its steps.

        ``agent_returns``: each agent's return in a multi-agent episode, as ``(agent, return)`` in the
        env's agent order (an agent that never acted included, with what it was given); ``steps`` then
        counts every agent's steps and ``total_reward`` is, by convention, the returns' sum. Empty for a
        single agent's episode.

        Raises:
            ValueError: an agent is named twice, or is ``""``.
        """
        # Kept as the Episode message's fields (typed here, so a wrong value fails this call), made
        # a message when its batch is: one message built, not one built and then copied.
        record: dict[str, Any] = {
            "episode": int(episode),
            "seed": int(seed or 0),
            "has_seed": seed is not None,
            "steps": int(steps),
            "total_reward": float(total_reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "started_at": float(started_at),
            "ended_at": time.time() if ended_at is None else float(ended_at),
            "info": str(info),
        }
        if agent_returns:
            returns = [{"agent": str(agent), "total_reward": float(value)} for agent, value in agent_returns]
            names = [r["agent"] for r in returns]
            if "" in names or len(set(names)) != len(names):
                raise ValueError(f"agent_returns must name each agent once, by a non-empty id: {names}")
            record["agent_returns"] = returns
        with self._lock:
            self._batch.episodes.append(record)

    def metrics(self, points: list[tuple[str, int, float]], wall_time: float | None = None) -> None:
        """Record scalar metrics as ``(tag, step, value)``; they travel with the next batch."""
        now = time.time() if wall_time is None else float(wall_time)
        records = [
            {"tag": str(tag), "step": int(step), "value": float(value), "wall_time": now}
            for tag, step, value in points
        ]
        with self._lock:
            self._batch.metrics.extend(records)
            if len(self._batch.metrics) >= self.batch_steps:
                self._flush_steps_locked()

    def artifact(self, kind: str, path: str, step: int = 0, meta: dict[str, Any] | None = None) -> None:
        """Register a file of the run (``path`` relative to the run directory)."""
        self._send(
            pb.WorkerMessage(
                artifact=pb.Artifact(kind=kind, path=path, step=step, meta=json.dumps(meta or {}))
            )
        )

    def log(self, line: str, stream: str = "worker") -> None:
        self._send(pb.WorkerMessage(log=pb.LogLine(stream=stream, line=line)))

    def event(self, level: str, message: str, data: dict[str, Any] | None = None) -> None:
        """Record something a user should see (``level``: INFO, WARNING or ERROR)."""
        self._send(
            pb.WorkerMessage(event=pb.WorkerEvent(level=level, message=message, data=json.dumps(data or {})))
        )

    def lifecycle(self, phase: Phase, message: str = "") -> None:
        self._send(pb.WorkerMessage(lifecycle=pb.Lifecycle(phase=phase, message=message)))

    # ------------------------------------------------------------ control

    def wait_if_paused(self) -> None:
        """Block while the daemon has the run paused, reporting PAUSED and then RESUMED.

        A stop request ends the wait without RESUMED: a run cancelled while paused goes from
        PAUSED straight to its end. Heartbeats go on meanwhile, so a paused run is not silent.
        """
        if self._resume.is_set():
            return
        self.lifecycle(Phase.PAUSED)
        while not self._resume.wait(0.2):
            if self.stop_requested.is_set() or self._error is not None:
                return
        if not self.stop_requested.is_set():
            self.lifecycle(Phase.RESUMED)

    def finish(self, phase: Phase = Phase.COMPLETED, message: str = "", timeout: float = 60.0) -> None:
        """Send what is buffered and the final lifecycle, close the stream, and wait until the
        daemon has confirmed storing everything. The stream is closed even when this raises.

        Raises:
            WorkerError: when the daemon broke the stream for good or did not confirm in ``timeout``.
        """
        deadline = time.monotonic() + timeout
        try:
            with self._lock:
                self._flush_steps_locked()
                self._send_locked(pb.WorkerMessage(lifecycle=pb.Lifecycle(phase=phase, message=message)))
                self._closed.set()
            self._await_acknowledged(deadline, timeout)
        finally:
            self.close()  # a failed finish lets go of the daemon too

    # ------------------------------------------------------------ internals

    def _flush_steps_locked(self) -> None:
        message = self._batch.take()
        if message is not None:
            self._send_locked(message)

    def _tick(self) -> None:
        # Heartbeats, and the time bound of a step batch that fills slowly.
        next_beat = time.monotonic()
        while not self._closed.is_set() and self._error is None:
            now = time.monotonic()
            with self._lock:
                if self._closed.is_set():
                    return
                try:
                    batch = self._batch
                    if batch.pending() and now - batch.started >= self.batch_seconds:
                        self._flush_steps_locked()
                    if now >= next_beat:
                        self._send_locked(pb.WorkerMessage(heartbeat=pb.Heartbeat(wall_time=time.time())))
                        next_beat = now + self.heartbeat_seconds
                except WorkerError:
                    return
            self._closed.wait(min(self.batch_seconds, self.heartbeat_seconds) / 2)


def run_worker(
    name: str,
    body: Callable[[WorkerSession, Registration], str],
    known_errors: tuple[type[BaseException], ...] = (),
    known_exit_code: int = 1,
) -> int:
    """The life of a worker process: register with the daemon, take the run's telemetry batching,
    run ``body`` and report how it ended; returns the process's exit status.

    ``body`` returns ``"stopped"`` (the run ends CANCELLED) or anything else (COMPLETED). An
    exception of a ``known_errors`` type fails the run with its message, one line the user reads,
    and the process exits with ``known_exit_code``: the run's reason reads ``exit code 1: MESSAGE``
    by default, the message alone with 0. Any other exception fails the run with its type and is
    raised again (its traceback goes to the worker's log).
    """
    session = WorkerSession.from_env()
    session.install_signal_handlers()
    registration = session.start()
    telemetry = registration.config.get("telemetry") or {}
    session.batch_steps = int(telemetry.get("batch_steps", session.batch_steps))
    session.batch_seconds = float(telemetry.get("batch_seconds", session.batch_seconds))
    try:
        outcome = body(session, registration)
    except WorkerError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
    except known_errors as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        session.finish(Phase.FAILED, str(exc))
        return known_exit_code
    except Exception as exc:
        session.finish(Phase.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    if outcome == "stopped":
        session.finish(Phase.CANCELLED, "stopped on request")
    else:
        session.finish(Phase.COMPLETED, "budget reached")
    return 0


def exit_now(code: int) -> None:
    """End the worker process with ``code`` after :func:`run_worker`, skipping Python's teardown.

    The daemon ends a run when its process is gone; once ``run_worker`` returned, the session has
    finished (every message acknowledged) and nothing of the run is left to write, but unloading
    the worker's libraries still takes tens of milliseconds (the random worker) to a quarter of a
    second (SPADE, its server, SQLAlchemy). Only for workers whose own files are closed by then:
    atexit handlers do not run (a library that writes at exit, like a TensorBoard writer or W&B,
    needs the normal ``sys.exit``).
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
