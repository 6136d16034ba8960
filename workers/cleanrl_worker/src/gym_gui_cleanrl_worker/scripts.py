"""Discovery of the CleanRL algorithms present (bundled package or a user's checkout), read from the scripts' source."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# The pip name (or how to get it) of a module a CleanRL script may import that is not in every bundle.
PIP_NAMES: dict[str, str] = {
    "jax": "jax",
    "jaxlib": "jaxlib",
    "flax": "flax",
    "optax": "optax",
    "chex": "chex",
    "envpool": "envpool",
    "procgen": "procgen",
    "pettingzoo": "pettingzoo",
    "supersuit": "supersuit",
    "multi_agent_ale_py": "multi-agent-ale-py",
    "isaacgym": "isaacgym (NVIDIA Isaac Gym, not on PyPI: https://developer.nvidia.com/isaac-gym)",
    "isaacgymenvs": "isaacgymenvs (https://github.com/NVIDIA-Omniverse/IsaacGymEnvs)",
    "ale_py": "ale-py",
    "cv2": "opencv-python",
    "mujoco": "mujoco",
    "mujoco_py": "free-mujoco-py",
    "Box2D": "box2d-py",
    "dm_control": "dm-control",
    "shimmy": "shimmy",
    "tyro": "tyro",
    "gym": "gym",
    "gymnasium": "gymnasium",
    "stable_baselines3": "stable-baselines3",
    "torch": "torch",
    "tensorboard": "tensorboard",
    "wandb": "wandb",
    "huggingface_hub": "huggingface-hub",
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "PIL": "pillow",
}

# Families whose scripts can only ever run that family's environments, so its modules are part of what the
# script needs. Classic-control/MuJoCo scripts are not here: the same script runs Pendulum-v1 or HalfCheetah-v4,
# so for them the family is a property of the env id chosen at launch (see missing_for_env).
_FIXED_FAMILIES = ("isaacgym", "envpool", "procgen", "pettingzoo", "atari")
# Families whose scripts make their environments with the family's own library, not gym's registry.
OWN_MAKERS = ("envpool", "procgen", "pettingzoo", "isaacgym")

_CLASSIC_CONTROL = {"CartPole", "Acrobot", "MountainCar", "MountainCarContinuous", "Pendulum"}
_BOX2D = {"LunarLander", "LunarLanderContinuous", "BipedalWalker", "BipedalWalkerHardcore", "CarRacing"}
_TOY_TEXT = {"FrozenLake", "FrozenLake8x8", "CliffWalking", "Taxi", "Blackjack"}
_MUJOCO = {
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
}
_PROCGEN = {
    "bigfish",
    "bossfight",
    "caveflyer",
    "chaser",
    "climber",
    "coinrun",
    "dodgeball",
    "fruitbot",
    "heist",
    "jumper",
    "leaper",
    "maze",
    "miner",
    "ninja",
    "plunder",
    "starpilot",
}
# Atari ids without the ALE/ namespace or a NoFrameskip suffix (the v5 ids EnvPool scripts use, old gym ids).
_ATARI_GAMES = {
    "Adventure",
    "AirRaid",
    "Alien",
    "Amidar",
    "Assault",
    "Asterix",
    "Asteroids",
    "Atlantis",
    "BankHeist",
    "BattleZone",
    "BeamRider",
    "Berzerk",
    "Bowling",
    "Boxing",
    "Breakout",
    "Carnival",
    "Centipede",
    "ChopperCommand",
    "CrazyClimber",
    "Defender",
    "DemonAttack",
    "DoubleDunk",
    "ElevatorAction",
    "Enduro",
    "FishingDerby",
    "Freeway",
    "Frostbite",
    "Gopher",
    "Gravitar",
    "Hero",
    "IceHockey",
    "Jamesbond",
    "JourneyEscape",
    "Kangaroo",
    "Krull",
    "KungFuMaster",
    "MontezumaRevenge",
    "MsPacman",
    "NameThisGame",
    "Phoenix",
    "Pitfall",
    "Pong",
    "Pooyan",
    "PrivateEye",
    "Qbert",
    "Riverraid",
    "RoadRunner",
    "Robotank",
    "Seaquest",
    "Skiing",
    "Solaris",
    "SpaceInvaders",
    "StarGunner",
    "Surround",
    "Tennis",
    "TimePilot",
    "Tutankham",
    "UpNDown",
    "Venture",
    "VideoPinball",
    "WizardOfWor",
    "YarsRevenge",
    "Zaxxon",
}
# PettingZoo ids as CleanRL passes them: the module name under pettingzoo.atari, e.g. "pong_v3".
_PETTINGZOO_ID = re.compile(r"^[a-z][a-z0-9_]*_v\d+$")
_VERSIONED_ID = re.compile(r"^(?:(?P<ns>[\w.-]+)/)?(?P<name>[\w.-]+?)(?:-v(?P<version>\d+))?$")


@dataclass
class AlgorithmInfo:
    """One CleanRL script: what it is called, where it is, what it trains on, and whether it can run here.

    ``env_api`` is the package the script makes its environments with ("gym" or "gymnasium"; "" when its
    source does not say), ``action_space`` the kind of actions it asserts ("discrete", "continuous"; ""
    when it asserts none) and ``array_observations`` whether it sizes its network from
    ``observation_space.shape`` (so an env whose observations are one integer cannot feed it).
    """

    name: str
    path: str
    env_family: str
    default_env: str
    requires: list[str] = field(default_factory=list)
    runnable: bool = True
    reason: str = ""
    env_api: str = ""
    action_space: str = ""
    array_observations: bool = False


def _looks_like_scripts(directory: Path) -> bool:
    return any(_is_script(p) for p in directory.glob("*.py"))


def scripts_dir(user_dir: str | None = None) -> Path:
    """The directory holding the CleanRL scripts.

    With no user_dir: the installed ``cleanrl`` package of this interpreter (found without importing it).
    With user_dir: a CleanRL checkout, either its ``cleanrl/`` folder or a directory holding scripts directly.
    Raises FileNotFoundError saying what is missing.
    """
    if user_dir:
        root = Path(user_dir).expanduser().resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"CleanRL scripts directory {root} does not exist")
        # A git checkout of CleanRL keeps its scripts in cleanrl/; a bare folder of scripts is used as is.
        for candidate in (root / "cleanrl", root):
            if candidate.is_dir() and _looks_like_scripts(candidate):
                return candidate
        raise FileNotFoundError(f"no CleanRL scripts in {root} (nor in {root / 'cleanrl'})")
    spec = importlib.util.find_spec("cleanrl")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the cleanrl package is not installed in {sys.executable}; install the cleanrl bundle "
            "(gym-gui bundles install cleanrl) or name a CleanRL checkout"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def _is_script(path: Path) -> bool:
    """A CleanRL algorithm script defines its own command line: argparse add_argument calls or tyro.cli."""
    if path.name.startswith("_") or path.suffix != ".py":
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return "add_argument(" in text or "tyro.cli(" in text


def _script_paths(directory: Path) -> list[Path]:
    paths = [p for p in directory.glob("*.py") if _is_script(p)]
    # Scripts that ship with helpers live in a folder of their own name (ppo_continuous_action_isaacgym/).
    for sub in directory.iterdir():
        nested = sub / f"{sub.name}.py"
        if sub.is_dir() and nested.is_file() and _is_script(nested):
            paths.append(nested)
    return sorted(paths, key=lambda p: p.stem)


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    names = [node.test.left, *node.test.comparators]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in names)


def _imports_of(statements: list[ast.stmt], out: set[str]) -> None:
    """Top-level module names imported unconditionally: module body, the main guard, function bodies.

    Imports nested under other ifs or try blocks (``if args.track: import wandb``) are optional and left out.
    """
    for node in statements:
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                out.add(node.module.split(".")[0])
        elif _is_main_guard(node):
            _imports_of(node.body, out)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _imports_of(node.body, out)


def _dynamic_imports(tree: ast.Module) -> set[str]:
    """Modules named by importlib.import_module("x…") or f"x.{…}" (ppo_pettingzoo_ma_atari picks its game so)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name != "import_module":
            continue
        arg = node.args[0]
        head = ""
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            head = arg.value
        elif isinstance(arg, ast.JoinedStr) and arg.values:
            first = arg.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                head = first.value
        module = head.split(".")[0]
        if module.isidentifier():
            found.add(module)
    return found


def _default_env(tree: ast.Module) -> str:
    """The literal default of --env-id (argparse) or of the env_id field (tyro dataclass); "" when not literal."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            flags = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if "--env-id" in flags or "--gym-id" in flags:
                for kw in node.keywords:
                    if kw.arg == "default" and isinstance(kw.value, ast.Constant):
                        return str(kw.value.value)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in ("env_id", "gym_id")
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return ""


# The gym and gymnasium space classes a script's action-space assertion names, as the kind of actions.
_ACTION_KINDS = {"Discrete": "discrete", "Box": "continuous"}
ENV_APIS = ("gym", "gymnasium")


def _env_api(tree: ast.Module) -> str:
    """The package the script calls ``make`` of (``gym.make``, with ``import gymnasium as gym`` read as
    gymnasium); the one it imports when no call says; "" when it imports neither or both and calls none."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ENV_APIS:
                    aliases[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "make"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in aliases
        ):
            return aliases[node.func.value.id]
    apis = set(aliases.values())
    return apis.pop() if len(apis) == 1 else ""


def _action_space(tree: ast.Module) -> str:
    """The kind of actions the script asserts: ``isinstance(envs.single_action_space, gym.spaces.Discrete)``."""
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            continue
        subject, kind = node.args
        if (
            isinstance(subject, ast.Attribute)
            and subject.attr in ("single_action_space", "action_space")
            and isinstance(kind, ast.Attribute)
            and kind.attr in _ACTION_KINDS
        ):
            return _ACTION_KINDS[kind.attr]
    return ""


def _array_observations(tree: ast.Module) -> bool:
    """Whether the script reads ``observation_space.shape`` (its network's input size comes from it)."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "shape"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in ("single_observation_space", "observation_space")
        for node in ast.walk(tree)
    )


def env_family_of(env_id: str) -> str:
    """The environment family of an env id, from its form alone (no registry is imported).

    One of "classic_control", "box2d", "toy_text", "mujoco", "atari", "procgen", "pettingzoo", "isaacgym",
    or "other" when the id is not recognised.
    """
    match = _VERSIONED_ID.match(env_id.strip())
    if not match:
        return "other"
    namespace, name, version = match.group("ns"), match.group("name"), match.group("version")
    if namespace == "ALE" or "NoFrameskip" in name or name.endswith("Deterministic") or "-ram" in env_id:
        return "atari"
    if namespace:
        return "other"
    if version is None:
        if name in _PROCGEN:
            return "procgen"
        if _PETTINGZOO_ID.match(name):
            return "pettingzoo"
        if name[:1].isupper():
            # Isaac Gym tasks are bare names ("Ant", "Humanoid", "ShadowHand") with no version.
            return "isaacgym"
        return "other"
    if name in _CLASSIC_CONTROL:
        return "classic_control"
    if name in _MUJOCO:
        return "mujoco"
    if name in _BOX2D:
        return "box2d"
    if name in _TOY_TEXT:
        return "toy_text"
    if name in _ATARI_GAMES:
        return "atari"
    if name.startswith("dm_control"):
        return "dm_control"
    return "other"


def _missing(modules: list[str]) -> list[str]:
    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


# What a complete install of a gym_gui bundle leaves in its prefix (gym_gui.workers.bundles.MARKER),
# naming the bundle; this module runs in the bundle, without gym_gui.
_BUNDLE_MARKER = ".gym_gui_bundle.json"


def _bundle_name() -> str | None:
    """The gym_gui bundle this interpreter is (its marker's name), or None when it is no bundle."""
    try:
        name = json.loads((Path(sys.prefix) / _BUNDLE_MARKER).read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name else None


def _extra_hint(extra: str, pip_line: str) -> str:
    """How to get CleanRL's ``extra`` here: in a gym_gui bundle, the command that adds it to the bundle
    (its requirements are pinned to the bundle's); in any other interpreter, ``pip_line``."""
    bundle = _bundle_name()
    return f"run `gym-gui bundles install {bundle} --extra {extra}`" if bundle else pip_line


def _family_modules(family: str, env_id: str) -> tuple[list[str], str]:
    """The modules an environment family needs, and the install hint naming CleanRL's extra for them."""
    if family == "atari":
        return ["ale_py", "cv2"], _extra_hint(
            "atari",
            "pip install ale-py==0.10.2 opencv-python-headless  (CleanRL's atari extra; ale-py ships the ROMs)",
        )
    if family == "mujoco":
        match = _VERSIONED_ID.match(env_id.strip())
        version = match.group("version") if match else None
        if version is not None and int(version) < 4:
            # -v2/-v3 MuJoCo ids still run on the old mujoco-py bindings.
            hint = "pip install free-mujoco-py  (CleanRL's mujoco-py extra; needs the MuJoCo 2.1 binaries)"
            return ["mujoco_py"], hint
        return ["mujoco"], 'pip install "mujoco<3" imageio  (CleanRL\'s mujoco extra)'
    if family == "box2d":
        return ["Box2D"], "pip install box2d-py  (needs swig to build)"
    if family == "procgen":
        return ["procgen"], "pip install procgen  (CleanRL's procgen extra)"
    if family == "pettingzoo":
        return ["pettingzoo", "supersuit", "multi_agent_ale_py"], (
            "pip install pettingzoo supersuit multi-agent-ale-py  (CleanRL's pettingzoo extra)"
        )
    if family == "isaacgym":
        return ["isaacgym", "isaacgymenvs"], (
            "install NVIDIA Isaac Gym (https://developer.nvidia.com/isaac-gym) and IsaacGymEnvs"
        )
    if family == "envpool":
        return ["envpool"], _extra_hint(
            "envpool", "pip install envpool==0.8.4  (CleanRL's envpool extra; Linux x86-64 only)"
        )
    if family == "dm_control":
        return ["dm_control", "shimmy"], 'pip install "shimmy[dm-control]"  (CleanRL\'s dm-control extra)'
    return [], ""


def missing_for_env(env_id: str, family: str | None = None) -> str | None:
    """None when this interpreter has the modules env_id's family needs; else a one-line install hint.

    family overrides the family read from the id: pass the script's AlgorithmInfo.env_family when it is bound
    to one ("envpool": EnvPool makes "Pong-v5" itself, without ale_py). Only importlib.util.find_spec is used,
    so nothing heavy (ale_py, mujoco) is imported. The hint names the missing modules and the pip command.
    """
    family = family if family in OWN_MAKERS else env_family_of(env_id)
    modules, hint = _family_modules(family, env_id)
    missing = _missing(modules)
    if not missing:
        return None
    return f"{env_id} ({family} environment) needs {', '.join(missing)}, missing in {sys.executable}: {hint}"


def _local_module(module: str, directory: Path) -> bool:
    """A helper module next to the script (or at the checkout root, like cleanrl_utils) is not a missing import."""
    for base in (directory, directory.parent):
        if (base / f"{module}.py").is_file() or (base / module / "__init__.py").is_file():
            return True
    return False


def _describe_path(path: Path) -> AlgorithmInfo:
    tree = _parse(path)
    if tree is None:
        return AlgorithmInfo(path.stem, str(path), "other", "", [], False, f"{path} is not valid Python here")
    imports: set[str] = set()
    _imports_of(tree.body, imports)
    imports |= _dynamic_imports(tree)
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    third_party = sorted(m for m in imports if m not in stdlib and m != "__future__")
    default_env = _default_env(tree)

    # The script's own imports fix its family when they name one; otherwise its name (atari) or default env does.
    if "isaacgym" in imports or "isaacgymenvs" in imports:
        family = "isaacgym"
    elif "envpool" in imports:
        family = "envpool"
    elif "procgen" in imports:
        family = "procgen"
    elif "pettingzoo" in imports or "supersuit" in imports:
        family = "pettingzoo"
    elif "atari" in path.stem:
        family = "atari"
    else:
        family = env_family_of(default_env) if default_env else "other"

    needed = [m for m in third_party if not _local_module(m, path.parent)]
    hints: list[str] = []
    if family in _FIXED_FAMILIES:
        env_modules, env_hint = _family_modules(family, default_env)
        missing_env = _missing(env_modules)
        if missing_env:
            hints.append(f"its {family} environments need {', '.join(missing_env)}: {env_hint}")
        needed += [m for m in missing_env if m not in needed]
    requires = _missing(sorted(set(needed)))
    # The family's own modules are explained once by its hint, not again one by one.
    family_modules = _family_modules(family, default_env)[0] if family in _FIXED_FAMILIES else []
    reasons = [
        f"{module} is not installed (pip install {PIP_NAMES.get(module, module)})"
        for module in requires
        if module not in family_modules
    ]
    reason = "; ".join(reasons + hints)
    return AlgorithmInfo(
        name=path.stem,
        path=str(path),
        env_family=family,
        default_env=default_env,
        requires=requires,
        runnable=not requires,
        reason=reason,
        env_api=_env_api(tree),
        action_space=_action_space(tree),
        array_observations=_array_observations(tree),
    )


def list_algorithms(user_dir: str | None = None) -> list[AlgorithmInfo]:
    """Every CleanRL script in scripts_dir(user_dir), sorted by name, read with ast only (nothing is executed).

    requires lists the modules missing in this interpreter that the script needs: its unconditional imports
    (jax, envpool, …) and, for scripts bound to one environment family (Atari, Procgen, PettingZoo, EnvPool,
    Isaac Gym), that family's modules. runnable is False exactly when requires is not empty, and reason then
    names each missing module with its pip name.
    """
    return [_describe_path(p) for p in _script_paths(scripts_dir(user_dir))]


def find_algorithm(name: str, user_dir: str | None = None) -> Path:
    """The path of the script called name in scripts_dir(user_dir); KeyError naming the closest names if absent."""
    import difflib

    paths = {p.stem: p for p in _script_paths(scripts_dir(user_dir))}
    if name in paths:
        return paths[name]
    close = difflib.get_close_matches(name, list(paths), n=3)
    suggestion = f"; did you mean {' or '.join(close)}?" if close else ""
    raise KeyError(f"no CleanRL script named {name!r} in {scripts_dir(user_dir)}{suggestion}")


def algorithm_info(name: str, user_dir: str | None = None) -> AlgorithmInfo:
    """list_algorithms' entry of the script called name, reading that script only; KeyError as find_algorithm."""
    return _describe_path(find_algorithm(name, user_dir))
