"""The Atari family against the installed ale-py: every game it registers, key maps from ALE's minimal action sets, docs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import gymnasium
import pytest

from gym_gui.core.envs import EnvEntry, RenderKind
from gym_gui.core.errors import UnknownEnv
from gym_gui.envs import ale
from gym_gui.envs.ale_actions import MINIMAL_ACTIONS
from gym_gui.envs.catalog import catalog_by_family, env_doc, env_entry, family_installed
from gym_gui.envs.check import make_env
from gym_gui.ui.seat_control import chord_action

ENTRIES = ale.entries()
HAND_WRITTEN = ("ALE/Pong-v5", "ALE/Breakout-v5", "ALE/SpaceInvaders-v5")
PART_OF_KEY = {"Up": "UP", "Down": "DOWN", "Left": "LEFT", "Right": "RIGHT", "Space": "FIRE"}


def _ids(entries: tuple[EnvEntry, ...]) -> list[str]:
    return [entry.env_id for entry in entries]


def test_every_v5_game_ale_py_registers_is_an_entry_by_title() -> None:
    registered = {env_id for env_id in gymnasium.registry if re.fullmatch(r"ALE/\w+-v5", env_id)}
    assert len(ENTRIES) >= 100
    assert set(_ids(ENTRIES)) == registered
    titles = [entry.title for entry in ENTRIES]
    assert titles == sorted(titles, key=str.lower) and len(set(titles)) == len(titles)
    for entry in ENTRIES:
        assert entry.family == "atari" and entry.render_kind is RenderKind.PIXELS
        assert entry.realtime and entry.human_playable and entry.play_fps == ale.FRAME_RATE
        assert dict(entry.play_kwargs) == {"frameskip": 1}
    assert env_entry("ALE/MontezumaRevenge-v5").title == "Montezuma's Revenge"  # type: ignore[union-attr]
    assert env_entry("ALE/SpaceInvaders-v5").title == "Space Invaders"  # type: ignore[union-attr]
    assert env_entry("ALE/NoSuchGame-v5") is None


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_a_key_map_sends_only_actions_of_its_games_minimal_set(entry: EnvEntry) -> None:
    meanings = ale.minimal_actions(ale.rom_of(entry.env_id))
    actions = range(len(meanings))
    assert entry.idle_action == (meanings.index("NOOP") if "NOOP" in meanings else None)
    names = [binding.key for binding in entry.keys]
    assert len(names) == len(set(names)) and set(names) <= set(PART_OF_KEY)
    assert all(binding.action in actions for binding in entry.keys)
    # Every action but NOOP is one chord, whose keys are its joystick parts (Pong's paddle moves on Up
    # and Down, which ALE calls RIGHT and LEFT).
    parts_of_key = (
        {**PART_OF_KEY, "Up": "RIGHT", "Down": "LEFT"} if entry.env_id == "ALE/Pong-v5" else PART_OF_KEY
    )
    assert sorted(chord.action for chord in entry.chords) == [a for a in actions if meanings[a] != "NOOP"]
    for chord in entry.chords:
        assert set(chord.keys) <= set(names)
        assert {parts_of_key[key] for key in chord.keys} == ale.parts(meanings[int(chord.action)])
    for binding in entry.keys:
        alone = [chord for chord in entry.chords if chord.keys == (binding.key,)]
        assert binding.action == (alone[0].action if alone else binding.action)
        if not alone:
            assert binding.description.startswith("nothing alone")


def test_the_kept_minimal_action_sets_are_alles_own() -> None:
    """Loads every ROM (a quarter of a second each): the table must be rewritten for a new ale-py."""
    games = ale.games()
    assert {game.rom for game in games} == set(MINIMAL_ACTIONS)
    for game in games:
        assert ale.minimal_actions(game.rom) == ale.read_minimal_actions(game.rom), game.env_id


def test_the_v5_env_takes_the_key_maps_actions() -> None:
    entry = env_entry("ALE/Seaquest-v5")
    assert entry is not None
    env = gymnasium.make(entry.env_id, **dict(entry.play_kwargs))
    try:
        assert env.action_space.n == 18  # type: ignore[attr-defined]
        meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
        assert tuple(meanings) == ale.minimal_actions("seaquest")
        env.reset(seed=0)
        for chord in entry.chords:
            env.step(chord.action)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("env_id", "held", "meaning"),
    [
        ("ALE/Seaquest-v5", ["Up", "Right", "Space"], "UPRIGHTFIRE"),
        ("ALE/Seaquest-v5", ["Space", "Down", "Left"], "DOWNLEFTFIRE"),
        ("ALE/Seaquest-v5", ["Up", "Right"], "UPRIGHT"),
        ("ALE/Seaquest-v5", ["Up", "Down"], "DOWN"),  # no such move: the key pressed last
        ("ALE/Seaquest-v5", ["Up", "Down", "Space"], "DOWNFIRE"),
        # Tutankham has UPFIRE and RIGHTFIRE but no UPRIGHT(FIRE): the key pressed first is left out.
        ("ALE/Tutankham-v5", ["Up", "Right", "Space"], "RIGHTFIRE"),
        ("ALE/Tutankham-v5", ["Right", "Up", "Space"], "UPFIRE"),
        ("ALE/Tutankham-v5", ["Up", "Right"], "RIGHT"),
        # Atlantis fires sideways but never moves: Left alone is NOOP, with Space LEFTFIRE.
        ("ALE/Atlantis-v5", ["Left"], "NOOP"),
        ("ALE/Atlantis-v5", ["Left", "Space"], "LEFTFIRE"),
        # Breakout has no combined moves: the key pressed last.
        ("ALE/Breakout-v5", ["Left", "Space"], "FIRE"),
        ("ALE/Breakout-v5", ["Space", "Left"], "LEFT"),
        ("ALE/Pong-v5", ["Up", "Space"], "RIGHTFIRE"),
        ("ALE/Pong-v5", [], "NOOP"),
    ],
)
def test_held_keys_send_the_largest_chord_the_game_has(env_id: str, held: list[str], meaning: str) -> None:
    entry = env_entry(env_id)
    assert entry is not None
    meanings = ale.minimal_actions(ale.rom_of(env_id))
    action = chord_action(entry, held)
    assert action is not None and meanings[int(action)] == meaning  # type: ignore[arg-type]


def test_a_game_without_noop_waits_when_no_chord_is_held() -> None:
    entry = env_entry("ALE/VideoCheckers-v5")
    assert entry is not None and entry.idle_action is None
    assert chord_action(entry, ["Up"]) is None
    assert ale.minimal_actions("video_checkers")[chord_action(entry, ["Up", "Left"])] == "UPLEFT"  # type: ignore[index]


@pytest.mark.parametrize("env_id", HAND_WRITTEN)
def test_the_catalogs_atari_entries_and_docs_are_what_ale_makes(env_id: str) -> None:
    entry = env_entry(env_id)
    assert entry is not None and entry == ale.entry(env_id)
    # The hand-written doc beside the family's module, not the one made from the entry.
    doc = env_doc(env_id)
    assert doc != ale.describe(entry)
    for heading, body in ale.doc_sections(entry).items():
        assert f"{heading}\n{body}\n" in doc, (env_id, heading)


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_every_game_has_a_doc_with_its_actions_and_controls(entry: EnvEntry) -> None:
    doc = env_doc(entry.env_id)
    assert doc.startswith(f"# {entry.title}\n") and f"`{entry.env_id}`" in doc
    for heading in (
        "## Observation",
        "## Actions",
        "## Reward",
        "## Episode end",
        "## Install",
        "## Controls",
    ):
        assert heading in doc, (entry.env_id, heading)
    assert "`(210, 160, 3)` RGB" in doc and "`gym-gui envs install atari`" in doc
    meanings = ale.minimal_actions(ale.rom_of(entry.env_id))
    actions = doc.split("## Actions", 1)[1].split("## ", 1)[0]
    assert f"`Discrete({len(meanings)})`" in actions
    for index, meaning in enumerate(meanings):
        assert f"| `{index}` | {meaning} |" in actions
    controls = doc.split("## Controls", 1)[1]
    for binding in entry.keys:
        assert f"| {binding.key} | `{binding.action}` | {binding.description} |" in controls
    for chord in entry.chords:
        if len(chord.keys) > 1:
            assert f"| {' + '.join(chord.keys)} | `{chord.action}` |" in controls


def test_an_action_name_that_is_no_joystick_move_is_refused() -> None:
    assert ale.parts("NOOP") == frozenset()
    assert ale.parts("UPLEFTFIRE") == {"UP", "LEFT", "FIRE"}
    for name in ("", "RESET", "LEFTUP", "FIREUP"):
        with pytest.raises(ValueError, match="not an ALE joystick action"):
            ale.parts(name)


def test_the_catalog_lists_every_game_with_ale_py_and_only_the_install_line_without() -> None:
    assert tuple(catalog_by_family()["atari"]) == ENTRIES and family_installed("atari")
    # A real interpreter in which ale_py cannot be imported.
    code = (
        "import sys, json; sys.modules['ale_py'] = None\n"
        "from gym_gui.envs.catalog import catalog_by_family, env_family, family_installed\n"
        "print(json.dumps([[name, len(entries), family_installed(name), env_family(name).install_hint]"
        " for name, entries in catalog_by_family().items()]))"
    )
    listing = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True).stdout)
    families = {name: (count, installed, hint) for name, count, installed, hint in listing}
    assert families["atari"] == (0, False, "install it with `gym-gui envs install atari`")
    assert families["toy_text"][:2] == (5, True)


def test_an_ale_id_whose_rom_ale_py_lacks_is_refused_in_one_line() -> None:
    env_id = "ALE/NoSuchRom-v5"
    gymnasium.register(env_id, entry_point="ale_py.env:AtariEnv", kwargs={"game": "no_such_rom"})
    try:
        assert env_id not in {entry.env_id for entry in ale.entries()}
        with pytest.raises(UnknownEnv) as refused:
            make_env(env_id)
        message = str(refused.value)
        assert message.startswith(f"environment {env_id!r} cannot be made: Rom no_such_rom not supported")
        assert "\n" not in message
    finally:
        del gymnasium.registry[env_id]
