"""Environment families as plugins: a package adds its own, broken ones are listed, `gym-gui envs` lists
the catalog with what each env needs, and `gym-gui envs install` installs only what a family declares."""

from __future__ import annotations

import importlib.metadata
import json
import textwrap
from pathlib import Path

import pytest

from gym_gui.envs.catalog import ENTRY_POINT_GROUP, env_families, load_families, records_dir
from tests.support import assert_one_line_error, gym_gui, on_sys_path, plugin_distribution

# A third-party family: its entries, key map and doc beside it; its env registered on import.
FAMILY_MODULE = textwrap.dedent(
    """\
    from gym_gui.core.envs import EnvFamily, EnvEntry, KeyBinding, RenderKind, env_entry_of

    KEYS = (KeyBinding("Left", 0, "move left"), KeyBinding("Right", 2, "move right"))
    FAMILY = EnvFamily(
        name="tp_lakes",
        title="Third-party lakes",
        import_module="tp_lakes_env",
        entries=(env_entry_of("TpLake-v0", "tp_lakes", "A tiny lake", RenderKind.GRID, realtime=False, keys=KEYS),),
        packages=("tp-lakes-env==1.0",),
        docs="tp_lakes",
        rank=5,
    )
    # Broken ones: not a family, a name gym_gui's Atari family has, an id Toy Text lists, the wrong family.
    NOT_A_FAMILY = {"name": "dict"}
    SECOND_ATARI = EnvFamily(name="atari", title="Another Atari", import_module="ale_py")
    SECOND_TAXI = EnvFamily(
        name="tp_taxi",
        title="Taxi again",
        import_module="gymnasium",
        entries=(env_entry_of("Taxi-v4", "tp_taxi", "Taxi", RenderKind.GRID, realtime=False),),
    )
    MISLABELLED = EnvFamily(
        name="tp_mislabelled",
        title="Mislabelled",
        import_module="gymnasium",
        entries=(env_entry_of("TpOther-v0", "toy_text", "Other", RenderKind.GRID, realtime=False),),
    )
    # A family whose package no index has: its install must fail and keep nothing.
    MISSING = EnvFamily(
        name="tp_missing",
        title="Missing",
        import_module="gym_gui_no_such_module",
        packages=("gym-gui-no-such-distribution==9.9.9",),
    )
    """
)
ENV_MODULE = textwrap.dedent(
    """\
    import gymnasium

    gymnasium.register("TpLake-v0", entry_point="gymnasium.envs.toy_text.frozen_lake:FrozenLakeEnv",
                       kwargs={"desc": ["SF", "HG"], "is_slippery": False}, max_episode_steps=10)
    """
)
DOC = "# A tiny lake\n\n`TpLake-v0` · Third-party lakes\n\nA 2x2 lake.\n"
FAMILIES = {"tp_lakes": "tp_lakes:FAMILY"}
BROKEN = {
    "tp_not_a_family": "tp_lakes:NOT_A_FAMILY",
    "tp_second_atari": "tp_lakes:SECOND_ATARI",
    "tp_taxi": "tp_lakes:SECOND_TAXI",
    "tp_mislabelled": "tp_lakes:MISLABELLED",
    "tp_broken": "tp_lakes_broken:FAMILY",
}


def family_distribution(root: Path, entry_points: dict[str, str], *, with_env: bool = True) -> Path:
    files = {
        "tp_lakes/__init__.py": FAMILY_MODULE,
        "tp_lakes/tplake-v0.md": DOC,
        "tp_lakes_broken.py": "import a_module_that_is_not_installed\n",
    }
    if with_env:
        files["tp_lakes_env.py"] = ENV_MODULE
    return plugin_distribution(root, "third-party-families", ENTRY_POINT_GROUP, entry_points, files)


def test_gym_guis_own_families_load_in_catalog_order() -> None:
    loaded = load_families()
    assert loaded.broken == ()
    assert (
        list(loaded.by_name)
        == list(env_families())
        == [
            "toy_text",
            "classic_control",
            "box2d",
            "mujoco",
            "minigrid",
            "atari",
            "crafter",
            "minihack",
            "highway",
            "vizdoom",
            "metaworld",
            "dm_control",
            "procgen",
            "pettingzoo",
        ]
    )


def test_a_plugin_family_joins_the_catalog_and_broken_ones_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_sys_path(monkeypatch, family_distribution(tmp_path / "site", {**FAMILIES, **BROKEN}))
    loaded = load_families()
    # gym_gui's own families are all there, and the plugin's goes by its rank.
    assert list(loaded.by_name)[:2] == ["tp_lakes", "toy_text"]
    assert loaded.by_name["atari"].title == "Atari (ALE)"
    errors = {broken.name: broken.error for broken in loaded.broken}
    assert set(errors) == set(BROKEN)
    assert errors["tp_not_a_family"] == "is a dict, not a gym_gui.core.envs.EnvFamily"
    assert errors["tp_second_atari"].startswith("declares family 'atari', already taken by gym-gui: ")
    assert errors["tp_taxi"].startswith("lists Taxi-v4, already listed by gym-gui: ")
    assert errors["tp_mislabelled"] == "lists TpOther-v0 as family 'toy_text', not its own 'tp_mislabelled'"
    assert (
        "ModuleNotFoundError" in errors["tp_broken"]
        and "a_module_that_is_not_installed" in errors["tp_broken"]
    )


def _envs(home: Path, *args: str) -> dict[str, object]:
    listed = gym_gui("envs", *args, "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def test_envs_lists_a_plugin_family_with_its_doc_and_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = family_distribution(tmp_path / "site", {**FAMILIES, **BROKEN})
    monkeypatch.setenv("PYTHONPATH", str(site))
    home = tmp_path / "home"
    listed = _envs(home, "--family", "tp_lakes")
    assert listed["envs"] == [
        {
            "env_id": "TpLake-v0",
            "family": "tp_lakes",
            "title": "A tiny lake",
            "installed": True,
            "human_playable": True,
            "needs": "",
        }
    ]
    assert {broken["name"] for broken in listed["broken"]} == set(BROKEN)  # type: ignore[index, union-attr]
    table = gym_gui("envs", "--family", "tp_lakes", home=home)
    assert "TpLake-v0" in table.stdout and "installed" in table.stdout
    assert sum("broken family plugin" in line for line in table.stdout.splitlines()) == len(BROKEN)

    # Without its module the family is listed with its install line, and --installed leaves it out.
    bare = family_distribution(tmp_path / "bare", FAMILIES, with_env=False)
    monkeypatch.setenv("PYTHONPATH", str(bare))
    needs = _envs(home, "--family", "tp_lakes")["envs"]
    assert [(e["installed"], e["needs"]) for e in needs] == [  # type: ignore[index, union-attr]
        (False, "install it with `gym-gui envs install tp_lakes`")
    ]


def test_envs_json_is_only_json_though_pygame_is_imported_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gymnasium hides pygame's banner; a CLI that imports pygame before it (asking whether Toy Text is
    # installed) must too. This process imported gymnasium, which set the variable.
    monkeypatch.delenv("PYGAME_HIDE_SUPPORT_PROMPT", raising=False)
    listed = _envs(tmp_path / "home")
    assert {"toy_text", "highway"} <= {family["name"] for family in listed["families"]}  # type: ignore[union-attr]


def test_envs_installed_lists_only_installed_families(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(family_distribution(tmp_path / "bare", FAMILIES, with_env=False)))
    listed = _envs(tmp_path / "home", "--installed")["envs"]
    assert "TpLake-v0" not in {env["env_id"] for env in listed}  # type: ignore[index, union-attr]
    families = {env["family"] for env in listed}  # type: ignore[index, union-attr]
    assert {"toy_text", "classic_control", "box2d", "mujoco", "minigrid"} <= families
    assert "procgen" not in families
    assert all(env["installed"] and env["needs"] == "" for env in listed)  # type: ignore[index, union-attr]


def test_a_family_that_cannot_install_here_or_does_not_exist_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert_one_line_error(
        gym_gui("envs", "install", "procgen", home=home),
        "family procgen cannot be installed here: procgen-mirror 0.10.7, Procgen's only wheels for Python 3.11, "
        "needs numpy < 2, and gym_gui runs numpy 2.4",
    )
    assert_one_line_error(
        gym_gui("envs", "install", "nope", home=home),
        "no environment family 'nope'; the families are toy_text, classic_control",
    )


def test_a_failed_install_says_pips_error_and_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = family_distribution(tmp_path / "site", {"tp_missing": "tp_lakes:MISSING"})
    monkeypatch.setenv("PYTHONPATH", str(site))
    before = installed_distributions()
    failed = gym_gui("envs", "install", "tp_missing", home=tmp_path / "home")
    assert_one_line_error(
        failed,
        "family tp_missing: pip could not install gym-gui-no-such-distribution==9.9.9: ERROR: ",
        "(nothing was kept; log: ",
    )
    assert not (records_dir() / "tp_missing.txt").exists()
    assert installed_distributions() == before


def installed_distributions() -> set[tuple[str, str]]:
    return {(str(dist.metadata["Name"]), dist.version) for dist in importlib.metadata.distributions()}
