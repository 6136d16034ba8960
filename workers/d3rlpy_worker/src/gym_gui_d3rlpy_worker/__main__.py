"""``python -m gym_gui_d3rlpy_worker train|evaluate``: the d3rlpy worker process, in the d3rlpy bundle.

train:    learns the run's dataset with its algorithm (:mod:`training`); metrics, TensorBoard files,
          checkpoints and the final model.
evaluate: plays a saved model in its environment, every step streamed (:mod:`evaluate`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gym_gui_sdk.worker import Registration, WorkerSession, run_worker

from gym_gui_d3rlpy_worker.dataset import DatasetError
from gym_gui_d3rlpy_worker.policy import ModelError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gym_gui_d3rlpy_worker")
    sub = parser.add_subparsers(dest="command", required=True)
    training = sub.add_parser("train", help="learn the run's dataset")
    training.add_argument("--checkpoint-every", type=int, default=None, help="save the model every N steps")
    evaluation = sub.add_parser("evaluate", help="play a saved model")
    evaluation.add_argument("--model", required=True)
    evaluation.add_argument("--episodes", type=int, required=True)
    evaluation.add_argument("--seed", type=int, default=None)
    evaluation.add_argument("--real-time", action="store_true", help="play at the env's own frame rate")
    evaluation.add_argument("--epsilon", type=float, default=0.0, help="the share of steps played at random")
    args = parser.parse_args(argv)

    def body(session: WorkerSession, registration: Registration) -> str:
        if args.command == "train":
            from gym_gui_d3rlpy_worker.training import train

            return train(session, registration, args.checkpoint_every)
        from gym_gui_d3rlpy_worker.evaluate import evaluate

        return evaluate(
            session, registration, Path(args.model), args.episodes, args.seed, args.real_time, args.epsilon
        )

    # TensorBoard's writer closes its files at exit: the normal exit, not exit_now.
    return run_worker("d3rlpy worker", body, (DatasetError, ModelError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
