"""The environments this interpreter can make, and which of them each CleanRL script can train on.

The table (:func:`env_table`) holds every id registered with gym and with gymnasium here, after the
patches the launcher applies (old gym then knows gymnasium's MuJoCo -v4 and ALE ids), each made once
to read its action and observation spaces, or with why it cannot be made and the install hint. Making
them all takes about a second; the table is kept in the interpreter's prefix until its packages change.
ALE's ids (960 of them once the atari extra is in, a quarter of a second each to make) are read from
their registration instead, and made one at a time when their exact spaces are asked for (:func:`operator_spaces`).

Whether a script trains on an id (:func:`refusal`) is one rule over that table and what the script's
source says (``scripts.AlgorithmInfo``): the id is registered in the package the script makes its
envs with, it can be made, its actions are of the kind the script asserts, and its observations are
arrays when the script sizes its network from their shape. The daemon refuses a run by that rule and
the form lists a script's environments by it (:func:`script_envs`), so the two cannot disagree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gym_gui_sdk.operator import ANY_SPACE, SpaceSpec

from gym_gui_cleanrl_worker.scripts import (
    ENV_APIS,
    OWN_MAKERS,
    PIP_NAMES,
    AlgorithmInfo,
    algorithm_info,
    env_family_of,
    missing_for_env,
)

_VERSION = re.compile(r"-v\d+$")


@dataclasses.dataclass
class EnvInfo:
    """One registered id of one package (gym or gymnasium) in this interpreter.

    ``action`` is "discrete" or "continuous" (or the space's class name for other kinds) and ``problem``
    why the id cannot be made here, with the install hint when a module is missing; both from making it.
    ``observation_spec`` and ``action_spec`` are the spaces as an operator declares them
    (``gym_gui_sdk.operator.SpaceSpec.to_json``).
    """

    env_id: str
    api: str
    family: str
    action: str = ""
    action_space: str = ""
    observation_space: str = ""
    array_observations: bool = False
    problem: str = ""
    observation_spec: dict[str, Any] = dataclasses.field(default_factory=ANY_SPACE.to_json)
    action_spec: dict[str, Any] = dataclasses.field(default_factory=ANY_SPACE.to_json)
    made: bool = True  # False: read from its registration (ALE's), its action count not known


def _kind(space: Any) -> str:
    name = type(space).__name__
    return {"Discrete": "discrete", "Box": "continuous"}.get(name, name)


def _problem(env_id: str, exc: BaseException) -> str:
    """Why ``env_id`` could not be made: the family's install hint, else the missing module's, else the error."""
    hint = missing_for_env(env_id)
    if hint:
        return hint
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        module = exc.name.split(".")[0]
        return f"{env_id} needs {module}, missing in {sys.executable}: pip install {PIP_NAMES.get(module, module)}"
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"{env_id} cannot be made here: {type(exc).__name__}: {first}"


def _registered(api: str) -> list[tuple[str, Any]]:
    """``(id, spec)`` of every id ``api`` registers, in its registry's order."""
    module = importlib.import_module(api)
    registry = module.envs.registry
    specs = getattr(registry, "env_specs", registry)  # old gym keeps them in env_specs
    return list(specs.items())


def _made(row: EnvInfo) -> EnvInfo:
    """``row`` with what making its env once tells: its spaces, or why it cannot be made."""
    try:
        env = importlib.import_module(row.api).make(row.env_id)
    except Exception as exc:  # a missing module, a broken optional dependency: the id is there, unusable
        row.problem = _problem(row.env_id, exc)
        return row
    try:
        row.action = _kind(env.action_space)
        row.action_space = str(env.action_space)
        row.observation_space = str(env.observation_space)
        shape = getattr(env.observation_space, "shape", None)
        row.array_observations = type(env.observation_space).__name__ == "Box" and bool(shape)
        row.observation_spec = SpaceSpec.of(env.observation_space).to_json()
        row.action_spec = SpaceSpec.of(env.action_space).to_json()
        row.made = True
    finally:
        with contextlib.suppress(Exception):
            env.close()
    return row


# ALE's observations by its obs_type (ale_py.env.AtariEnv): the screen in colour or grey, or the 128-byte RAM.
_ALE_SCREENS = {"rgb": (210, 160, 3), "grayscale": (210, 160), "ram": (128,)}


def _ale_kwargs(spec: Any) -> dict[str, Any] | None:
    """The AtariEnv arguments ``spec`` registers (a gymnasium id of ale-py's, or one compat lends old gym),
    or None when it is no ALE id."""
    from gym_gui_cleanrl_worker.compat import LENT_ENTRY_POINT

    if spec.entry_point == LENT_ENTRY_POINT:
        lent = importlib.import_module("gymnasium").envs.registry.get((spec.kwargs or {}).get("gymnasium_id"))
        return None if lent is None else _ale_kwargs(lent)
    return dict(spec.kwargs or {}) if spec.entry_point.startswith("ale_py") else None


def _ale_row(row: EnvInfo, kwargs: dict[str, Any]) -> EnvInfo | None:
    """``row`` of an ALE id read from its registration (``kwargs``) without making it, or None when
    this ale-py cannot tell whether its ROM is here (before 0.9: the id is then made)."""
    try:
        from ale_py.roms import get_rom_path
    except ImportError:
        return None
    game, obs_type = str(kwargs.get("game", "")), str(kwargs.get("obs_type", "rgb"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rom = get_rom_path(game)
    if rom is None:
        row.problem = f"{row.env_id} cannot be made here: ale-py has no ROM of {game!r}"
        return row
    shape = _ALE_SCREENS.get(obs_type)
    if shape is None:
        return None
    row.action = "discrete"
    row.action_space = "Discrete(18)" if kwargs.get("full_action_space") else "Discrete(the game's actions)"
    row.observation_space = f"Box(0, 255, {shape}, uint8)"
    row.array_observations = True
    row.observation_spec = SpaceSpec("Box", shape=shape).to_json()
    row.made = False
    return row


def _probe(api: str) -> list[EnvInfo]:
    rows = []
    for env_id, spec in _registered(api):
        if not isinstance(spec.entry_point, str):
            # gymnasium's GymV21Environment-v0 / GymV26Environment-v0 wrap another id given as an argument.
            continue
        row = EnvInfo(env_id, api, env_family_of(env_id))
        ale = _ale_kwargs(spec)
        rows.append((ale is not None and _ale_row(row, ale)) or _made(row))
    return rows


def _apis() -> list[str]:
    return [api for api in ENV_APIS if importlib.util.find_spec(api) is not None]


def _cache_file() -> Path:
    """The table's file for this interpreter's exact package set and this module's (and compat's) source."""
    packages = sorted(
        f"{dist.metadata['Name']}=={dist.version}" for dist in importlib.metadata.distributions()
    )
    here = Path(__file__).parent
    sources = [
        f"{path.name}:{path.stat().st_mtime_ns}:{path.stat().st_size}"
        for path in (here / "envs.py", here / "compat.py", here / "scripts.py")
    ]
    key = "\n".join([sys.version, *packages, *sources])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return Path(sys.prefix) / ".gym_gui_describe_cache" / f"envs-{digest}.json"


def build_table() -> list[EnvInfo]:
    """Make every registered id of gym and gymnasium here (stdout kept clean for the JSON answer)."""
    from gym_gui_cleanrl_worker import compat

    compat.install()  # as the launcher does: old gym learns gymnasium's MuJoCo -v4 ids
    rows: list[EnvInfo] = []
    with contextlib.redirect_stdout(sys.stderr):
        apis = [importlib.import_module(api).__name__ for api in _apis()]
        # After the imports: gymnasium's logger sets a filter of its own when it is imported.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for api in apis:
                rows += _probe(api)
    return rows


def env_table() -> list[EnvInfo]:
    """:func:`build_table`, remembered in this interpreter's prefix until a package or this code changes."""
    cache = _cache_file()
    with contextlib.suppress(OSError, ValueError, TypeError):
        return [EnvInfo(**row) for row in json.loads(cache.read_text(encoding="utf-8"))]
    rows = build_table()
    with contextlib.suppress(OSError):
        cache.parent.mkdir(exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps([dataclasses.asdict(row) for row in rows]), encoding="utf-8")
        os.replace(tmp, cache)
    return rows


# ---------------------------------------------------------------- what a script trains on


def _name(env_id: str) -> str:
    return _VERSION.sub("", env_id)


def _version(api: str) -> str:
    try:
        return f"{api} {importlib.metadata.version(api)}"
    except importlib.metadata.PackageNotFoundError:
        return api


def listable(info: AlgorithmInfo) -> bool:
    """Whether the script's environments come from a registry here (not EnvPool's, Procgen's …, not unknown)."""
    return info.env_family not in OWN_MAKERS and info.env_api in _apis()


def _fit(info: AlgorithmInfo, row: EnvInfo) -> str:
    """Why ``info``'s script cannot train on a registered ``row`` ("" when it can)."""
    if row.problem:
        return row.problem
    if info.action_space and row.action != info.action_space:
        return (
            f"{info.name} trains {info.action_space} actions only; "
            f"{row.env_id}'s actions are {row.action} ({row.action_space})"
        )
    if info.array_observations and not row.array_observations:
        return (
            f"{info.name} sizes its network from the observation's shape; "
            f"{row.env_id}'s observations are {row.observation_space}, not an array"
        )
    return ""


def refusal(info: AlgorithmInfo | None, env_id: str, table: Sequence[EnvInfo] | None = None) -> str:
    """Why the script cannot train on ``env_id`` here, with the install hint where one helps; "" when it can.

    Scripts whose environments come from no registry here (EnvPool, Procgen, PettingZoo, Isaac Gym, or a
    source that names neither gym nor gymnasium) are checked for the family's modules only.
    """
    if info is None or not listable(info):
        return missing_for_env(env_id, info.env_family if info else None) or ""
    rows = {row.env_id: row for row in (env_table() if table is None else table) if row.api == info.env_api}
    row = rows.get(env_id)
    if row is not None:
        return _fit(info, row)
    reason = (
        f"{env_id} is not registered in {_version(info.env_api)} here, "
        f"which {info.name} makes its environments with"
    )
    others = [other for other in rows.values() if _name(other.env_id) == _name(env_id)]
    trains = [other.env_id for other in others if not _fit(info, other)]
    if trains:
        return f"{reason}; choose {' or '.join(trains)}"
    if others:  # another version is here: why that one does not do either (with its install hint)
        return f"{reason}; it has {others[-1].env_id}, but {_fit(info, others[-1])}"
    # A family that registers its ids once installed (ALE) says what to install.
    return missing_for_env(env_id) or reason


def script_envs(info: AlgorithmInfo, also: Iterable[str] = ()) -> list[dict[str, str]] | None:
    """The environments to offer for the script, each ``{"id", "reason"}`` ("" when it trains on it).

    First every id it trains on here, in its registry's order; then the ``also`` ids it cannot train on
    (the ids a user knows from elsewhere, e.g. gym_gui's catalog) and the registry's ids that a missing
    module keeps from it while no other version of theirs can be made, each with why not. Ids of the other
    action kind that nobody asked about are left out. None when the script's environments come from no
    registry here (:func:`listable`).
    """
    if not listable(info):
        return None
    table = [row for row in env_table() if row.api == info.env_api]
    trains = [row.env_id for row in table if not _fit(info, row)]
    made = {_name(row.env_id) for row in table if not row.problem}
    listed = [{"id": env_id, "reason": ""} for env_id in trains]
    seen = set(trains)
    for env_id in also:
        if env_id not in seen:
            seen.add(env_id)
            listed.append({"id": env_id, "reason": refusal(info, env_id, table) or ""})
    for row in table:
        if row.env_id not in seen and row.problem and _name(row.env_id) not in made:
            seen.add(row.env_id)
            listed.append({"id": row.env_id, "reason": row.problem})
    return listed


def script_envs_answer(algorithm: str, also: Iterable[str], user_dir: str | None = None) -> dict[str, Any]:
    """``describe --algo NAME --envs [ID …]``: the package the script makes its environments with and
    :func:`script_envs`. Raises ValueError for a script that is not there."""
    info = _script_info(algorithm, user_dir)
    return {
        "algo": info.name,
        "api": _version(info.env_api) if info.env_api else "",
        "envs": script_envs(info, also),
    }


# ---------------------------------------------------------------- what a trained model acts on

# What CleanRL's Atari scripts feed their networks: 84x84 grey frames, the last 4 stacked
# (ResizeObservation, GrayScaleObservation, FrameStack; EnvPool's Atari makes the same).
ATARI_OBSERVATION = SpaceSpec("Box", shape=(4, 84, 84))


def operator_spaces(info: AlgorithmInfo, env_id: str) -> dict[str, Any]:
    """The spaces a model of ``info``'s script trained on ``env_id`` acts on, read from the env table
    (no model is loaded): ``{"observation", "action"}`` as ``SpaceSpec.to_json``.

    The observations are the env's own, except for the scripts that preprocess theirs (Atari's: a
    stack of small grey frames, :data:`ATARI_OBSERVATION`), which can only take those. A space this
    interpreter cannot tell (an env of no registry here) is ``any``: the operator's process, which
    loads the model, declares the real one.
    """
    observation, action = ANY_SPACE.to_json(), ANY_SPACE.to_json()
    if listable(info):
        row = next((row for row in env_table() if row.api == info.env_api and row.env_id == env_id), None)
        if row is not None and not row.made and not row.problem:
            with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = _made(row)  # an ALE id, read from its registration: its action count is the game's
        if row is not None and not row.problem:
            observation, action = row.observation_spec, row.action_spec
    if info.env_family == "atari" or (info.env_family == "envpool" and env_family_of(env_id) == "atari"):
        observation = ATARI_OBSERVATION.to_json()
    return {"observation": observation, "action": action}


def operator_spaces_answer(algorithm: str, env_id: str, user_dir: str | None = None) -> dict[str, Any]:
    """``describe --algo NAME --spaces ENV_ID``: :func:`operator_spaces`. Raises ValueError for a
    script that is not there."""
    return operator_spaces(_script_info(algorithm, user_dir), env_id)


def _script_info(algorithm: str, user_dir: str | None) -> AlgorithmInfo:
    """:func:`scripts.algorithm_info`, a script that is not there raising ValueError (a describe answer's error)."""
    try:
        return algorithm_info(algorithm, user_dir)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
