"""The Meta-World family against the installed metaworld: a catalog entry per task, each the env
Meta-World's MT1 makes for that task, refusing arguments Meta-World does not take."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gym_gui_sdk.render import PIXELS, render_kind_of

from gym_gui.core.errors import ConfigError
from gym_gui.envs.catalog import (
    env_doc,
    env_entry,
    family_entries,
    family_installed,
    family_of,
    import_failure,
)
from gym_gui.envs.check import check_env_kwargs, make_env
from gym_gui.envs.families.metaworld import TASKS, task_id

ENTRIES = family_entries("metaworld")
# Imports metaworld as gym_gui does: with the family's MUJOCO_GL=egl set first, and its ids registered.
assert family_installed("metaworld")


def test_every_meta_world_task_is_an_entry_with_its_doc() -> None:
    import metaworld  # imported by the family, as the app and a worker import it

    assert list(TASKS) == list(metaworld.ALL_V3_ENVIRONMENTS)
    assert [entry.env_id for entry in ENTRIES] == [f"gym_gui/MetaWorld-{task}" for task in TASKS]
    assert not import_failure("metaworld")  # the family's module registers its ids when imported
    for entry in ENTRIES:
        assert entry.env_id in gymnasium.registry
        assert not entry.human_playable and entry.render_kind.value == PIXELS
    door = env_entry("gym_gui/MetaWorld-door-open-v3")
    assert door is not None and door.title == "Meta-World door open"
    doc = env_doc(door.env_id)
    assert "open a door on a revolving hinge" in doc and 'env_name="door-open-v3"' in doc
    assert family_of("Meta-World/MT10") == "metaworld"


def test_a_task_id_makes_the_env_mt1_makes_for_that_task() -> None:
    ours = make_env(task_id("door-open-v3"), seed=3)
    theirs = gymnasium.make("Meta-World/MT1", env_name="door-open-v3", seed=3)
    try:
        assert type(ours.unwrapped) is type(theirs.unwrapped)
        assert type(ours.unwrapped).__name__ == "SawyerDoorEnvV3"
        first, _ = ours.reset(seed=3)
        assert np.array_equal(first, theirs.reset(seed=3)[0]) and first.shape == (39,)
        assert ours.action_space == gymnasium.spaces.Box(-1, 1, (4,), np.float32)
    finally:
        ours.close()
        theirs.close()


def test_a_task_draws_frames_through_egl() -> None:
    env = make_env(task_id("reach-v3"), render_mode="rgb_array")
    try:
        env.reset(seed=0)
        assert render_kind_of(env) == PIXELS
        frame = env.render()
        assert frame.shape == (480, 480, 3) and frame.any()  # type: ignore[union-attr]
    finally:
        env.close()


def test_an_argument_meta_world_does_not_take_is_refused_naming_it() -> None:
    check_env_kwargs(task_id("reach-v3"), {"terminate_on_success": True, "seed": 1})
    with pytest.raises(ConfigError, match=r"takes no argument 'env_name'; it takes task, "):
        check_env_kwargs(task_id("reach-v3"), {"env_name": "push-v3"})
