"""The environment catalog against the installed gymnasium: docs, ids, install hints, key maps."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gym_gui_sdk.render import GRID, PIXELS, render_kind_of
from gymnasium import spaces

from gym_gui.core.envs import EnvEntry, RenderKind
from gym_gui.core.errors import ConfigError, UnknownEnv
from gym_gui.envs import check
from gym_gui.envs.catalog import (
    catalog,
    catalog_by_family,
    env_doc,
    env_entry,
    env_family,
    family_installed,
    family_of,
    import_failure,
)
from gym_gui.envs.check import check_env, check_env_kwargs, env_status, make_env

# The app's own environment depends on these (pyproject.toml); the rest install on request.
APP_FAMILIES = ("toy_text", "classic_control", "box2d", "mujoco", "minigrid")
OPTIONAL_FAMILIES = (
    "atari",
    "crafter",
    "minihack",
    "highway",
    "vizdoom",
    "metaworld",
    "dm_control",
    "procgen",
    "pettingzoo",
)

ENV_CATALOG = catalog()
ENTRIES = list(ENV_CATALOG.values())
APP_ENTRIES = [e for e in ENTRIES if e.family in APP_FAMILIES]
OPTIONAL_ENTRIES = [e for e in ENTRIES if e.family in OPTIONAL_FAMILIES]
PLAYABLE_APP_ENTRIES = [e for e in APP_ENTRIES if e.human_playable]


def _ids(entries: list[EnvEntry]) -> list[str]:
    return [e.env_id for e in entries]


def test_catalog_covers_every_family_with_the_ids_the_design_names() -> None:
    grouped = catalog_by_family()
    assert list(grouped) == [*APP_FAMILIES, *OPTIONAL_FAMILIES]
    assert sum(len(v) for v in grouped.values()) == len(ENV_CATALOG)
    expected = {
        "toy_text": {"FrozenLake-v1", "FrozenLake8x8-v1", "CliffWalking-v1", "Taxi-v4", "Blackjack-v1"},
        "classic_control": {
            "CartPole-v1",
            "MountainCar-v0",
            "MountainCarContinuous-v0",
            "Acrobot-v1",
            "Pendulum-v1",
        },
        "box2d": {"LunarLander-v3", "LunarLanderContinuous-v3", "CarRacing-v3", "BipedalWalker-v3"},
        "minigrid": {
            "MiniGrid-Empty-5x5-v0",
            "MiniGrid-Empty-8x8-v0",
            "MiniGrid-DoorKey-5x5-v0",
            "MiniGrid-FourRooms-v0",
            "BabyAI-GoToRedBallGrey-v0",
            "BabyAI-GoToLocal-v0",
            "BabyAI-PickupLoc-v0",
            "BabyAI-PutNextLocal-v0",
            "BabyAI-OpenDoor-v0",
            "BabyAI-Synth-v0",
            "BabyAI-BossLevel-v0",
        },
        "mujoco": {"HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5"},
        "crafter": {"CrafterReward-v1", "CrafterNoReward-v1"},
        "vizdoom": {
            "VizdoomBasic-v1",
            "VizdoomDeadlyCorridor-v1",
            "VizdoomDefendCenter-v1",
            "VizdoomDefendLine-v1",
            "VizdoomHealthGathering-v1",
            "VizdoomHealthGatheringSupreme-v1",
            "VizdoomMyWayHome-v1",
            "VizdoomPredictPosition-v1",
            "VizdoomTakeCover-v1",
        },
        "minihack": {
            "gym_gui/MiniHack-Room-5x5-v0",
            "gym_gui/MiniHack-Room-15x15-v0",
            "gym_gui/MiniHack-MazeWalk-9x9-v0",
            "gym_gui/MiniHack-KeyRoom-S5-v0",
            "gym_gui/MiniHack-River-v0",
            "gym_gui/MiniHack-HideNSeek-v0",
            "gym_gui/NetHackScore-v0",
            "gym_gui/NetHackChallenge-v0",
        },
        "highway": {
            "highway-fast-v0",
            "merge-v1",
            "roundabout-v1",
            "intersection-v0",
            "parking-v0",
            "racetrack-v1",
        },
        "procgen": {"procgen-coinrun-v0", "procgen-starpilot-v0"},
        "pettingzoo": {
            "tictactoe_v3",
            "connect_four_v3",
            "rps_v2",
            "chess_v6",
            "go_v5",
            "texas_holdem_v4",
            "pistonball_v6",
            "cooperative_pong_v6",
        },
    }
    found = {family: {e.env_id for e in entries} for family, entries in grouped.items()}
    # Atari's are every game the installed ale-py registers (tests/envs/test_ale.py), Meta-World's
    # every task (tests/envs/test_metaworld.py), DeepMind Control's 21 suite tasks (test_dm_control.py).
    assert {"ALE/Pong-v5", "ALE/Breakout-v5", "ALE/SpaceInvaders-v5"} < found.pop("atari")
    assert len(found.pop("metaworld")) == 50
    assert {"dm_control/cartpole-swingup-v0", "dm_control/cheetah-run-v0"} < found.pop("dm_control")
    assert found == expected


def test_render_kinds_and_turn_taking_follow_the_family() -> None:
    grid_ids = {"FrozenLake-v1", "FrozenLake8x8-v1", "CliffWalking-v1", "Taxi-v4"} | {
        e.env_id for e in ENTRIES if e.family == "minigrid"
    }
    for entry in ENTRIES:
        assert entry.render_kind is (RenderKind.GRID if entry.env_id in grid_ids else RenderKind.PIXELS)
        turn_based = entry.family in ("toy_text", "minigrid", "minihack", "highway") or (
            entry.family == "pettingzoo" and entry.env_id not in ("pistonball_v6", "cooperative_pong_v6")
        )
        assert entry.realtime is not turn_based, entry.env_id
        assert entry.human_playable is bool(entry.keys)
    expected_playable = (
        "FrozenLake-v1",
        "CliffWalking-v1",
        "Taxi-v4",
        "CartPole-v1",
        "MountainCar-v0",
        "Acrobot-v1",
        "LunarLander-v3",
        "CarRacing-v3",
        "MiniGrid-Empty-5x5-v0",
    )
    for env_id in expected_playable:
        assert ENV_CATALOG[env_id].human_playable, env_id
    assert ENV_CATALOG["Blackjack-v1"].render_kind is RenderKind.PIXELS


def test_family_lookup_uses_the_catalog_then_prefixes() -> None:
    assert family_of("Taxi-v4") == "toy_text"
    assert family_of("MiniGrid-LavaGapS5-v0") == "minigrid"
    assert family_of("BabyAI-GoToRedBall-v0") == "minigrid"
    assert family_of("ALE/Tetris-v5") == "atari"
    assert family_of("procgen-maze-v0") == "procgen"
    assert family_of("CrafterNoReward-v1") == "crafter"
    assert family_of("VizdoomDeadlyCorridor-MultiBinary-v1") == "vizdoom"
    assert family_of("NoSuchThing-v0") is None
    assert env_entry("NoSuchThing-v0") is None
    assert env_entry("CartPole-v1") is ENV_CATALOG["CartPole-v1"]


def test_family_install_hints() -> None:
    for name in APP_FAMILIES:
        family = env_family(name)
        assert family.packages == () and not family.unavailable
        assert family.install_hint == (
            f"it comes with gym_gui: reinstall gym_gui (`make install`) to restore {family.title}"
        )
    atari = env_family("atari")
    assert atari.install_hint == "install it with `gym-gui envs install atari`"
    assert atari.import_module == "ale_py" and atari.packages == ("ale-py==0.12.*",)
    assert dict(atari.bundle_extras) == {"cleanrl": "atari"}
    # Exact pins: each was tried with gym_gui's gymnasium and numpy (tests/envs/test_crafter.py, test_vizdoom.py).
    for name, packages in (("crafter", ("crafter==1.8.3",)), ("vizdoom", ("vizdoom==1.3.2",))):
        family = env_family(name)
        assert family.packages == packages and not family.unavailable
        assert family.install_hint == f"install it with `gym-gui envs install {name}`"
    # A family this machine cannot install says why, in one line: the numpy it names is this one.
    assert env_family("procgen").install_hint == (
        "procgen-mirror 0.10.7, Procgen's only wheels for Python 3.11, needs numpy < 2, and gym_gui runs numpy 2.4"
    )
    assert np.__version__.startswith("2.4.")
    with pytest.raises(ConfigError, match=r"^no environment family 'nope'; the families are toy_text, "):
        env_family("nope")


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_every_entry_has_its_doc_with_its_controls(entry: EnvEntry) -> None:
    doc = env_doc(entry.env_id)
    assert doc.startswith(f"# {entry.title}\n")
    assert f"`{entry.env_id}`" in doc
    for heading in ("## Observation", "## Actions", "## Reward", "## Episode end", "## Controls"):
        assert heading in doc, (entry.env_id, heading)
    controls = doc.split("## Controls", 1)[1]
    for key in entry.keys:
        assert f"| {key.key} |" in controls, (entry.env_id, key.key)
        assert key.description in controls
    if not entry.human_playable:
        assert "Not playable by keyboard" in controls


def test_env_doc_of_an_unknown_id_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="NoSuchThing-v0"):
        env_doc("NoSuchThing-v0")


def test_app_families_are_installed_and_optional_ones_are_reported_by_import() -> None:
    for family in APP_FAMILIES:
        assert family_installed(family), family


def test_installed_families_are_found_without_importing_them() -> None:
    """The picker asks every family whether it is installed: its modules are looked up, not imported
    (NetHack, Meta-World and DeepMind Control take seconds), and a module blocked from importing is
    not found."""
    heavy = ("nle", "minihack", "metaworld", "dm_control", "shimmy", "ale_py")
    code = (
        "import sys, json, importlib.util; sys.modules['nle'] = None\n"
        "from gym_gui.envs.catalog import env_families, env_family, family_installed\n"
        "installed = {name: family_installed(name) for name in env_families()}\n"
        "found = {name: all(importlib.util.find_spec(m) for m in env_family(name).modules)"
        " for name in ('metaworld', 'dm_control')}\n"
        f"print(json.dumps([installed, found, [m for m in {heavy!r} if sys.modules.get(m)]]))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    installed, found, imported = json.loads(done.stdout)
    assert imported == []
    assert installed["minihack"] is False
    assert all(installed[name] for name in APP_FAMILIES)
    assert installed["metaworld"] == found["metaworld"] and installed["dm_control"] == found["dm_control"]


@pytest.mark.parametrize("entry", APP_ENTRIES, ids=_ids(APP_ENTRIES))
def test_installed_catalog_ids_make_reset_and_step(entry: EnvEntry) -> None:
    status = check_env(entry.env_id)
    assert status.installed and status.entry is entry and status.family == entry.family
    env = make_env(entry.env_id)
    try:
        obs, _info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        env.action_space.seed(0)
        env.step(env.action_space.sample())
    finally:
        env.close()


@pytest.mark.parametrize("entry", APP_ENTRIES, ids=_ids(APP_ENTRIES))
def test_catalog_render_kind_matches_what_the_sdk_sees(entry: EnvEntry) -> None:
    env = make_env(entry.env_id, render_mode="rgb_array")
    try:
        env.reset(seed=0)
        assert render_kind_of(env) == (GRID if entry.render_kind is RenderKind.GRID else PIXELS)
    finally:
        env.close()


def _valid(space: spaces.Space, action: object) -> bool:
    if isinstance(space, spaces.Discrete):
        return isinstance(action, int) and space.contains(np.int64(action))
    assert isinstance(space, spaces.Box)
    array = np.asarray(action, dtype=space.dtype)
    return array.shape == space.shape and space.contains(array)


@pytest.mark.parametrize("entry", PLAYABLE_APP_ENTRIES, ids=_ids(PLAYABLE_APP_ENTRIES))
def test_key_maps_send_actions_of_the_env_action_space(entry: EnvEntry) -> None:
    env = make_env(entry.env_id)
    try:
        space = env.action_space
        for key in entry.keys:
            assert _valid(space, key.action), (entry.env_id, key)
        if entry.idle_action is not None:
            assert entry.realtime
            assert _valid(space, entry.idle_action)
        if isinstance(space, spaces.Box):
            # Held keys add up and are clipped: every combination stays valid.
            total = np.clip(
                sum(np.asarray(k.action, dtype=space.dtype) for k in entry.keys), space.low, space.high
            )
            assert space.contains(total.astype(space.dtype))
        env.reset(seed=0)
        for key in entry.keys:
            action = (
                np.asarray(key.action, dtype=space.dtype) if isinstance(space, spaces.Box) else key.action
            )
            _obs, _reward, terminated, truncated, _info = env.step(action)
            if terminated or truncated:
                env.reset()
    finally:
        env.close()


def test_key_names_are_unique_per_env() -> None:
    for entry in ENTRIES:
        names = [k.key for k in entry.keys]
        assert len(names) == len(set(names)), entry.env_id


@pytest.mark.parametrize("entry", OPTIONAL_ENTRIES, ids=_ids(OPTIONAL_ENTRIES))
def test_optional_family_ids_need_their_family(entry: EnvEntry) -> None:
    hint = env_family(entry.family).install_hint
    # Whether its module imports (what registers its ids), not only whether it is found.
    if not import_failure(entry.family) and (entry.env_id in gymnasium.registry or entry.agents):
        assert check_env(entry.env_id).installed
        return
    status = env_status(entry.env_id)
    assert not status.installed and status.entry is entry and status.family == entry.family
    with pytest.raises(UnknownEnv) as raised:
        check_env(entry.env_id)
    assert entry.env_id in str(raised.value)
    assert hint in str(raised.value)
    with pytest.raises(UnknownEnv, match=r"not installed|not registered"):
        make_env(entry.env_id)


def test_a_missing_family_module_gives_its_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real = check.import_failure

    def fake(family: str) -> str:
        return "ModuleNotFoundError: No module named 'minigrid'" if family == "minigrid" else real(family)

    monkeypatch.setattr(check, "import_failure", fake)
    for env_id in ("MiniGrid-Empty-5x5-v0", "BabyAI-GoToRedBall-v0"):
        with pytest.raises(UnknownEnv) as raised:
            check_env(env_id)
        message = str(raised.value)
        assert env_id in message and "needs the MiniGrid family" in message
        assert "reinstall gym_gui (`make install`) to restore MiniGrid" in message


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("FrozenLak-v1", "FrozenLake-v1"),
        ("frozenlake-v1", "FrozenLake-v1"),
        ("CartPol-v1", "CartPole-v1"),
        ("Taxi-v3", "Taxi-v4"),
        ("MiniGrid-Emtpy-5x5-v0", "MiniGrid-Empty-5x5-v0"),
    ],
)
def test_a_typo_is_rejected_with_the_right_suggestion(typo: str, meant: str) -> None:
    with pytest.raises(UnknownEnv) as raised:
        check_env(typo)
    message = str(raised.value)
    assert typo in message and "not registered" in message
    assert meant in message.split("did you mean", 1)[1]


def test_an_id_like_nothing_known_is_rejected_without_suggestions() -> None:
    with pytest.raises(UnknownEnv, match=r"'Zzzqqq-v9' is not registered in gymnasium [0-9.]+\.$"):
        check_env("Zzzqqq-v9")


def test_registered_ids_outside_the_catalog_are_accepted_with_their_family() -> None:
    status = check_env("BipedalWalkerHardcore-v3")
    assert status.installed and status.entry is None and status.family == "box2d"
    assert check_env("MiniGrid-LavaGapS5-v0").family == "minigrid"


def test_make_env_passes_render_mode_and_kwargs() -> None:
    env = make_env("FrozenLake-v1", render_mode="ansi", is_slippery=False)
    try:
        assert env.render_mode == "ansi"
        assert env.unwrapped.spec is not None
        env.reset(seed=0)
        _obs, _r, _t, _tr, info = env.step(2)
        assert info["prob"] == 1.0  # not slippery: the move is certain
    finally:
        env.close()


@pytest.mark.parametrize(
    ("env_id", "kwargs", "needles"),
    [
        ("FrozenLake-v1", {"is_slipery": False}, ["'is_slipery'", "is_slippery", "map_name"]),
        ("CartPole-v1", {"no_such_option": 1}, ["'no_such_option'", "sutton_barto_reward"]),
        ("MountainCar-v0", {"goal_velocity": 1.0, "speed": 2}, ["'speed'", "goal_velocity"]),
        ("FrozenLake-v1", {"render_mode": "human"}, ["render_mode is gym_gui's to set"]),
    ],
)
def test_an_argument_the_env_does_not_take_is_refused_naming_the_field(
    env_id: str, kwargs: dict[str, object], needles: list[str]
) -> None:
    with pytest.raises(ConfigError) as refused:
        check_env_kwargs(env_id, kwargs)
    message = str(refused.value)
    assert message.startswith(f"field 'env_kwargs': {env_id} ") and "\n" not in message
    for needle in needles:
        assert needle in message, message


def test_the_arguments_an_env_or_gymnasium_make_takes_are_accepted() -> None:
    check_env_kwargs("FrozenLake-v1", {"is_slippery": False, "map_name": "8x8", "max_episode_steps": 50})
    check_env_kwargs("MountainCar-v0", {"goal_velocity": 1.0, "disable_env_checker": True})
    check_env_kwargs("CartPole-v1", {})
    # A constructor that takes **kwargs passes them on: their names cannot be told here.
    check_env_kwargs("MiniGrid-Empty-5x5-v0", {"size": 6, "see_through_walls": True})


def test_core_catalog_and_sdk_do_not_import_gymnasium() -> None:
    # Reading entries, docs and families loads no family's module: only asking whether one is
    # installed (or discovering its entries) does.
    code = (
        "import sys; import gym_gui.core.envs, gym_gui_sdk.render, gym_gui_sdk.encoding; "
        "from gym_gui.envs.catalog import env_doc, env_entry, family_of; "
        "assert env_entry('CartPole-v1') and env_doc('CartPole-v1') and family_of('ALE/Tetris-v5'); "
        "bad = [m for m in ('gymnasium', 'minigrid', 'ale_py', 'gym_gui.envs.check') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    sdk_code = (
        "import sys; import gym_gui_sdk.render, gym_gui_sdk.encoding; "
        "bad = [m for m in sys.modules if m == 'gym_gui' or m.startswith('gym_gui.')]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", sdk_code], check=True)
