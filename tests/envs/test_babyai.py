"""BabyAI's levels in the MiniGrid family: grid worlds whose mission is text, in the observation and in
the grid description the window and the LLM worker read."""

from __future__ import annotations

import contextlib
import io

import pytest
from gym_gui_sdk import render

from gym_gui.core.envs import EnvEntry, RenderKind
from gym_gui.envs.catalog import env_doc, env_family, family_entries
from gym_gui.envs.check import make_env
from gym_gui.envs.families import minigrid

BABYAI = [entry for entry in family_entries("minigrid") if entry.env_id.startswith("BabyAI-")]


def test_babyai_levels_are_minigrid_entries_played_with_its_keys() -> None:
    assert [entry.env_id for entry in BABYAI] == [env_id for env_id, _title in minigrid.BABYAI]
    assert len(BABYAI) == 7 and "BabyAI-" in env_family("minigrid").prefixes
    for entry in BABYAI:
        assert entry.render_kind is RenderKind.GRID and not entry.realtime
        assert entry.keys == minigrid.KEYS and entry.human_playable


@pytest.mark.parametrize("entry", BABYAI, ids=[entry.env_id for entry in BABYAI])
def test_a_levels_mission_is_text_in_its_observation_and_its_doc_says_so(entry: EnvEntry) -> None:
    observation_section = env_doc(entry.env_id).split("## Observation", 1)[1].split("\n## ", 1)[0]
    assert '`obs["mission"]`' in observation_section and "as text" in observation_section
    env = make_env(entry.env_id)
    try:
        missions = set()
        for seed in range(3):
            # A level drawn again prints "Sampling rejected: …"; the test's output need not show it.
            with contextlib.redirect_stdout(io.StringIO()):
                observation, _info = env.reset(seed=seed)
            mission = observation["mission"]
            assert isinstance(mission, str) and mission == env.unwrapped.mission  # type: ignore[attr-defined]
            assert render.grid_description(env)["mission"] == mission
            missions.add(mission)
        # A level of one fixed sentence, or one whose sentence is drawn at each reset.
        assert (missions == {"go to the red ball"}) == (entry.env_id == "BabyAI-GoToRedBallGrey-v0")
    finally:
        env.close()
