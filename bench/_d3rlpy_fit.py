"""bench/offline.py's d3rlpy half: DiscreteCQL trained through gym_gui against the same ``fit`` called directly.

On a dataset of the bench's home, alternately ``repeats`` times:

- gym_gui: a ``d3rlpy`` run (``discrete_cql``, ``steps`` gradient steps, seed 1, epochs of
  ``steps_per_epoch``, no evaluators) submitted to the daemon; its worker loads the dataset, seeds
  d3rlpy and calls ``fit`` with d3rlpy's TensorBoard adapter and gym_gui's metric adapter, its per-step
  callback (pause, stop, checkpoints) and saves the final model. Its figure is the worker's own
  ``time/steps_per_second`` (gradient steps over the seconds ``fit`` took);
- direct: the d3rlpy bundle's interpreter running this file with ``--direct``: the same dataset (the
  worker's own Minari → MDPDataset conversion), ``d3rlpy.seed``, ``DiscreteCQLConfig().create()`` and
  ``fit`` with nothing logged (d3rlpy's ``NoopAdapterFactory``, no progress bar): the strictest
  reference (d3rlpy's default file logger also saves the model every epoch, which costs more than
  gym_gui's logging). Timed from ``fit``'s call, which builds the networks, to its end.

Both get the thread pool sizes of the caller's environment (bench/offline.py sets them before its
daemon starts). Every epoch's losses (loss, td_loss, conservative_loss: d3rlpy's epoch means) of each
gym_gui run are compared with the direct run's for equality.

Only :func:`direct_fit` and this file's ``--direct`` entry run in the d3rlpy bundle (no gym_gui there):
everything else imports gym_gui inside its functions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ALGORITHM = "discrete_cql"
ENV_ID = "CartPole-v1"
SEED = 1
LOSSES = ("loss", "td_loss", "conservative_loss")
GOAL = 0.95


@dataclass
class D3rlpyFigures:
    """What :func:`measure` found: each side's steps/s per repeat and whether every epoch's losses agreed."""

    steps: int
    dataset_steps: int
    gym_gui: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)
    gym_gui_wall: list[float] = field(default_factory=list)  # submit → COMPLETED, seconds
    identical: bool = True
    difference: str = ""  # the first loss that differed

    @property
    def ratio(self) -> float:
        return statistics.median(self.gym_gui) / statistics.median(self.direct)


# ---------------------------------------------------------------- the direct side (in the d3rlpy bundle)


def direct_fit(dataset: str, steps: int, steps_per_epoch: int) -> dict[str, Any]:
    """d3rlpy's fit called directly, logging nothing, on the dataset gym_gui's worker reads (its conversion)."""
    import d3rlpy
    from gym_gui_d3rlpy_worker.dataset import load

    data = load(dataset)
    d3rlpy.seed(SEED)
    algo = d3rlpy.algos.DiscreteCQLConfig().create(device="cpu:0")
    start = time.perf_counter()
    results = algo.fit(
        data.mdp,
        n_steps=steps,
        n_steps_per_epoch=steps_per_epoch,
        logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
        show_progress=False,
    )
    elapsed = time.perf_counter() - start
    return {
        "steps_per_second": steps / elapsed,
        "losses": [
            [epoch * steps_per_epoch, {name: metrics[name] for name in LOSSES}] for epoch, metrics in results
        ],
    }


# ---------------------------------------------------------------- the orchestration (gym_gui's venv)


def _through_gym_gui(
    client: Any, home: Any, dataset: str, steps: int, steps_per_epoch: int
) -> tuple[float, float, list[Any]]:
    from gym_gui.core.config import parse_run_config
    from gym_gui.core.states import RunState
    from gym_gui.storage.run_dir import RunDir
    from gym_gui.storage.telemetry import TelemetryReader

    config = parse_run_config(
        {
            "worker": "d3rlpy",
            "algorithm": ALGORITHM,
            "env_id": ENV_ID,
            "dataset": dataset,
            "seed": SEED,
            "budget": {"timesteps": steps},
            "params": {"steps_per_epoch": steps_per_epoch, "eval_episodes": 0, "td_error_episodes": 0},
            "notes": "bench/offline.py",
        }
    )
    start = time.perf_counter()
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, 3600)
    wall = time.perf_counter() - start
    if final.state is not RunState.COMPLETED:
        raise RuntimeError(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        rate = reader.metrics("time/steps_per_second")[-1].value
        by_tag = {name: {p.step: p.value for p in reader.metrics(f"losses/{name}")} for name in LOSSES}
    finally:
        reader.close()
    epochs = sorted(by_tag["loss"])
    losses = [[step, {name: by_tag[name][step] for name in LOSSES}] for step in epochs]
    return rate, wall, losses


def _direct(python: Path, dataset: str, steps: int, steps_per_epoch: int) -> dict[str, Any]:
    command = [
        str(python),
        __file__,
        "--direct",
        dataset,
        "--steps",
        str(steps),
        "--steps-per-epoch",
        str(steps_per_epoch),
    ]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
        timeout=3600,
        check=False,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"the direct fit failed (exit code {result.returncode}): {result.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def _first_difference(ours: list[Any], theirs: list[Any]) -> str:
    if [step for step, _ in ours] != [step for step, _ in theirs]:
        return f"epochs at steps {[s for s, _ in ours]} through gym_gui, {[s for s, _ in theirs]} directly"
    for (step, mine), (_, direct) in zip(ours, theirs, strict=True):
        for name in LOSSES:
            if mine[name] != direct[name]:
                return f"{name} at step {step}: {mine[name]!r} through gym_gui, {direct[name]!r} directly"
    return ""


def measure(
    client: Any, home: Any, dataset: str, steps: int, steps_per_epoch: int, repeats: int
) -> D3rlpyFigures:
    """Run the comparison on ``dataset`` of ``home`` (whose datasets root Minari uses in this process),
    its gym_gui side through ``client``'s daemon, its direct side in the d3rlpy bundle of ``home``."""
    from gym_gui.datasets import DatasetStore
    from gym_gui.workers import worker_catalog

    bundles = worker_catalog().bundle_directory(home.bundles_dir)
    if not bundles.installed("d3rlpy"):
        raise RuntimeError("the d3rlpy bundle is not installed: run `gym-gui bundles install d3rlpy`")
    python = bundles.python("d3rlpy")
    figures = D3rlpyFigures(steps=steps, dataset_steps=DatasetStore(home).card(dataset).steps)
    ours: list[Any] = []
    direct_losses: list[Any] = []
    for repeat in range(repeats):
        # Alternate who goes first, so the machine's drift favours neither side.
        order = ("direct", "gym_gui") if repeat % 2 == 0 else ("gym_gui", "direct")
        for side in order:
            if side == "direct":
                answer = _direct(python, dataset, steps, steps_per_epoch)
                figures.direct.append(float(answer["steps_per_second"]))
                direct_losses = answer["losses"]
                print(f"direct   #{repeat}: {figures.direct[-1]:8.1f} steps/s", flush=True)
            else:
                rate, wall, ours = _through_gym_gui(client, home, dataset, steps, steps_per_epoch)
                figures.gym_gui.append(rate)
                figures.gym_gui_wall.append(wall)
                print(f"gym_gui  #{repeat}: {rate:8.1f} steps/s (submit to end {wall:.1f} s)", flush=True)
        difference = _first_difference(ours, direct_losses)
        if difference and figures.identical:
            figures.identical, figures.difference = False, difference
    return figures


def report_lines(figures: D3rlpyFigures) -> list[str]:
    """The medians of each side."""
    return [
        f"d3rlpy {ALGORITHM}: {figures.steps} gradient steps on {figures.dataset_steps} dataset steps, "
        f"seed {SEED}, {len(figures.gym_gui)} runs each",
        f"through gym_gui   median {statistics.median(figures.gym_gui):8.1f} steps/s "
        f"(submit to end {statistics.median(figures.gym_gui_wall):.1f} s)",
        f"fit called direct median {statistics.median(figures.direct):8.1f} steps/s",
    ]


def ratio_lines(figures: D3rlpyFigures) -> list[str]:
    """The ratios: steps/s through gym_gui ÷ direct, and whether the losses were identical."""
    losses = "identical" if figures.identical else f"DIFFER ({figures.difference})"
    return [
        f"d3rlpy DiscreteCQL through gym_gui / fit called directly = {figures.ratio:.3f} of its steps/s "
        f"(goal >= {GOAL})",
        f"d3rlpy DiscreteCQL losses through gym_gui vs directly: {losses} (every epoch of every run)",
    ]


if __name__ == "__main__":  # the direct side, in the d3rlpy bundle: one fit, its figures as a JSON line
    parser = argparse.ArgumentParser(description="d3rlpy's fit called directly (bench/offline.py runs this)")
    parser.add_argument("--direct", required=True, help="the dataset's Minari id")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--steps-per-epoch", type=int, required=True)
    args = parser.parse_args()
    print(json.dumps(direct_fit(args.direct, args.steps, args.steps_per_epoch)))
    sys.exit(0)
