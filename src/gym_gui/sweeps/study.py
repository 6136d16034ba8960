"""Reading an Optuna study, one a gym_gui sweep made or one made elsewhere, without changing it.

A sweep's study lives in Optuna's own RDB storage, so Optuna's tools (``optuna-dashboard``, a
notebook) open it as they would any study; studies made by ``cleanrl_utils.tuner`` or a plain
Optuna script are read the same way. gym_gui's own knowledge of a study is a few user attributes
(:data:`STUDY_SWEEP_ATTR`, :data:`STUDY_CONFIG_ATTR`, :data:`TRIAL_RUNS_ATTR`); a study without
them is shown all the same, only without the link from a trial to its runs.

Every reader here opens the storage read-only where the database allows it (SQLite in ``mode=ro``),
and never creates tables: attaching a study cannot damage it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym_gui.core.config import redact_url
from gym_gui.core.errors import GymGuiError

if TYPE_CHECKING:  # optuna takes ~0.5 s to import: only the functions that read a study bring it
    import optuna

# The study's user attributes gym_gui writes (a sweep's study) ...
STUDY_SWEEP_ATTR = "gym_gui.sweep"  # the sweep id
STUDY_CONFIG_ATTR = "gym_gui.config"  # the base RunConfig (JSON form) every trial starts from
STUDY_SPEC_ATTR = "gym_gui.spec"  # what a daemon joining the study must agree on (space, objective, ...)
# ... and the trial's: the run ids that played it (one per seed), in seed order, and the id of the
# home whose daemon plays it (a study on PostgreSQL is shared by several daemons).
TRIAL_RUNS_ATTR = "gym_gui.runs"
TRIAL_HOME_ATTR = "gym_gui.home"

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class StudyError(GymGuiError):
    """A study could not be read: the message names the storage and what was wrong with it."""


@dataclasses.dataclass(frozen=True)
class TrialRow:
    """One trial as a user reads it.

    ``state`` is Optuna's (COMPLETE, PRUNED, FAIL, RUNNING, WAITING); ``values`` one per objective
    (None until the trial completes); ``intermediate`` the values the pruner was told, by step.
    """

    number: int
    state: str
    values: tuple[float, ...] | None
    params: dict[str, Any]
    run_ids: tuple[str, ...]
    started: datetime | None
    completed: datetime | None
    intermediate: dict[int, float]
    user_attrs: dict[str, Any]

    @property
    def value(self) -> float | None:
        """The first objective's value, or None."""
        return self.values[0] if self.values else None

    @property
    def home(self) -> str | None:
        """The id of the home whose daemon played the trial (None: a study made elsewhere, or before
        trials were marked)."""
        value = self.user_attrs.get(TRIAL_HOME_ATTR)
        return value if isinstance(value, str) else None

    def elsewhere(self, home_id: str) -> bool:
        """Whether another home's daemon played the trial (its runs are not in the home ``home_id``)."""
        return self.home is not None and self.home != home_id


@dataclasses.dataclass(frozen=True)
class StudyView:
    """A study as read at one moment: its trials, directions and gym_gui's attributes."""

    storage: str  # the URL as shown to a user: any password replaced by ***
    name: str
    directions: tuple[str, ...]  # "maximize" / "minimize", one per objective
    metric_names: tuple[str, ...] | None
    trials: tuple[TrialRow, ...]
    user_attrs: dict[str, Any]

    @property
    def sweep_id(self) -> str | None:
        """The gym_gui sweep that made the study, or None for a study made elsewhere."""
        value = self.user_attrs.get(STUDY_SWEEP_ATTR)
        return value if isinstance(value, str) else None

    @property
    def base_config(self) -> dict[str, Any] | None:
        """The RunConfig (JSON form) every trial of a gym_gui sweep started from, or None."""
        value = self.user_attrs.get(STUDY_CONFIG_ATTR)
        return value if isinstance(value, dict) else None

    def to_data(self) -> dict[str, Any]:
        """The view as JSON-ready data (what the daemon sends of a sweep's study); :meth:`from_data` reads it."""
        data = dataclasses.asdict(self)
        for trial in data["trials"]:
            for key in ("started", "completed"):
                trial[key] = trial[key].isoformat() if trial[key] is not None else None
            trial["intermediate"] = [[step, value] for step, value in trial["intermediate"].items()]
        return json.loads(json.dumps(data, default=str))

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> StudyView:
        """The view :meth:`to_data` wrote.

        Raises:
            StudyError: the data is not such a view.
        """
        try:
            trials = tuple(
                TrialRow(
                    number=int(t["number"]),
                    state=str(t["state"]),
                    values=tuple(float(v) for v in t["values"]) if t["values"] else None,
                    params=dict(t["params"]),
                    run_ids=tuple(str(r) for r in t["run_ids"]),
                    started=datetime.fromisoformat(t["started"]) if t["started"] else None,
                    completed=datetime.fromisoformat(t["completed"]) if t["completed"] else None,
                    intermediate={int(step): float(value) for step, value in t["intermediate"]},
                    user_attrs=dict(t["user_attrs"]),
                )
                for t in data["trials"]
            )
            return cls(
                storage=str(data["storage"]),
                name=str(data["name"]),
                directions=tuple(str(d) for d in data["directions"]),
                metric_names=tuple(data["metric_names"]) if data["metric_names"] else None,
                trials=trials,
                user_attrs=dict(data["user_attrs"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StudyError(f"not a study view: {type(exc).__name__}: {exc}") from None

    def complete(self) -> list[TrialRow]:
        return [trial for trial in self.trials if trial.state == "COMPLETE" and trial.values]

    def best(self) -> list[TrialRow]:
        """The best trial (one objective), or the Pareto front (several), as Optuna defines them."""
        done = self.complete()
        if not done:
            return []
        if len(self.directions) == 1:
            sign = 1.0 if self.directions[0] == "maximize" else -1.0
            return [max(done, key=lambda trial: (sign * (trial.value or 0.0), -trial.number))]
        return [
            trial for trial in done if not any(_dominates(other, trial, self.directions) for other in done)
        ]

    def ranked(self) -> list[TrialRow]:
        """Complete trials best first by the first objective, then the others by number."""
        sign = -1.0 if self.directions[0] == "maximize" else 1.0
        done = sorted(self.complete(), key=lambda trial: (sign * (trial.value or 0.0), trial.number))
        rest = [trial for trial in self.trials if trial not in done]
        return done + rest

    def history(self) -> list[tuple[int, float, float]]:
        """``(trial number, value, best so far)`` of complete trials in number order (first objective)."""
        maximize = self.directions[0] == "maximize"
        points: list[tuple[int, float, float]] = []
        best = -math.inf if maximize else math.inf
        for trial in sorted(self.complete(), key=lambda trial: trial.number):
            value = float(trial.value or 0.0)
            best = max(best, value) if maximize else min(best, value)
            points.append((trial.number, value, best))
        return points


def objective_names(view: StudyView) -> list[str]:
    """The objectives' column names: the study's metric names, else ``value`` (``value 1``, … for several)."""
    if view.metric_names and len(view.metric_names) == len(view.directions):
        return list(view.metric_names)
    if len(view.directions) == 1:
        return ["value"]
    return [f"value {index + 1}" for index in range(len(view.directions))]


def param_names(view: StudyView) -> list[str]:
    """Every parameter any trial has, sorted."""
    return sorted({name for trial in view.trials for name in trial.params})


def history_title(view: StudyView) -> str:
    """What the optimisation history shows: the first objective per trial, and its direction."""
    direction = view.directions[0]
    return f"{objective_names(view)[0]} per trial ({direction})"


def importance_note(view: StudyView, importances: dict[str, float]) -> str:
    """Why no importances are shown ("" when there are some)."""
    if importances:
        return ""
    done = len(view.complete())
    if not param_names(view):
        return "No importances: the study's trials have no parameters."
    if done < 2:
        return f"No importances yet: they need at least 2 complete trials ({done} so far)."
    return "No importances: no parameter varied across the complete trials."


def _dominates(a: TrialRow, b: TrialRow, directions: Sequence[str]) -> bool:
    assert a.values is not None and b.values is not None
    better = False
    for x, y, direction in zip(a.values, b.values, directions, strict=True):
        if direction == "minimize":
            x, y = -x, -y
        if x < y:
            return False
        better = better or x > y
    return better


def storage_url(text: str) -> str:
    """An SQLAlchemy URL from what a user typed: a URL stays as it is, a path names an SQLite file.

    Raises:
        StudyError: a path that is not an existing file.
    """
    if _SCHEME.match(text):
        return text
    path = Path(text).expanduser()
    if not path.is_file():
        raise StudyError(
            f"{text}: no such database file (give a path to an SQLite file or an SQLAlchemy URL)"
        )
    return f"sqlite:///{path.resolve()}"


def read_only_url(url: str) -> str:
    """The URL opening an SQLite file read-only (``mode=ro``); other URLs as they are (the database's
    own permissions decide)."""
    if url.startswith("sqlite:///") and "?" not in url and not url.startswith("sqlite:///:memory:"):
        return f"sqlite:///file:{url.removeprefix('sqlite:///')}?mode=ro&uri=true"
    return url


def error_line(error: BaseException) -> str:
    """The first line of what a storage error says (sqlalchemy's run to many), or its type's name."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _storage(url: str) -> optuna.storages.RDBStorage:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return optuna.storages.RDBStorage(read_only_url(url), skip_table_creation=True)
    except Exception as exc:  # sqlalchemy's, a missing driver's, Optuna's own: each its own class
        first = error_line(exc.__cause__ or exc)
        raise StudyError(f"{redact_url(url)}: not an Optuna storage: {first}") from None


def release(storage: Any) -> None:
    """Give back an Optuna RDB storage's database connections: its session, and its engine's pool
    (a database server counts open connections; a pool left to the garbage collector holds them)."""
    remove = getattr(storage, "remove_session", None)
    if remove is not None:
        remove()
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()


def study_names(url: str) -> list[str]:
    """The names of the studies the storage holds, sorted."""
    import optuna

    storage = _storage(url)
    try:
        return sorted(summary.study_name for summary in optuna.get_all_study_summaries(storage))
    except Exception as exc:  # an SQLite file that is not Optuna's: sqlalchemy's OperationalError, etc.
        raise StudyError(f"{redact_url(url)}: not an Optuna storage: {error_line(exc)}") from None
    finally:
        release(storage)


def read_study(url: str, name: str | None = None) -> StudyView:
    """Read the study ``name`` (or the storage's only study) as it is now.

    Raises:
        StudyError: the storage cannot be opened, holds no such study (the message lists those it
            holds), or holds several and no name was given.
    """
    import optuna

    names = study_names(url)
    if name is None:
        if len(names) != 1:
            held = ", ".join(names) or "none"
            raise StudyError(f"{redact_url(url)} holds {len(names)} studies ({held}): name one with --study")
        name = names[0]
    elif name not in names:
        raise StudyError(f"{redact_url(url)} has no study {name!r}; it holds: {', '.join(names) or 'none'}")
    storage = _storage(url)
    try:
        return study_view(optuna.load_study(study_name=name, storage=storage), url)
    finally:
        release(storage)


def study_view(study: optuna.Study, url: str) -> StudyView:
    """The view of a study already open (from the storage at ``url``) as it is now."""
    return StudyView(
        storage=redact_url(url),
        name=study.study_name,
        directions=tuple(direction.name.lower() for direction in study.directions),
        metric_names=tuple(study.metric_names) if study.metric_names else None,
        trials=tuple(_row(trial) for trial in study.get_trials(deepcopy=False)),
        user_attrs=dict(study.user_attrs),
    )


def _row(trial: optuna.trial.FrozenTrial) -> TrialRow:
    runs = trial.user_attrs.get(TRIAL_RUNS_ATTR)
    return TrialRow(
        number=trial.number,
        state=trial.state.name,
        values=tuple(float(v) for v in trial.values) if trial.values else None,
        params=dict(trial.params),
        run_ids=tuple(str(run) for run in runs) if isinstance(runs, list) else (),
        started=trial.datetime_start,
        completed=trial.datetime_complete,
        intermediate={int(step): float(value) for step, value in trial.intermediate_values.items()},
        user_attrs=dict(trial.user_attrs),
    )


def param_importances(url: str, name: str) -> dict[str, float]:
    """Each parameter's importance for the first objective (Optuna's default evaluator), largest first.

    Empty when fewer than two trials completed or no parameter varied (nothing to attribute).
    """
    import optuna

    storage = _storage(url)
    try:
        study = optuna.load_study(study_name=name, storage=storage)
        done = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
        if len(done) < 2 or not any(
            len({repr(t.params.get(key)) for t in done}) > 1 for key in done[0].params
        ):
            return {}
        target = None if len(study.directions) == 1 else (lambda trial: trial.values[0])
        return dict(optuna.importance.get_param_importances(study, target=target))
    finally:
        release(storage)


def params_as_flags(params: dict[str, Any]) -> dict[str, Any]:
    """A study's parameters named as a script's options are (``learning-rate`` → ``learning_rate``).

    ``cleanrl_utils.tuner`` names parameters by the script's flags; gym_gui's configs by their
    destinations. A gym_gui sweep's names are already destinations and come back unchanged.
    """
    return {key.replace("-", "_"): value for key, value in params.items()}
