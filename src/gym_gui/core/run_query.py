"""Which runs a listing asks for (filters, an order, a page) and the page it gets back."""

from __future__ import annotations

from dataclasses import dataclass

from gym_gui.core.errors import ConfigError
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState

# What a listing may be ordered by; every order ends on the run id, so pages never overlap.
RUN_SORTS = ("created", "worker", "env", "state", "sweep", "run")


@dataclass(frozen=True)
class RunQuery:
    """The runs a listing asks for: those matching every filter given, in ``sort`` order, a page of
    at most ``limit`` (0: every one) starting after the cursor ``after`` (a page's ``next``)."""

    include_archived: bool = False
    states: tuple[RunState, ...] = ()  # any of these (none: every state)
    worker: str = ""
    env_id: str = ""
    sweep_id: str = ""
    text: str = ""  # in the run id, worker, env, sweep or reason, whatever the case
    sort: str = "created"
    descending: bool = False
    limit: int = 0
    after: str = ""

    def __post_init__(self) -> None:
        if self.sort not in RUN_SORTS:
            raise ConfigError(f"sort: {self.sort!r} is not one of {', '.join(RUN_SORTS)}")
        if self.limit < 0:
            raise ConfigError(f"limit: {self.limit} is below 0 (0 lists every run)")


@dataclass(frozen=True)
class RunPage:
    """One page of a listing: its runs, how many match on every page, and the cursor of the next."""

    runs: list[RunRecord]
    total: int
    next: str = ""  # empty: this page is the last


def parse_states(names: str | list[str] | tuple[str, ...], field: str) -> tuple[RunState, ...]:
    """The run states of ``names`` (comma-separated text or a list, any case).

    Raises:
        ConfigError: a name is no run state; the message names ``field`` and the states there are.
    """
    parts = names.split(",") if isinstance(names, str) else names
    states = []
    for part in (name.strip() for name in parts):
        if not part:
            continue
        try:
            states.append(RunState(part.upper()))
        except ValueError:
            known = ", ".join(state.value for state in RunState)
            raise ConfigError(f"{field}: {part!r} is not a run state ({known})") from None
    return tuple(dict.fromkeys(states))
