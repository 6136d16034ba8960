"""Operators: whatever chooses an environment's actions, and the pipe protocol a kind serves one on.

An operator is a person, the random baseline, a finished run's model or a language model. gym_gui
steps the environment; the operator answers, for each observation, the action it takes. A kind's
models are loaded and queried in a process of the kind's own (its bundle's interpreter), so neither
the window nor the CLI ever runs a model on its own thread: :func:`serve` is that process's loop,
:class:`OperatorProcess` the side of gym_gui that starts it and asks.

One process plays several episodes at once, each in a *slot*: an evaluation batch asks for the
actions of all its open episodes in one request, so a network answers a batch in one forward pass
and a language model's calls wait together. Each slot is seeded at its ``begin``; an operator that
draws random numbers draws them from its slot's own generator, so an episode's actions do not
depend on which other episodes share the process.

Wire: each message is a 4-byte big-endian length and that many bytes of JSON (orjson); the server
writes only replies on its standard output (what a library prints goes to standard error).

===========  ===========================================  =================================
request      fields                                        reply
===========  ===========================================  =================================
(on start)                                                 ``{"card": card}`` or ``{"error"}``
``begin``    ``slot``, ``seed`` (int or null)              ``{}``
``act``      ``turns``: ``[{"slot", "observation",         ``{"decisions": [{"action",
             "grid"?, "frame"? (PNG, base64),               "note"}]}`` in the turns' order
             "taken"?, "reward"?}]``
``end``      ``slot``                                      ``{}``
``close``                                                  (the process exits)
===========  ===========================================  =================================

``taken`` is the action the environment was last stepped with in that slot (it differs from the
operator's proposal when a person overrode it) and ``reward`` what it earned. A refusal or failure
is ``{"error": "one line"}``. A ``note`` is a JSON object the operator attaches to its decision (a
language model's call, whether it fell back); gym_gui stores it with the step.
"""

from __future__ import annotations

import base64
import contextlib
import os
import selectors
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from gym_gui_sdk import encoding

# What a request or reply may weigh (a 4-frame stack of Atari frames as JSON fits many times over).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# The inputs an operator may ask for besides the observation: the grid description of a grid game
# (gym_gui_sdk.render.grid_description), the rendered frame as PNG, and a board game's text for a
# language model (the board from the seat's side and its legal moves; gym_gui's env family draws it).
OBSERVATION = "observation"
GRID = "grid"
FRAME = "frame"
TEXT = "text"
INPUTS = (OBSERVATION, GRID, FRAME, TEXT)
# Spaces an operator may declare; ANY fits every environment (a person, the random baseline).
ANY = "any"
SPACE_KINDS = ("Discrete", "Box", "MultiDiscrete", "MultiBinary", ANY)


class OperatorError(RuntimeError):
    """An operator refused, failed or broke the protocol; the message says which and why."""


class OperatorRefused(OperatorError):
    """An operator cannot act here: its model cannot be loaded, or it cannot act on this environment."""


class OperatorDied(OperatorError):
    """An operator's process ended or stopped answering."""


# ------------------------------------------------------------------ what an operator acts on


@dataclass(frozen=True)
class SpaceSpec:
    """A space as an operator declares it: its kind, ``n`` (Discrete) and shape (the rest).

    ``str()`` is gymnasium's short spelling: ``Discrete(16)``, ``Box(4,)``, ``Box(84, 84, 4)``.
    """

    kind: str
    n: int | None = None
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in SPACE_KINDS:
            raise ValueError(f"space kind {self.kind!r} is not one of {', '.join(SPACE_KINDS)}")
        if self.kind == "Discrete" and (self.n is None or self.n < 1):
            raise ValueError(f"a Discrete space needs n of at least 1, got {self.n!r}")

    @classmethod
    def of(cls, space: Any) -> SpaceSpec:
        """The spec of a gymnasium (or old gym) space, read by duck typing; ``any`` for kinds not listed."""
        kind = type(space).__name__
        if kind == "Discrete":
            return cls("Discrete", n=int(space.n))
        if kind in ("Box", "MultiDiscrete", "MultiBinary"):
            return cls(kind, shape=tuple(int(d) for d in space.shape))
        return cls(ANY)

    def fits(self, other: SpaceSpec) -> bool:
        """Whether an operator declaring this space can take (observations) or give (actions) ``other``'s."""
        if ANY in (self.kind, other.kind):
            return True
        return self.kind == other.kind and self.n == other.n and self.shape == other.shape

    def __str__(self) -> str:
        if self.kind == ANY:
            return "any space"
        if self.kind == "Discrete":
            return f"Discrete({self.n})"
        inside = ", ".join(str(d) for d in self.shape)
        return f"{self.kind}({inside},)" if len(self.shape) == 1 else f"{self.kind}({inside})"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, data: Any) -> SpaceSpec:
        if not isinstance(data, Mapping):
            raise ValueError(f"a space must be an object, got {type(data).__name__}")
        n = data.get("n")
        shape = data.get("shape") or []
        if n is not None and (not isinstance(n, int) or isinstance(n, bool)):
            raise ValueError(f"a space's n must be an integer, got {n!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"a space's shape must be a list of sizes, got {shape!r}")
        return cls(str(data.get("kind")), n=n, shape=tuple(shape))


ANY_SPACE = SpaceSpec(ANY)


@dataclass(frozen=True)
class OperatorCard:
    """What an operator is and what it can act on.

    Attributes:
        name: how people call it (``ppo``, ``q-table``, ``gpt-4o-mini``, ``random``, ``you``).
        kind: the worker kind whose model it is (``human``, ``random`` for the two without one).
        source_run: the run it comes from ("" for none).
        observation: the observations it takes.
        action: the actions it gives.
        env_ids: the environments it learned on (empty: it was never trained on one).
        inputs: what each request carries for it (:data:`INPUTS`).
        deterministic: the same observations give the same actions (a batch re-run gives the
            same numbers).
        env_bound: it acts only on the envs it names (a language model's prompt describes one env),
            whatever their spaces.
    """

    name: str
    kind: str
    source_run: str = ""
    observation: SpaceSpec = ANY_SPACE
    action: SpaceSpec = ANY_SPACE
    env_ids: tuple[str, ...] = ()
    inputs: tuple[str, ...] = (OBSERVATION,)
    deterministic: bool = True
    env_bound: bool = False

    def __post_init__(self) -> None:
        unknown = [name for name in self.inputs if name not in INPUTS]
        if unknown:
            raise ValueError(f"operator {self.name!r}: inputs {unknown} are not among {', '.join(INPUTS)}")

    @property
    def title(self) -> str:
        """How the operator is named in tables: its name and the env it learned on."""
        return f"{self.name} on {self.env_ids[0]}" if self.env_ids else self.name

    def problem(self, env_id: str, observation: SpaceSpec, action: SpaceSpec) -> str | None:
        """Why this operator cannot act on ``env_id`` with these spaces, or None when it can.

        The message says what the operator expects and what the env gives, e.g. "ppo on CartPole-v1
        expects Box(4,) observations; FrozenLake-v1 gives Discrete(16)".
        """
        if self.env_bound and env_id not in self.env_ids:
            return f"{self.name} is set up for {', '.join(self.env_ids)} only; {env_id} is another"
        if not self.observation.fits(observation):
            return f"{self.title} expects {self.observation} observations; {env_id} gives {observation}"
        if not self.action.fits(action):
            return f"{self.title} gives {self.action} actions; {env_id} takes {action}"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "source_run": self.source_run,
            "observation": self.observation.to_json(),
            "action": self.action.to_json(),
            "env_ids": list(self.env_ids),
            "inputs": list(self.inputs),
            "deterministic": self.deterministic,
            "env_bound": self.env_bound,
        }

    @classmethod
    def from_json(cls, data: Any) -> OperatorCard:
        """Read a card, checking every field.

        Raises:
            ValueError: naming the field that is wrong.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"an operator card must be an object, got {type(data).__name__}")
        try:
            return cls(
                name=_text(data, "name"),
                kind=_text(data, "kind"),
                source_run=str(data.get("source_run") or ""),
                observation=SpaceSpec.from_json(data.get("observation", ANY_SPACE.to_json())),
                action=SpaceSpec.from_json(data.get("action", ANY_SPACE.to_json())),
                env_ids=tuple(_texts(data, "env_ids")),
                inputs=tuple(_texts(data, "inputs")) or (OBSERVATION,),
                deterministic=bool(data.get("deterministic", True)),
                env_bound=bool(data.get("env_bound", False)),
            )
        except ValueError as exc:
            raise ValueError(f"operator card: {exc}") from None


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"field {key!r} must be a non-empty string, got {value!r}")
    return value


def _texts(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"field {key!r} must be a list of strings, got {value!r}")
    return value


# ------------------------------------------------------------------ what passes each step


@dataclass
class Turn:
    """One slot's question: its observation (and what else the operator's card asks for).

    ``taken`` and ``reward`` are the slot's previous step: the action the env was stepped with and
    what it earned (None at an episode's first turn).
    """

    slot: int
    observation: Any
    grid: dict[str, Any] | None = None
    frame: bytes | None = None
    taken: Any = None
    reward: float | None = None
    text: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"slot": self.slot, "observation": encoding.to_jsonable(self.observation)}
        if self.grid is not None:
            data["grid"] = self.grid
        if self.frame is not None:
            data["frame"] = base64.b64encode(self.frame).decode("ascii")
        if self.text is not None:
            data["text"] = self.text
        if self.taken is not None:
            data["taken"] = encoding.to_jsonable(self.taken)
            data["reward"] = self.reward
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Turn:
        frame = data.get("frame")
        return cls(
            slot=int(data["slot"]),
            observation=data.get("observation"),
            grid=data.get("grid"),
            frame=base64.b64decode(frame) if isinstance(frame, str) else None,
            taken=data.get("taken"),
            reward=data.get("reward"),
            text=data.get("text") if isinstance(data.get("text"), str) else None,
        )


@dataclass
class Decision:
    """An operator's answer to one turn: the action (JSON-able) and its note (a JSON object)."""

    action: Any
    note: dict[str, Any] = field(default_factory=dict)


class Operator(Protocol):
    """Anything that chooses actions: served in a kind's process (:func:`serve`) or in gym_gui's own
    (the random baseline). Every method may block; gym_gui calls them off its window's thread."""

    @property
    def card(self) -> OperatorCard:
        """What it is and what it acts on."""

    def begin(self, slot: int, seed: int | None) -> None:
        """An episode starts in ``slot``, seeded with ``seed``: its random draws start from it."""

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        """One decision per turn, in order.

        Raises:
            OperatorError: it failed (the message says why), or its process is gone.
        """

    def end(self, slot: int) -> None:
        """The episode in ``slot`` is over."""

    def close(self) -> None:
        """Release the model (and its process); safe to call twice."""


# ------------------------------------------------------------------ the operator's side of the pipe


def _write(out: IO[bytes], message: Mapping[str, Any]) -> None:
    data = orjson.dumps(message, default=encoding.to_jsonable)
    out.write(struct.pack(">I", len(data)) + data)
    out.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read(stream: IO[bytes]) -> dict[str, Any] | None:
    header = _read_exactly(stream, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > MAX_MESSAGE_BYTES:
        raise OperatorError(f"a message of {size} bytes is over the {MAX_MESSAGE_BYTES} allowed")
    body = _read_exactly(stream, size)
    if body is None:
        return None
    message = orjson.loads(body)
    if not isinstance(message, dict):
        raise OperatorError(f"a message must be a JSON object, got {type(message).__name__}")
    return message


def serve(make_operator: Callable[[], Operator]) -> int:
    """Run an operator process: build the operator, send its card, answer requests until ``close``
    or the end of standard input. Returns the process's exit code.

    ``make_operator`` raising :class:`OperatorRefused` (a model that cannot be loaded) is reported
    as the first message and ends the process with code 2.
    """
    # Replies own the real standard output; anything a library prints lands on standard error.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    inp = sys.stdin.buffer
    try:
        operator = make_operator()
    except OperatorRefused as exc:
        _write(out, {"error": str(exc)})
        return 2
    try:
        _write(out, {"card": operator.card.to_json()})
        while (request := _read(inp)) is not None:
            op = request.get("op")
            if op == "close":
                break
            try:
                if op == "begin":
                    seed = request.get("seed")
                    operator.begin(int(request["slot"]), None if seed is None else int(seed))
                    _write(out, {})
                elif op == "act":
                    turns = [Turn.from_json(turn) for turn in request["turns"]]
                    decisions = operator.act(turns)
                    _write(out, {"decisions": [{"action": d.action, "note": d.note} for d in decisions]})
                elif op == "end":
                    operator.end(int(request["slot"]))
                    _write(out, {})
                else:
                    _write(out, {"error": f"unknown request {op!r}"})
            except OperatorError as exc:
                _write(out, {"error": str(exc)})
            except (KeyError, TypeError, ValueError) as exc:
                _write(out, {"error": f"malformed {op} request: {type(exc).__name__}: {exc}"})
    finally:
        operator.close()
    return 0


# ------------------------------------------------------------------ gym_gui's side of the pipe


class OperatorProcess:
    """An operator served by a process of its kind: started from an argument list, asked over pipes.

    Construction starts the process and waits for its card (loading a model may take a while:
    ``load_timeout``); every later answer must come within ``timeout`` seconds, else the process
    counts as dead. Its standard error goes to ``log_path``; when it dies the last lines say why.

    Raises (construction):
        OperatorRefused: it could not load its model (its own words).
        OperatorDied: it ended, or said nothing within ``load_timeout``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        *,
        name: str = "operator",
        load_timeout: float = 300.0,
        timeout: float = 120.0,
    ) -> None:
        self.name = name
        self.timeout = timeout
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # noqa: SIM115 (held for the process's life)
        self._closed = False
        self._process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=dict(env),
            # A session of its own: a signal to gym_gui's process group does not reach it, and it
            # is stopped as a group. (Never preexec_fn from a process with gRPC threads.)
            start_new_session=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin = self._process.stdin
        self._stdout = self._process.stdout
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)
        try:
            first = self._receive(load_timeout, "loading its model")
            if "error" in first:
                raise OperatorRefused(f"{name}: {first['error']}")
            try:
                self._card = OperatorCard.from_json(first.get("card"))
            except ValueError as exc:
                raise OperatorError(f"{name} sent a bad card: {exc}") from None
        except BaseException:
            self.close()
            raise

    @property
    def card(self) -> OperatorCard:
        return self._card

    @property
    def pid(self) -> int:
        return self._process.pid

    def begin(self, slot: int, seed: int | None) -> None:
        self._ask({"op": "begin", "slot": slot, "seed": seed})

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        reply = self._ask({"op": "act", "turns": [turn.to_json() for turn in turns]})
        decisions = reply.get("decisions")
        if not isinstance(decisions, list) or len(decisions) != len(turns):
            raise OperatorError(f"{self.name} answered {len(turns)} turns with {decisions!r}")
        out = []
        for decision in decisions:
            note = decision.get("note") if isinstance(decision, dict) else None
            if not isinstance(decision, dict) or "action" not in decision or not isinstance(note, dict):
                raise OperatorError(f"{self.name} sent a malformed decision {decision!r}")
            out.append(Decision(decision["action"], note))
        return out

    def end(self, slot: int) -> None:
        self._ask({"op": "end", "slot": slot})

    def close(self) -> None:
        """Ask the process to exit; stop its process group if it has not within five seconds."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError):
            _write(self._stdin, {"op": "close"})
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, 9)
            self._process.wait()
        self._selector.close()
        self._stdout.close()
        self._log.close()

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise OperatorDied(f"{self.name} is closed")
        try:
            _write(self._stdin, request)
        except (BrokenPipeError, OSError):
            raise self._died("while being asked") from None
        reply = self._receive(self.timeout, "answering")
        if "error" in reply:
            raise OperatorError(f"{self.name}: {reply['error']}")
        return reply

    def _receive(self, timeout: float, doing: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        header = self._read_within(4, deadline, doing)
        (size,) = struct.unpack(">I", header)
        if size > MAX_MESSAGE_BYTES:
            raise OperatorError(f"{self.name} sent {size} bytes, over the {MAX_MESSAGE_BYTES} allowed")
        try:
            message = orjson.loads(self._read_within(size, deadline, doing))
        except orjson.JSONDecodeError as exc:
            raise OperatorError(f"{self.name} sent a reply that is not JSON: {exc}") from None
        if not isinstance(message, dict):
            raise OperatorError(f"{self.name} sent a reply that is not an object: {message!r}")
        return message

    def _read_within(self, size: int, deadline: float, doing: str) -> bytes:
        chunks: list[bytes] = []
        fd = self._stdout.fileno()
        while size:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                self._kill()
                raise OperatorDied(f"{self.name} did not answer within {self.timeout:g} s while {doing}")
            chunk = os.read(fd, size)
            if not chunk:
                raise self._died(f"while {doing}")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, 9)

    def _died(self, when: str) -> OperatorDied:
        try:
            code = self._process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self._kill()
            code = self._process.wait()
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        last = _last_line(self.log_path)
        return OperatorDied(f"{self.name} {how} {when}" + (f": {last}" if last else ""))


def _last_line(path: Path) -> str:
    """The last non-empty line of a log (its end only: a log may be long)."""
    try:
        with open(path, "rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - 4096))
            lines = [line.strip() for line in file.read().decode("utf-8", "replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    return lines[-1][:300] if lines else ""
