"""A Spade BDI Q-table as an operator: the plugin's plan started as a real process in the spade_bdi
bundle, its card, greedy actions, ties broken per slot, and the tables and inputs it refuses."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gym_gui_sdk.operator import OperatorError, OperatorProcess, OperatorRefused, SpaceSpec, Turn
from gym_gui_spade_bdi_worker.checkpoint import QTableFile
from gym_gui_spade_bdi_worker.plugin import SpadeBDILauncher

from gym_gui.core.errors import ConfigError
from gym_gui.storage.home import Home
from gym_gui.workers import LaunchContext, OperatorPlan, OperatorSource, worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import start_operator
from workers.spade_bdi_worker.tests.conftest import bdi_config

LAKE = ["SFFF", "FHFH", "FFFH", "HFFG"]
# Rows 0 and 1 tie (all four, and actions 1 and 3); the others have one best action.
TIES = {0: (0, 1, 2, 3), 1: (1, 3)}


def known_table() -> np.ndarray:
    q = np.random.default_rng(7).normal(size=(16, 4))
    q[0] = 0.0
    q[1] = [0.1, 0.5, 0.2, 0.5]
    return q


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "run" / "checkpoints" / "q_table.json"
    table = QTableFile(
        q=known_table(),
        env_id="FrozenLake-v1",
        env_kwargs={"map_name": "4x4", "is_slippery": False},
        map=LAKE,
        episode=300,
        seed=0,
    )
    table.save(path)
    return path


@pytest.fixture
def launcher(spade_bundle: None) -> SpadeBDILauncher:
    bundles = worker_catalog().bundle_directory(Path(SHARED_BUNDLES))
    return SpadeBDILauncher(LaunchContext(Home(), bundles))


def plan_of(launcher: SpadeBDILauncher, path: Path) -> OperatorPlan:
    return launcher.operator(OperatorSource("bdi-run-1", bdi_config(), path, "checkpoints/q_table.json"))


@pytest.fixture
def table_operator(
    launcher: SpadeBDILauncher, table_path: Path, tmp_path: Path
) -> Iterator[tuple[OperatorPlan, OperatorProcess]]:
    plan = plan_of(launcher, table_path)
    operator = start_operator(plan, tmp_path)
    try:
        yield plan, operator
    finally:
        operator.close()


def test_the_card_says_what_the_table_acts_on_before_and_after_loading_it(
    table_operator: tuple[OperatorPlan, OperatorProcess],
) -> None:
    plan, operator = table_operator
    assert operator.card == plan.card
    card = plan.card
    assert (card.name, card.kind, card.source_run) == ("q-table", "spade_bdi", "bdi-run-1")
    assert card.observation == SpaceSpec("Discrete", n=16) and card.action == SpaceSpec("Discrete", n=4)
    assert card.env_ids == ("FrozenLake-v1",) and card.deterministic
    assert card.inputs == ("observation", "grid")  # the grid tells another map of the same size
    assert plan.argv[1:3] == ["-m", "gym_gui_spade_bdi_worker.operator"] and not plan.secrets
    assert card.problem("CliffWalking-v1", SpaceSpec("Discrete", n=48), SpaceSpec("Discrete", n=4)) == (
        "q-table on FrozenLake-v1 expects Discrete(16) observations; CliffWalking-v1 gives Discrete(48)"
    )


def test_the_operator_process_never_imports_spade(launcher: SpadeBDILauncher) -> None:
    check = (
        "import json, sys, gym_gui_spade_bdi_worker.operator; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    run = subprocess.run([str(launcher.python()), "-c", check], capture_output=True, text=True, check=True)
    loaded = set(json.loads(run.stdout))
    assert "numpy" in loaded and "gym_gui_sdk" in loaded
    assert not {"spade", "spade_bdi", "pyjabber", "gymnasium"} & loaded


def test_the_table_acts_greedily_and_ties_follow_the_slots_own_seed(
    table_operator: tuple[OperatorPlan, OperatorProcess],
) -> None:
    _plan, operator = table_operator
    q = known_table()
    operator.begin(0, 5)
    untied = [s for s in range(16) if s not in TIES]
    grid = {"game": "frozenlake", "tiles": LAKE, "agent": [0, 0]}
    first = operator.act([Turn(0, untied[0], grid=grid)])
    decisions = first + operator.act([Turn(0, s) for s in untied[1:]])
    assert [d.action for d in decisions] == [int(np.argmax(q[s])) for s in untied]
    assert all(d.note == {} for d in decisions)

    def tie_actions(slots: list[tuple[int, int | None]], turns: int) -> dict[int, list[int]]:
        for slot, seed in slots:
            operator.begin(slot, seed)
        chosen: dict[int, list[int]] = {slot: [] for slot, _ in slots}
        for n in range(turns):
            state = n % 2
            batch = [Turn(slot, state, grid=grid) for slot, _ in slots]
            for (slot, _), decision in zip(slots, operator.act(batch), strict=True):
                assert decision.action in TIES[state]
                chosen[slot].append(decision.action)
        for slot, _ in slots:
            operator.end(slot)
        return chosen

    alone = tie_actions([(1, 11)], 24)[1]
    together = tie_actions([(1, 11), (2, 11), (3, 12)], 24)
    # The same seed gives the same ties, whoever else shares the process; another seed others.
    assert together[1] == together[2] == alone
    assert together[3] != alone
    assert len(set(alone[0::2])) > 1  # the all-equal row does draw


def test_observations_that_are_no_state_and_another_map_are_refused_naming_them(
    table_operator: tuple[OperatorPlan, OperatorProcess],
) -> None:
    _plan, operator = table_operator
    operator.begin(0, 1)
    for observation in ([0.5, 1.0], 16, 2.0, True):
        with pytest.raises(
            OperatorError,
            match=re.escape(f"acts on states 0 to 15, got the observation {observation!r}") + "$",
        ):
            operator.act([Turn(0, observation)])
    operator.begin(1, 1)
    other = ["SFFF", "FFFF", "FFFH", "HFFG"]
    with pytest.raises(
        OperatorError,
        match="was learned on the map SFFF/FHFH/FFFH/HFFG, this run's map is SFFF/FFFF/FFFH/HFFG",
    ):
        operator.act([Turn(1, 0, grid={"game": "frozenlake", "tiles": other, "agent": [0, 0]})])


def test_a_damaged_table_is_refused_by_the_plugin_and_by_the_process_naming_it(
    launcher: SpadeBDILauncher, table_path: Path, tmp_path: Path
) -> None:
    plan = plan_of(launcher, table_path)
    data = json.loads(table_path.read_text())
    data["q"][5][2] += 1.0
    table_path.write_text(json.dumps(data))
    expected = rf"Q-table {table_path} is corrupt: its table does not match its sha256"
    with pytest.raises(ConfigError, match=expected):
        plan_of(launcher, table_path)
    with pytest.raises(OperatorRefused, match=rf"^q-table on FrozenLake-v1: {expected}"):
        start_operator(plan, tmp_path)
    with pytest.raises(ConfigError, match="run bdi-run-1 has no Q-table to play"):
        launcher.operator(OperatorSource("bdi-run-1", bdi_config(), None))
