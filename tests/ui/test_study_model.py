"""The study view's model without Qt: the trials table, why importances are missing, which trial a
follow-up run takes and what fills the form (studies made by real Optuna)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from gym_gui_sdk.contract import FormSpec, ParameterSpec

from gym_gui.sweeps.study import STUDY_CONFIG_ATTR, StudyError, importance_note, param_importances, read_study
from gym_gui.ui.forms.model import RunModel
from gym_gui.ui.study.model import BEST_MARK, follow_up, study_table, trial_for_training


def _study(path: Path, directions: list[str], trials: int, config: dict | None = None) -> str:
    url = f"sqlite:///{path}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name="s", storage=url, directions=directions, sampler=optuna.samplers.RandomSampler(seed=5)
    )
    if config is not None:
        study.set_user_attr(STUDY_CONFIG_ATTR, config)

    def objective(trial: optuna.Trial) -> float | tuple[float, float]:
        lr = trial.suggest_float("learning-rate", 1e-4, 1e-1, log=True)
        steps = trial.suggest_categorical("num-steps", [64, 128])
        first = -abs(lr - 0.01) * 100
        return (first, float(steps) / 100 - first) if len(directions) == 2 else first

    study.optimize(objective, n_trials=trials)
    return url


def test_the_table_is_best_first_with_optunas_best_marked(tmp_path: Path) -> None:
    url = _study(tmp_path / "a.db", ["minimize"], 6)
    view = read_study(url, "s")
    table = study_table(view)
    assert table.columns == ("trial", "state", "value", "learning-rate", "num-steps", "runs")
    values = [line.trial.value for line in table.lines]
    assert values == sorted(v for v in values if v is not None)  # minimize: smallest first
    best = optuna.load_study(study_name="s", storage=url).best_trial.number
    assert [line.trial.number for line in table.lines if line.best] == [best]
    assert table.lines[0].cells[0] == f"{best} {BEST_MARK}"
    assert trial_for_training(view, None).number == best


def test_a_multi_objective_study_marks_its_pareto_front_and_trains_the_selected_front_trial(
    tmp_path: Path,
) -> None:
    url = _study(tmp_path / "m.db", ["maximize", "maximize"], 8)
    view = read_study(url, "s")
    front = {t.number for t in optuna.load_study(study_name="s", storage=url).best_trials}
    assert {line.trial.number for line in study_table(view).lines if line.best} == front
    with pytest.raises(StudyError, match="Pareto front"):
        trial_for_training(view, None)
    off_front = next(t.number for t in view.trials if t.number not in front)
    with pytest.raises(StudyError, match="Pareto front"):
        trial_for_training(view, off_front)
    chosen = min(front)
    assert trial_for_training(view, chosen).number == chosen


def test_importances_say_why_there_are_none(tmp_path: Path) -> None:
    url = _study(tmp_path / "one.db", ["maximize"], 1)
    view = read_study(url, "s")
    importances = param_importances(url, "s")
    assert importances == {}
    assert importance_note(view, importances) == (
        "No importances yet: they need at least 2 complete trials (1 so far)."
    )
    url = _study(tmp_path / "many.db", ["maximize"], 6)
    assert importance_note(read_study(url, "s"), param_importances(url, "s")) == ""


def test_a_follow_up_run_is_the_base_config_with_the_trials_params_or_the_params_as_flags(
    tmp_path: Path,
) -> None:
    config = {"worker": "cleanrl", "algorithm": "ppo", "env_id": "CartPole-v1", "budget": {"timesteps": 2048}}
    view = read_study(_study(tmp_path / "g.db", ["maximize"], 3, config), "s")
    best = trial_for_training(view, None)
    ours = follow_up(view, best)
    assert ours.config == config and ours.params == best.params
    elsewhere = read_study(_study(tmp_path / "e.db", ["maximize"], 3), "s")
    theirs = follow_up(elsewhere, trial_for_training(elsewhere, None))
    assert theirs.config is None and set(theirs.params) == {"learning_rate", "num_steps"}


def test_the_form_model_takes_a_config_and_params_by_flag_or_destination_and_names_the_rest() -> None:
    model = RunModel("cleanrl", streams_steps=False)
    ppo = FormSpec(
        variant_label="Algorithm",
        variant="ppo",
        mapped={"total-timesteps": "budget.timesteps", "seed": "seed", "env-id": "env_id"},
        budget_bounds=("timesteps",),
        parameters=(
            ParameterSpec("total-timesteps", "int", 500000, dest="total_timesteps"),
            ParameterSpec("learning-rate", "float", 0.00025, dest="learning_rate"),
            ParameterSpec("num-steps", "int", 128, dest="num_steps"),
        ),
    )
    model.take_config({"algorithm": "ppo", "env_id": "CartPole-v1", "seed": 7, "budget": {"timesteps": 4096}})
    model.use_parameters(ppo, "CartPole-v1")
    assert (model.env_id, model.seed, model.budget) == ("CartPole-v1", 7, "4096")
    unknown = model.apply_params(
        {"learning_rate": 0.001, "num-steps": 64, "total_timesteps": 9000, "gamma2": 1}
    )
    assert unknown == ["gamma2"]
    assert model.params.changed() == {"learning-rate": 0.001, "num-steps": 64}
    assert (model.budget_kind, model.budget) == ("timesteps", "9000")
