"""What an environment family declares: its entries (render kind, human key maps, docs) and its install.

A family is a plugin (entry point group ``gym_gui.env_families``, read by :mod:`gym_gui.envs.catalog`),
as worker kinds are: gym_gui's own live in :mod:`gym_gui.envs.families`, each a small package with its
entries, key maps and Markdown docs beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import NamedTuple

# How MuJoCo (and PyOpenGL under it) draws without a display: EGL (Mesa's, in software without a
# GPU). The environment of every family built on MuJoCo, and of every CleanRL run (its videos).
HEADLESS_MUJOCO: Mapping[str, str] = MappingProxyType({"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"})


class RenderKind(StrEnum):
    """How an environment is drawn: natively from its state (grid) or as RGB frames (pixels)."""

    GRID = "grid"
    PIXELS = "pixels"


# An action a key sends: a discrete action index, or a vector for continuous (Box) action spaces.
Action = int | tuple[float, ...]


class KeyBinding(NamedTuple):
    """One key of a human key map.

    ``key`` is a Qt key name without its ``Key_`` prefix (``"Left"``, ``"Space"``, ``"PageUp"``,
    ``"P"``), so ``getattr(Qt.Key, "Key_" + key)`` finds it.
    """

    key: str
    action: Action
    description: str


class Chord(NamedTuple):
    """Keys of a key map held together, and the action they send.

    On an Atari joystick Up + Right + Space is UPRIGHTFIRE, not the action of whichever key came
    last. ``keys`` are key names as :class:`KeyBinding` spells them, each one a key of the same map.
    """

    keys: tuple[str, ...]
    action: Action
    description: str


# A keyword argument's value the play view makes an env with (``("frameskip", 1)``).
PlayArgument = tuple[str, int | float | str | bool]


@dataclass(frozen=True)
class EnvEntry:
    """One catalog environment.

    Attributes:
        env_id: the id registered in gymnasium.
        family: the name of the family that provides it.
        title: the name shown to users.
        human_playable: whether the GUI offers keyboard play.
        render_kind: grid (drawn from the env's state) or pixels (RGB frames).
        realtime: True when human play runs at the env's fps (classic control, Box2D, Atari); False
            for turn-based play, one step per key press.
        keys: the human key map. Turn-based: each press steps the env once with that key's action.
            Real-time, discrete actions: the most recently pressed key still held gives the action.
            Real-time, continuous actions: the vectors of all held keys are added and clipped to the
            action space, so Up+Left on LunarLanderContinuous fires main and left engines together.
        idle_action: the action sent on a real-time frame with no key held. ``None`` means the env
            has no no-op (CartPole), so play waits for a key instead of stepping.
        doc: file name of its Markdown description, beside its family's module.
        chords: the action each set of held keys sends (one key's too), for a joystick whose combined
            moves are actions of their own (Atari's UPRIGHTFIRE). With chords, the held keys send the
            action of the largest chord all of whose keys are held (a combination the env lacks plays
            the largest part of it that it has), the one with the most recently pressed keys winning a
            tie, and the idle action when no chord is held. Without chords the rules above hold.
        play_kwargs: the keyword arguments the play view makes the env with, recorded as the run's
            ``env_kwargs`` (ALE: ``frameskip=1``, a step a frame).
        play_fps: the steps a second of real-time play where the env's ``render_fps`` does not give
            its pace (ALE with one frame a step: the console's 60); None: its ``render_fps``.
        agents: a multi-agent env's agent ids (its seats) as made with its default arguments, in the
            env's order; empty for a single-agent env. Such an env is not a gymnasium id: its family's
            module makes it (``gym_gui_sdk.MULTI_AGENT_MAKER``). Turn-based (an AEC game) when not ``realtime``;
            every agent acts at each step (a parallel env) when ``realtime``.
    """

    env_id: str
    family: str
    title: str
    human_playable: bool
    render_kind: RenderKind
    realtime: bool
    keys: tuple[KeyBinding, ...] = ()
    idle_action: Action | None = None
    doc: str = ""
    chords: tuple[Chord, ...] = ()
    play_kwargs: tuple[PlayArgument, ...] = ()
    play_fps: float | None = None
    agents: tuple[str, ...] = ()


def doc_name(env_id: str) -> str:
    """Return the Markdown file name used for ``env_id`` (``ALE/Pong-v5`` → ``ale-pong-v5.md``)."""
    return env_id.lower().replace("/", "-") + ".md"


def env_entry_of(
    env_id: str,
    family: str,
    title: str,
    render_kind: RenderKind,
    *,
    realtime: bool,
    keys: tuple[KeyBinding, ...] = (),
    idle_action: Action | None = None,
    chords: tuple[Chord, ...] = (),
    play_kwargs: tuple[PlayArgument, ...] = (),
    play_fps: float | None = None,
    agents: tuple[str, ...] = (),
) -> EnvEntry:
    """An entry whose doc is ``doc_name(env_id)`` and which a person plays when it has keys."""
    return EnvEntry(
        env_id=env_id,
        family=family,
        title=title,
        human_playable=bool(keys),
        render_kind=render_kind,
        realtime=realtime,
        keys=keys,
        idle_action=idle_action,
        doc=doc_name(env_id),
        chords=chords,
        play_kwargs=play_kwargs,
        play_fps=play_fps,
        agents=agents,
    )


@dataclass(frozen=True)
class EnvFamily:
    """A group of environments that one install provides, as its plugin declares it.

    Attributes:
        name: what ``gym-gui envs --family`` and ``gym-gui envs install`` take (``atari``).
        title: the name shown to users (``Atari (ALE)``).
        import_module: the module whose import proves the family usable (and, for families that
            register their ids on import, such as MiniGrid and ALE, registers them).
        modules: the top-level modules its packages install, found without being imported to tell
            whether it is installed (``("nle", "minihack")``); empty: ``import_module``'s top-level
            package, unless that is gym_gui's own (then the import is what tells).
        entries: its catalog entries, in picker order.
        discover: more entries, read from the installed family itself (ALE's full game list); called
            only once ``import_module`` imports.
        prefixes: ids outside ``entries`` that are still the family's (``ALE/``, ``BabyAI-``).
        entry_points: module prefixes of the gymnasium entry points that are the family's, for ids
            found in gymnasium's registry but not in the catalog.
        packages: the pip requirements that install it into gym_gui's own environment; empty for a
            family gym_gui depends on.
        install_options: options of the one ``pip install`` of ``packages`` (``--no-deps`` where a
            package pins a version of something gym_gui's environment holds at another, so that
            ``packages`` lists everything it needs); empty for most families.
        bundle_extras: for each worker bundle whose kinds train on the family, the bundle extra that
            gives them its envs (``{"cleanrl": "atari"}``).
        environment: variables its module needs before it is imported (MuJoCo's headless ``MUJOCO_GL``);
            set unless the user has set them, so the processes gym_gui starts inherit them.
        unavailable: why it cannot be installed on this kind of machine, in one line; "" when it can.
        docs: the package holding its Markdown docs (one per entry, named :func:`doc_name`).
        describe: the doc of an entry that has no Markdown file (a discovered one), made from the
            entry itself.
        rank: its place in the catalog (ascending, then title).
    """

    name: str
    title: str
    import_module: str
    modules: tuple[str, ...] = ()
    entries: tuple[EnvEntry, ...] = ()
    discover: Callable[[], Iterable[EnvEntry]] | None = None
    prefixes: tuple[str, ...] = ()
    entry_points: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    install_options: tuple[str, ...] = ()
    bundle_extras: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)
    environment: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)
    unavailable: str = ""
    docs: str = ""
    describe: Callable[[EnvEntry], str] | None = None
    rank: int = 100

    @property
    def install_hint(self) -> str:
        """How a user installs it (``install it with `gym-gui envs install atari```), or why it
        cannot be installed here."""
        if self.unavailable:
            return self.unavailable
        if not self.packages:
            return f"it comes with gym_gui: reinstall gym_gui (`make install`) to restore {self.title}"
        return f"install it with `gym-gui envs install {self.name}`"
