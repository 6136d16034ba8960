"""The records waiting for a worker's next batch: its steps (numeric observations packed as bytes, who
acted and which agent where the worker says), episodes and metrics, and the Publish message they become."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from gym_gui_sdk import encoding
from gym_gui_sdk import trainer_pb2 as pb

# A step batch is sent early once its render payloads and observations reach this size.
BATCH_BYTES = 2 * 1024 * 1024
# Who chose a step's action, each at its code on the wire (StepBatch.actor): "" (0) the step does not
# say, "operator" (1) a model, an LLM or a baseline choosing, "human" (2) a person who took over.
ACTORS = ("", "operator", "human")
_ACTOR_CODES = {actor: code for code, actor in enumerate(ACTORS)}


def actor_code(actor: str, proposed_action: str) -> int:
    """The wire code of ``actor``, checked with the operator's ``proposed_action`` it comes with.

    Raises:
        ValueError: ``actor`` is not one of :data:`ACTORS`, or a proposed action comes without an actor.
        TypeError: ``proposed_action`` is not text.
    """
    code = _ACTOR_CODES.get(actor) if type(actor) is str else None
    if code is None:
        raise ValueError(f"actor {actor!r} is not one of {', '.join(map(repr, ACTORS))}")
    if type(proposed_action) is not str:
        raise TypeError(f"proposed_action must be JSON text, got {type(proposed_action).__name__}")
    if proposed_action and not code:
        raise ValueError(f"proposed_action {proposed_action!r} given without an actor: say who acted")
    return code


# What a batch packs: arrays of one dtype and shape, or dicts of such arrays (their fields).
Pack = tuple[np.dtype[Any], tuple[int, ...]] | tuple[encoding.Field, ...]


class StepBatch:
    """One batch being filled, and how the batches after it pack their observations.

    A numeric array observation travels as its bytes, packed with the batch's others of the same
    dtype and shape; so does a dict of numeric arrays (a Dict space's), with the batch's others of
    the same keys, dtypes and shapes; anything else as JSON text. What is packed is kept from batch
    to batch, so a worker's array steps take :meth:`WorkerSession.step`'s quick path. Not
    thread-safe: the session holds its lock around every use.
    """

    def __init__(self, batch_steps: int) -> None:
        self.batch_steps = batch_steps
        # What a batch packs (see observation): an array's dtype and shape, or a dict's fields; for
        # arrays, the dtype and shape apart, for the session's quick path; and the bytes of one.
        self.pack: Pack | None = None
        self.fields: tuple[encoding.Field, ...] | None = None
        self.dtype: np.dtype[Any] | None = None
        self.shape: tuple[int, ...] | None = None
        self.nbytes = 0
        self.limit = batch_steps  # steps a batch takes: batch_steps, or fewer when arrays are large
        self.clear()

    def clear(self) -> None:
        """Start an empty batch."""
        # Steps as (episode, step, reward, terminated, truncated, action, observation, info, render,
        # wall_time); an observation is JSON text, or the bytes of an array packed under ``pack``.
        self.rows: list[tuple[Any, ...]] = []
        # Who acted, by row, for the rows that say: (actor code, proposed action). Most runs never
        # fill it, and their batches carry no actor columns.
        self.actors: dict[int, tuple[int, str]] = {}
        # The agent of each row that names one (a multi-agent env's seat); single-agent runs never
        # fill it, and their batches carry no agent column.
        self.agents: dict[int, str] = {}
        self.episodes: list[dict[str, Any]] = []  # an Episode message's fields each
        self.metrics: list[dict[str, Any]] = []  # a Metric message's fields each
        self.text = 0  # observations among the rows that are JSON text (the others are packed)
        self.bytes = 0  # of the render payloads and the text observations
        self.started = time.monotonic()

    def pending(self) -> bool:
        """Whether the batch holds anything to send."""
        return bool(self.rows or self.episodes or self.metrics)

    def set_batch_steps(self, steps: int) -> None:
        self.batch_steps = steps
        self._set_limit()

    def _set_limit(self) -> None:
        nbytes = self.nbytes
        self.limit = min(self.batch_steps, max(1, BATCH_BYTES // nbytes)) if nbytes else self.batch_steps

    def full(self) -> bool:
        """Whether the batch's payloads, packed arrays included, reached the batch's bound in bytes."""
        packed = (len(self.rows) - self.text) * self.nbytes
        return self.bytes + packed >= BATCH_BYTES

    def packs(self, spec: Pack) -> bool:
        """Whether observations of ``spec`` (an array's dtype and shape, or a dict's fields) travel
        packed in this batch: those it packs already, or the first of a batch that packs none yet
        (then kept for the batches after it)."""
        if spec == self.pack:
            return True
        if len(self.rows) > self.text:  # the batch packs observations of another spec
            return False
        self.pack = spec
        if isinstance(spec[0], np.dtype):
            self.dtype, self.shape = spec
            self.fields = None
            self.nbytes = spec[0].itemsize * math.prod(spec[1])
        else:
            self.fields = spec
            self.dtype = self.shape = None
            self.nbytes = sum(dtype.itemsize * math.prod(shape) for _key, dtype, shape in self.fields)
        self._set_limit()
        return True

    def _unpacked(self, data: bytes) -> str:
        """The JSON text of one packed observation (the daemon's, when a batch cannot pack all)."""
        if self.fields is not None:
            fields = [(key, dtype.str, shape) for key, dtype, shape in self.fields]
            return encoding.unpack_dicts(data, fields, 1)[0]
        assert self.dtype is not None and self.shape is not None
        return encoding.unpack_observations(data, self.dtype.str, self.shape, 1)[0]

    def set_actor(self, row: int, code: int, proposed_action: str) -> None:
        """Record who acted at row ``row``: ``code`` is :func:`actor_code`'s (checked by the caller)."""
        self.actors[row] = (code, proposed_action)
        self.bytes += len(proposed_action)

    def observation(self, observation: Any) -> str | bytes:
        """A step's observation as it waits in the batch: packed bytes, or JSON text.

        A numeric array travels packed when the batch packs its dtype and shape or none yet (see
        :meth:`packs`); an array of another dtype or shape, or anything else, is JSON text.
        """
        if type(observation) is not str:
            spec = encoding.pack_spec(observation)
            if spec is not None and self.packs(spec):
                return observation.tobytes()
            fields = encoding.pack_fields(observation)
            if fields is not None and self.packs(fields):
                return encoding.pack_dict(observation)
            observation = encoding.dumps(observation)
        self.text += 1
        self.bytes += len(observation)
        return observation

    def take(self) -> pb.WorkerMessage | None:
        """The batch as one message, the batch emptied; None when it holds nothing."""
        rows = self.rows
        if not (rows or self.episodes or self.metrics):
            return None
        # Built in place: a batch handed to WorkerMessage(steps=...) would be copied whole.
        message = pb.WorkerMessage()
        batch = message.steps
        if rows:
            episode, step, reward, terminated, truncated, action, observation, info, render, wall_time = zip(
                *rows, strict=True
            )
            batch.episode.extend(episode)
            batch.step.extend(step)
            batch.reward.extend(reward)
            batch.terminated.extend(terminated)
            batch.truncated.extend(truncated)
            batch.action.extend(action)
            batch.info.extend(info)
            batch.render.extend(render)
            batch.wall_time.extend(wall_time)
            if self.actors:
                codes, proposed = [0] * len(rows), [""] * len(rows)
                for row, (code, offered) in self.actors.items():
                    codes[row], proposed[row] = code, offered
                batch.actor.extend(codes)
                batch.proposed_action.extend(proposed)
            if self.agents:
                names = [""] * len(rows)
                for row, agent in self.agents.items():
                    names[row] = agent
                batch.agent.extend(names)
            text = self.text
            if text == len(rows):
                batch.observation.extend(observation)
            elif text == 0:
                batch.observation_array = b"".join(observation)
                if self.fields is not None:
                    for key, dtype, shape in self.fields:
                        batch.observation_fields.add(key=key, dtype=dtype.str, shape=shape)
                else:
                    assert self.dtype is not None and self.shape is not None
                    batch.observation_dtype = self.dtype.str
                    batch.observation_shape.extend(self.shape)
            else:  # packed observations beside JSON text: all of them as text
                batch.observation.extend(o if type(o) is str else self._unpacked(o) for o in observation)
        for record in self.episodes:
            batch.episodes.add(**record)
        for point in self.metrics:
            batch.metrics.add(**point)
        self.clear()
        return message
