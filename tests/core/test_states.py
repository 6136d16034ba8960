"""The one "has this run ended" rule: RunState.terminal, read from the transition table."""

from __future__ import annotations

import ast
from pathlib import Path

from gym_gui.core.states import TRANSITIONS, RunState

SRC = Path(__file__).resolve().parents[2] / "src" / "gym_gui"
OWNER = SRC / "core" / "states.py"
FINAL = {RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST, RunState.PRUNED}


def test_a_run_has_ended_in_exactly_the_five_final_states() -> None:
    assert {state for state in RunState if state.terminal} == FINAL


def test_a_state_is_final_exactly_when_no_state_follows_it() -> None:
    for state in RunState:
        assert state.terminal == (not TRANSITIONS[state]), state


def test_every_state_is_queued_active_or_ended_and_only_one_of_them() -> None:
    assert {state for state in RunState if state.active} == {
        RunState.STARTING,
        RunState.RUNNING,
        RunState.PAUSED,
    }
    for state in RunState:
        assert [state is RunState.QUEUED, state.active, state.terminal].count(True) == 1, state


# ---------------------------------------------------------------- no other module keeps its own list


def _final_states_named(node: ast.AST) -> set[str]:
    """The final states a set, tuple or list literal spells out (as RunState members or strings)."""
    if not isinstance(node, ast.Set | ast.Tuple | ast.List):
        return set()
    named = set()
    for element in node.elts:
        if (
            isinstance(element, ast.Attribute)
            and isinstance(element.value, ast.Name)
            and element.value.id == "RunState"
            and element.attr in FINAL
        ):
            named.add(element.attr)
        elif isinstance(element, ast.Constant) and element.value in FINAL:
            named.add(str(element.value))
    return named


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = [(node.lineno, named) for node in ast.walk(tree) if len(named := _final_states_named(node)) >= 2]
    return [f"{path.name}:{line} lists {', '.join(sorted(named))}" for line, named in sorted(found)]


def test_only_core_states_lists_the_final_states() -> None:
    offenders = [
        offence for path in sorted(SRC.rglob("*.py")) if path != OWNER for offence in _offences(path)
    ]
    assert not offenders, "ask RunState.terminal instead:\n" + "\n".join(offenders)


def test_the_scan_sees_what_it_should(tmp_path: Path) -> None:
    # The check above would pass vacuously if the scan missed such lists: prove it catches them.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "done = state in (RunState.COMPLETED, RunState.FAILED)\n"
        "phase_done = phase in (Phase.COMPLETED, Phase.FAILED)\n"
        'ENDED = {"CANCELLED", "LOST", "COMPLETED"}\n'
        "ok = state in (RunState.COMPLETED,)\n"
        'COLOURS = {"FAILED": "red", "LOST": "brown"}\n'
    )
    assert _offences(sample) == [
        "sample.py:1 lists COMPLETED, FAILED",
        "sample.py:3 lists CANCELLED, COMPLETED, LOST",
    ]
