"""What the window asks of a worker kind's plugin without building anything: its spec, its controls,
and whether a run of it has a trained model to play or start from."""

from __future__ import annotations

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog


def spec_of(kind: str) -> WorkerSpec:
    """The spec of ``kind``.

    Raises:
        ConfigError: for a kind no installed plugin declares, naming the installed ones.
    """
    return worker_catalog().spec(kind)


def capabilities_of(kind: str) -> Capabilities:
    """The controls runs of ``kind`` accept (none for a kind no installed plugin declares)."""
    try:
        return spec_of(kind).capabilities
    except GymGuiError:
        return Capabilities()


def offers_trained_model(run: RunRecord) -> bool:
    """Whether ``run`` is a finished training run with a saved model to play or to start from: it
    completed, its kind evaluates models, it is not itself an evaluation, and its directory holds a
    saved model (a dry run or a failed save has none). Reads the run's manifest."""
    return bool(
        run.state is RunState.COMPLETED
        and capabilities_of(run.worker).evaluation
        and run.lane != Lane.TELEMETRY.value  # an evaluation run streams steps: it is not trained
        and run.run_dir
        and RunDir(run.run_dir).saved_models()
    )
