"""`python -m gym_gui_cleanrl_worker`: the CleanRL worker process — trains a real script or evaluates its model.

train:    runs the launcher (the script itself, in a child process in this process group), tees
          and parses its output, tails its TensorBoard files, registers its artifacts.
evaluate: loads a saved model into the script's own agent class and plays, streaming every step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from gym_gui_sdk import ENV_HOME, encoding, render
from gym_gui_sdk.json_object import json_object
from gym_gui_sdk.stderr import error_line
from gym_gui_sdk.worker import Phase, Registration, WorkerError, WorkerSession

from gym_gui_cleanrl_worker import MARKER
from gym_gui_cleanrl_worker.bridge import Deduplicator, EventFileTail, StdoutParser
from gym_gui_cleanrl_worker.zygote import WARM_SWITCH, ForkedScript, ZygoteError, socket_path

# How often the event files are read (a curve's new points reach a viewer within about this and the
# stream's own batching) and the run directory is looked at for new files.
_EVENTS_SECONDS = 0.1
_FILES_SECONDS = 1.0
# An unannounced video is registered once unchanged this long (its recorder has closed it).
_VIDEO_SETTLE_SECONDS = 5.0
# How often the script's output is taken: in batches, since a wake-up per printed line (CleanRL
# prints ~175 lines/s) costs the script's torch threads more than the bridge's work itself.
_READ_SECONDS = 0.25
# How often stop and checkpoint requests are passed on to the script.
_CONTROL_SECONDS = 0.1
# How long the script gets to save its model after a stop before it is killed.
_STOP_GRACE = 20.0


def _read_lines(stream: IO[bytes], handle: Callable[[list[str]], None]) -> None:
    """Hand ``stream``'s complete lines to ``handle`` in batches, until the stream ends."""
    fd = stream.fileno()
    pending = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        pending += chunk
        *complete, pending = pending.split(b"\n")
        if complete:
            handle([line.decode("utf-8", errors="replace") for line in complete])
        time.sleep(_READ_SECONDS)
    if pending:
        handle([pending.decode("utf-8", errors="replace")])


class Trainer:
    """Runs one training script and bridges everything it produces to the daemon."""

    def __init__(self, session: WorkerSession, run_dir: Path, command: list[str]) -> None:
        self.session = session
        self.run_dir = run_dir
        self.command = command
        self.parser = StdoutParser()
        self.dedupe = Deduplicator()
        self.events = EventFileTail(run_dir / "runs")
        self.stderr_tail: deque[str] = deque(maxlen=40)
        self.registered: set[str] = set()
        # Why wandb.init failed (its first line), when it did: the run's W&B run never started.
        self.wandb_error: str | None = None
        self._lock = threading.Lock()

    def run(self) -> int:
        # "Checkpoint now" is SIGUSR1 to the script, whose handler exists only once it has imported
        # torch and its script; until then SIGUSR1's default action would kill it. So the script
        # starts with SIGUSR1 blocked (a child inherits the mask of the thread that forks it): a
        # request made earlier stays pending and is taken when launch.py installs its handler.
        # A zygote-forked script gets the same mask from its keeper (zygote.py).
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        try:
            child = self._start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        assert child.stdout is not None and child.stderr is not None
        readers = [
            threading.Thread(target=_read_lines, args=(child.stdout, self._stdout_lines), daemon=True),
            threading.Thread(target=_read_lines, args=(child.stderr, self._stderr_lines), daemon=True),
        ]
        for reader in readers:
            reader.start()
        exited = threading.Event()

        # Waiting on the child (not polling it) ends the run the moment the script does.
        def wait() -> None:
            child.wait()
            exited.set()

        threading.Thread(target=wait, daemon=True).start()
        stop_sent_at: float | None = None
        stopped = False  # the script's process is held by SIGSTOP (the run is paused)
        next_events = time.monotonic() + _EVENTS_SECONDS
        next_files = time.monotonic() + _FILES_SECONDS
        while not exited.wait(min(_CONTROL_SECONDS, _EVENTS_SECONDS)):
            if self.session.stop_requested.is_set() and stop_sent_at is None:
                stop_sent_at = time.monotonic()
                child.send_signal(signal.SIGTERM)
                if stopped:
                    # A stopped process takes its SIGTERM once continued: it saves its model and ends.
                    child.send_signal(signal.SIGCONT)
                    stopped = False
            if stop_sent_at is not None and time.monotonic() - stop_sent_at > _STOP_GRACE:
                child.kill()
            elif stop_sent_at is None and self.session.paused != stopped:
                stopped = self._hold(child, self.session.paused)
            if self.session.checkpoint_requested.is_set():
                self.session.checkpoint_requested.clear()
                child.send_signal(signal.SIGUSR1)
            now = time.monotonic()
            if now >= next_events:
                next_events = now + _EVENTS_SECONDS
                self._poll_events()
            if now >= next_files:
                next_files = now + _FILES_SECONDS
                self._poll_files()
        for reader in readers:
            reader.join(10)
        self._poll_events(final=True)
        self._poll_files(final=True)
        return child.wait()  # ended: its code at once

    def _start(self) -> subprocess.Popen[bytes] | ForkedScript:
        """The script's process: forked by the bundle's zygote (warm: torch and gym already imported)
        when one listens for this interpreter under the home, else a new interpreter (said once in the run's log)."""
        home = os.environ.get(ENV_HOME)
        zygote = socket_path(Path(home), sys.executable) if home else None
        if os.environ.get(WARM_SWITCH) == "0":
            reason = (
                f"{WARM_SWITCH}=0 (the run names its own interpreter or scripts, or the daemon turned "
                "warm starts off)"
            )
        elif zygote is not None and zygote.exists():
            try:
                # The launcher's arguments (after `python -m gym_gui_cleanrl_worker.launch`), this
                # worker's own environment, as Popen would give them.
                return ForkedScript.start(str(zygote), self.command[3:], self.run_dir, dict(os.environ))
            except ZygoteError as exc:
                reason = f"the zygote at {zygote} could not fork it ({exc})"
        else:
            reason = f"no zygote serves {sys.executable}" + (f" (none at {zygote})" if zygote else "")
        print(f"gym_gui: the script starts in a new interpreter (no warm start): {reason}", file=sys.stderr)
        sys.stderr.flush()
        return subprocess.Popen(
            self.command,
            cwd=self.run_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )

    def _hold(self, child: subprocess.Popen[bytes] | ForkedScript, pause: bool) -> bool:
        """Stop (pause) or continue (resume) the script's process and report it; returns whether it is held.

        Only the script's own process is stopped, not the process group: the group holds this
        worker, which goes on heart-beating while paused, and the script's helpers (vector-env
        workers, W&B's service) only wait on the script. Its threads (torch's, the TensorBoard
        writer's) stop with it, and a continued script goes on from the very step it was at.
        """
        child.send_signal(signal.SIGSTOP if pause else signal.SIGCONT)
        self.session.lifecycle(Phase.PAUSED if pause else Phase.RESUMED)
        return pause

    @property
    def error_line(self) -> str:
        """The script's own last error line (argparse's "error:" line, or the exception), never a warning."""
        return error_line(self.stderr_tail)

    # ------------------------------------------------------------ output

    def _stdout_lines(self, lines: list[str]) -> None:
        shown = []
        points = []
        for line in lines:
            if line.startswith(MARKER):
                self._marker(line[len(MARKER) :])
                continue
            shown.append(line)
            points.extend(self.parser.parse(line))
        if shown:
            sys.stdout.write("\n".join(shown) + "\n")
            sys.stdout.flush()
        self._send(points, from_stdout=True)

    def _stderr_lines(self, lines: list[str]) -> None:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
        self.stderr_tail.extend(lines)

    def _marker(self, text: str) -> None:
        try:
            data = json_object(text)
        except ValueError:
            return
        checkpoint = data.get("checkpoint")
        if isinstance(checkpoint, str):
            kind = "model" if data.get("final") else "checkpoint"
            meta: dict[str, Any] = {"algo": data.get("algo")}
            if data.get("requested") is True:
                meta["requested"] = True  # saved on "checkpoint now", which waits for it by this
            self.session.artifact(kind, checkpoint, int(data.get("step") or 0), meta)
        warm = data.get("warm_start")
        if isinstance(warm, str):
            module = data.get("module")
            self.session.event(
                "INFO", f"warm start: {module} loaded from {warm} before training", {"warm_start": warm}
            )
        video = data.get("video")
        if isinstance(video, str):
            self._video(video, data)
        wandb_run = data.get("wandb")
        if isinstance(wandb_run, dict):
            self.wandb_error = None  # a script that tried again got its W&B run after all
            self._wandb(wandb_run)
        error = data.get("wandb_error")
        if isinstance(error, str):
            self.wandb_error = (error.strip().splitlines() or ["unknown error"])[0]
            self.session.event("ERROR", self.wandb_failure, {"wandb_error": error})

    @property
    def wandb_failure(self) -> str:
        return f"W&B could not start the run: {self.wandb_error}"

    def _wandb(self, announced: dict[str, Any]) -> None:
        # The run wandb.init started: its directory, mode and (online) the URL W&B reported.
        path = (self.run_dir / str(announced.get("path"))).resolve()
        if not path.is_relative_to(self.run_dir.resolve()) or not path.is_dir():
            print(f"{MARKER}ignored a W&B run outside the run directory: {announced!r}", file=sys.stderr)
            return
        meta = {"mode": announced.get("mode"), "wandb_run_id": announced.get("id")}
        meta.update({k: announced[k] for k in ("url", "project", "entity") if announced.get(k)})
        self._register("wandb", path, meta)

    def _video(self, relative: str, data: dict[str, Any]) -> None:
        # A finished video, announced by the patched RecordVideo with the episode it shows.
        path = (self.run_dir / relative).resolve()
        if not path.is_relative_to(self.run_dir.resolve()) or not path.is_file():
            print(f"{MARKER}ignored a video outside the run directory: {relative!r}", file=sys.stderr)
            return
        episode, ret, length = data.get("episode"), data.get("return"), data.get("length")
        meta: dict[str, Any] = {
            "episode": episode if _is_number(episode, int) else _episode_of(path.name),
            "complete": data.get("complete") is True,
        }
        if isinstance(ret, int | float) and _is_number(ret, float):
            meta["return"] = float(ret)
        if _is_number(length, int):
            meta["length"] = length
        self._register("video", path, meta)

    def _send(self, points: list[tuple[str, int, float]], from_stdout: bool) -> None:
        # Both readers (stdout thread, event-file poll) share the deduplicator: one lock.
        if not points:
            return
        with self._lock:
            fresh = self.dedupe.from_stdout(points) if from_stdout else self.dedupe.from_events(points)
            if fresh:
                self.session.metrics(fresh)

    # ------------------------------------------------------------ files

    def _poll_events(self, final: bool = False) -> None:
        self._send(self.events.poll(final=final), from_stdout=False)
        for damage in self.events.damage():
            # Said as it is found: the points of a damaged stretch are lost, the rest still comes.
            self.session.event("WARNING", f"TensorBoard event file damaged: {damage}")

    def _poll_files(self, final: bool = False) -> None:
        for directory in self.events.directories():
            self._register("tensorboard", directory)
        videos = self.run_dir / "videos"
        if videos.is_dir():
            # A video the patched recorder did not announce (another recorder) counts once it is written.
            settled = time.time() - (0 if final else _VIDEO_SETTLE_SECONDS)
            for video in sorted(videos.glob("**/*.mp4")):
                with contextlib.suppress(OSError):
                    if video.stat().st_mtime <= settled:
                        self._register("video", video, {"episode": _episode_of(video.name)})
        wandb = self.run_dir / "wandb"
        if final and self.wandb_error is None and wandb.is_dir():
            # A W&B run that wandb.init did not announce (a script that starts W&B otherwise).
            for run in sorted(wandb.glob("*run-*")):
                if run.is_dir():
                    self._register("wandb", run, _wandb_meta(run))

    def _register(self, kind: str, path: Path, meta: dict[str, Any] | None = None) -> None:
        relative = str(path.relative_to(self.run_dir))
        if relative not in self.registered:
            self.registered.add(relative)
            self.session.artifact(kind, relative, self.parser.global_step, meta or {})


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "an unknown signal"


def _is_number(value: Any, kind: type) -> bool:
    # JSON numbers only: bool is an int to Python but never a count or a return here.
    allowed = (int,) if kind is int else (int, float)
    return isinstance(value, allowed) and not isinstance(value, bool)


def _episode_of(name: str) -> int | None:
    # gymnasium's RecordVideo names files "...-episode-<n>.mp4": the last number before the extension.
    digits = "".join(ch if ch.isdigit() else " " for ch in Path(name).stem).split()
    return int(digits[-1]) if digits else None


def _wandb_meta(run: Path) -> dict[str, Any]:
    # What a W&B run's directory name tells: offline-run-<time>-<id> or run-<time>-<id>.
    return {
        "mode": "offline" if run.name.startswith("offline-") else "online",
        "wandb_run_id": run.name.rsplit("-", 1)[-1],
    }


def train(session: WorkerSession, registration: Registration, args: argparse.Namespace) -> int:
    run_dir = Path(registration.run_dir)
    session.started(render_kind="none", spaces={})
    command = [
        sys.executable,
        "-m",
        "gym_gui_cleanrl_worker.launch",
        "--script",
        args.script,
        "--run-dir",
        str(run_dir),
    ]
    if args.checkpoint_every:
        command += ["--checkpoint-every", str(args.checkpoint_every)]
    if args.warm_start:
        command += ["--warm-start", args.warm_start, "--warm-start-module", args.warm_start_module]
    command += ["--", *args.script_args]
    trainer = Trainer(session, run_dir, command)
    code = trainer.run()
    for summary in trainer.events.summary():
        session.event("WARNING", f"TensorBoard event file damaged: {summary}")
    if session.stop_requested.is_set():
        session.finish(Phase.CANCELLED, "stopped on request; the model so far is saved")
        return 0
    if code < 0:
        # Killed (by the kernel, a person, or with its keeper): what it last wrote is not why it
        # ended, and -N is no exit status (sys.exit(-9) exits 247).
        session.finish(Phase.FAILED, f"the script was killed by signal {-code} ({_signal_name(-code)})")
        return 1
    if code != 0:
        if trainer.wandb_error is not None:
            session.finish(Phase.FAILED, trainer.wandb_failure)
        else:
            session.finish(Phase.FAILED, trainer.error_line or f"the script exited with code {code}")
        return code
    session.finish(Phase.COMPLETED, "training finished")
    return 0


def evaluate(session: WorkerSession, registration: Registration, args: argparse.Namespace) -> int:
    from gym_gui_cleanrl_worker.evaluate import env_fps, load_policy, play_episodes

    policy = load_policy(args.model, str(registration.config.get("env_id")), args.algo, args.scripts_dir)
    session.started(render_kind="pixels", spaces={})
    episode_start = time.time()
    total = 0.0

    def on_step(
        episode: int,
        step: int,
        observation: Any,
        action: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Any,
        frame: Any,
    ) -> None:
        nonlocal episode_start, total
        session.step(
            episode,
            step,
            float(reward),
            bool(terminated),
            bool(truncated),
            encoding.dumps(action),
            observation,  # numeric arrays travel packed; the daemon stores a screen compact
            encoding.dumps(info if isinstance(info, dict) else {}),
            render.frame_payload(frame) if frame is not None else b"",
        )
        total += float(reward)
        if terminated or truncated:
            session.episode(
                episode,
                steps=step + 1,
                total_reward=total,
                terminated=bool(terminated),
                truncated=bool(truncated),
                started_at=episode_start,
                seed=None if args.seed is None else args.seed + episode,
            )
            session.metrics([("eval/episodic_return", episode, total)])
            total = 0.0
            episode_start = time.time()
        # Paused between two steps; play resumes at its own pace, without hurrying to catch up.
        session.wait_if_paused()

    play_episodes(
        policy,
        args.episodes,
        args.seed,
        on_step,
        render_fps=lambda: session.render_fps,
        should_stop=session.stop_requested.is_set,
        steps_per_second=env_fps(policy) if args.real_time else None,
        epsilon=args.epsilon,
    )
    policy.close()
    if session.stop_requested.is_set():
        session.finish(Phase.CANCELLED, "stopped on request")
    else:
        session.finish(Phase.COMPLETED, f"played {args.episodes} episodes")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gym_gui_cleanrl_worker")
    sub = parser.add_subparsers(dest="command", required=True)
    training = sub.add_parser("train", help="run a CleanRL script")
    training.add_argument("--script", required=True)
    training.add_argument("--checkpoint-every", type=int, default=None)
    training.add_argument("--warm-start", default=None, help="a saved model to start training from")
    training.add_argument("--warm-start-module", default="", help="the script's network it is loaded into")
    training.add_argument("script_args", nargs=argparse.REMAINDER)
    evaluation = sub.add_parser("evaluate", help="play a saved model")
    evaluation.add_argument("--model", required=True)
    evaluation.add_argument("--algo", required=True, help="the CleanRL script the model was trained with")
    evaluation.add_argument("--scripts-dir", default=None, help="the CleanRL checkout it was trained from")
    evaluation.add_argument("--episodes", type=int, required=True)
    evaluation.add_argument("--seed", type=int, default=None)
    evaluation.add_argument(
        "--real-time", action="store_true", help="play at the env's own frame rate (to be watched)"
    )
    evaluation.add_argument(
        "--epsilon", type=float, default=0.0, help="the share of steps played with a random action"
    )
    args = parser.parse_args(argv)
    if getattr(args, "script_args", None) and args.script_args[0] == "--":
        args.script_args = args.script_args[1:]

    session = WorkerSession.from_env()
    session.install_signal_handlers()
    try:
        registration = session.start()
        if args.command == "train":
            return train(session, registration, args)
        return evaluate(session, registration, args)
    except WorkerError as exc:
        print(f"cleanrl worker: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        with contextlib.suppress(WorkerError):
            session.finish(Phase.FAILED, f"{type(exc).__name__}: {exc}")
        raise


if __name__ == "__main__":
    sys.exit(main())
