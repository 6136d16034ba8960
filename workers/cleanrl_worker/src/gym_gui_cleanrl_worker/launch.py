"""In-bundle launcher: runs a real CleanRL script in this process, saving its networks as checkpoints."""

from __future__ import annotations

import argparse
import builtins
import json
import os
import signal
import sys
import types
from pathlib import Path
from typing import Any

from gym_gui_cleanrl_worker import MARKER, compat
from gym_gui_cleanrl_worker.model_file import MODEL_FORMAT, MODEL_SUFFIX, ModelError, load_model_file

CHECKPOINT_DIR = "checkpoints"
# Exit codes of a run stopped by SIGTERM / Ctrl-C, as a shell reports a process killed by that signal.
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_INTERRUPTED = 128 + signal.SIGINT
# The worker tails the event files; torch's default (120 s) would make the "live" curves minutes late.
TENSORBOARD_FLUSH_SECS = 2
# Copies of the networks that training keeps in step with the real ones; an evaluation never needs them.
_SKIPPED_NAME_PARTS = ("target",)


class _Terminated(BaseException):
    """Raised in the main thread by the SIGTERM handler; BaseException so a script's `except Exception` can't eat it."""


class _Runtime:
    """What the patches and signal handlers share: the script's namespace and the checkpoint schedule."""

    def __init__(self, script: Path, namespace: dict[str, Any], checkpoint_every: int | None) -> None:
        self.script = script
        self.algo = script.stem
        self.namespace = namespace
        self.every = checkpoint_every if checkpoint_every and checkpoint_every > 0 else None
        # A plain attribute compared in the add_scalar hook: the hot path must stay one comparison.
        self.next_due: float = float(self.every) if self.every else float("inf")
        self.step: Any = None
        self.requested = False
        self.stopping = False
        self.writers: list[Any] = []
        # The launcher's own __main__ module, kept alive after the script takes its place in sys.modules.
        self.launcher_main: Any = None

    def on_scalar_step(self, global_step: Any) -> None:
        """Take the checkpoint that is due (periodic or requested by SIGUSR1) at `global_step`."""
        step = _as_int(global_step)
        if step is None:
            return
        requested, self.requested = self.requested, False
        if requested or step >= self.next_due:
            extra = {"requested": True} if requested else {}
            self.checkpoint(f"step_{step}", step, **extra)
        if self.every:
            self.next_due = float((step // self.every + 1) * self.every)

    def current_step(self) -> int:
        """The script's own `global_step` when it has one, else the last step it logged a scalar at."""
        step = _as_int(self.namespace.get("global_step"))
        if step is None:
            step = _as_int(self.step)
        return step if step is not None else 0

    def checkpoint(self, name: str, step: int, **marker: Any) -> str | None:
        """Save the script's networks as checkpoints/<name>.cleanrl_model and announce it; None when nothing to save."""
        relative = f"{CHECKPOINT_DIR}/{name}{MODEL_SUFFIX}"
        try:
            saved = save_model(self.namespace, relative, algo=self.algo, script=self.script, step=step)
        except Exception as exc:  # a failed checkpoint must not kill hours of training
            print(f"{MARKER}checkpoint {relative} failed: {exc!r}", file=sys.stderr, flush=True)
            return None
        if not saved:
            return None
        print(MARKER + json.dumps({"checkpoint": relative, "step": step, **marker}), flush=True)
        return relative

    def close_writers(self) -> None:
        """Flush and close every SummaryWriter the script opened, so the metrics so far are on disk."""
        writers = list(self.writers)
        writer = self.namespace.get("writer")
        if writer is not None and all(writer is not w for w in writers):
            writers.append(writer)
        for w in writers:
            try:
                w.close()
            except Exception as exc:
                print(f"{MARKER}closing the TensorBoard writer failed: {exc!r}", file=sys.stderr, flush=True)


def _as_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _script_args(namespace: dict[str, Any]) -> dict[str, Any]:
    args = namespace.get("args")
    if args is None:
        return {}
    try:
        items = vars(args)
    except TypeError:
        return {}
    return {str(key): _jsonable(value) for key, value in items.items()}


def _env_state(namespace: dict[str, Any]) -> dict[str, Any]:
    """Observation-normalisation statistics of the first env (ppo_continuous_action), which acting depends on."""
    envs = namespace.get("envs")
    sub_envs = getattr(envs, "envs", None)
    if not sub_envs:
        return {}
    env = sub_envs[0]
    for _ in range(64):  # wrapper chains are short; the bound guards against a cyclic `.env`
        rms = getattr(env, "obs_rms", None) if "obs_rms" in getattr(env, "__dict__", {}) else None
        if rms is not None:
            try:
                return {
                    "obs_rms": {
                        "mean": [float(x) for x in rms.mean.ravel()],
                        "var": [float(x) for x in rms.var.ravel()],
                        "count": float(rms.count),
                        "shape": list(rms.mean.shape),
                    }
                }
            except Exception:
                return {}
        inner = getattr(env, "env", None)
        if inner is None or inner is env:
            break
        env = inner
    return {}


def collect_modules(namespace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every torch.nn.Module among the script's globals (target copies skipped), as {name: {class, state_dict}}."""
    import torch

    modules: dict[str, dict[str, Any]] = {}
    seen: set[int] = set()
    for name, value in list(namespace.items()):
        if name.startswith("_") or not isinstance(value, torch.nn.Module):
            continue
        if any(part in name.lower() for part in _SKIPPED_NAME_PARTS) or id(value) in seen:
            continue
        seen.add(id(value))
        state = {
            key: tensor.detach().cpu() if isinstance(tensor, torch.Tensor) else tensor
            for key, tensor in value.state_dict().items()
        }
        modules[name] = {"class": type(value).__name__, "state_dict": state}
    return modules


def save_model(namespace: dict[str, Any], relative_path: str, *, algo: str, script: Path, step: int) -> bool:
    """Write the model file (format 1) for the script's current networks; False when it has none yet.

    The file is a torch.save'd dict: {"format": 1, "algo", "script", "global_step", "args" (JSON-able),
    "modules": {global_name: {"class", "state_dict"}}, "env": {"obs_rms": ...} when the env normalises
    observations}. It is written to a temporary name and renamed, so a reader never sees half a file.
    """
    import torch

    modules = collect_modules(namespace)
    if not modules:
        return False
    payload = {
        "format": MODEL_FORMAT,
        "algo": algo,
        "script": str(script),
        "global_step": int(step),
        "args": _script_args(namespace),
        "modules": modules,
        "env": _env_state(namespace),
    }
    target = Path(relative_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    try:
        torch.save(payload, tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return True


def _patch_summary_writer(runtime: _Runtime) -> None:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # a script without torch's TensorBoard writer: nothing to make live
        return
    if getattr(SummaryWriter, "__gym_gui_patched__", False):
        return
    original_init = SummaryWriter.__init__
    original_add_scalar = SummaryWriter.add_scalar

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        # flush_secs is the 5th positional parameter (log_dir, comment, purge_step, max_queue, flush_secs).
        if len(args) < 5 and "flush_secs" not in kwargs:
            kwargs["flush_secs"] = TENSORBOARD_FLUSH_SECS
        original_init(self, *args, **kwargs)
        runtime.writers.append(self)

    def add_scalar(
        self: Any, tag: Any, scalar_value: Any, global_step: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        result = original_add_scalar(self, tag, scalar_value, global_step, *args, **kwargs)
        if global_step is not None:
            runtime.step = global_step
            # Hot path (several calls per update): one attribute read and one comparison when nothing is due.
            if runtime.requested or global_step >= runtime.next_due:
                runtime.on_scalar_step(global_step)
        return result

    SummaryWriter.__init__ = __init__
    SummaryWriter.add_scalar = add_scalar
    SummaryWriter.__gym_gui_patched__ = True


def warm_start(namespace: dict[str, Any], model_path: str, module: str) -> None:
    """Load the ``module`` network of the saved model at ``model_path`` into the script's network of
    that name (a global of its namespace), in place, so an optimizer built on it trains it.

    Raises:
        SystemExit: with one line naming what does not match (the first tensor whose name or shape
            differs), which the worker reports as the run's failure.
    """
    try:
        saved = load_model_file(model_path)
    except ModelError as exc:
        raise SystemExit(f"warm start failed: {exc}") from None
    modules = saved["modules"]
    if module not in modules:
        raise SystemExit(
            f"warm start failed: the saved model has no {module!r} network (it has {', '.join(sorted(modules))})"
        )
    network = namespace.get(module)
    if network is None or not hasattr(network, "load_state_dict"):
        raise SystemExit(
            f"warm start failed: the script has no {module!r} network when its optimizer is built"
        )
    state = modules[module]["state_dict"]
    own = network.state_dict()
    for name, tensor in own.items():
        if name not in state:
            raise SystemExit(
                f"warm start failed: tensor {name!r} of the script's {module} is not in the saved model"
            )
        if tuple(state[name].shape) != tuple(tensor.shape):
            raise SystemExit(
                f"warm start failed: tensor {name!r} has shape {list(tensor.shape)} in the script's {module} "
                f"and {list(state[name].shape)} in the saved model"
            )
    for name in state:
        if name not in own:
            raise SystemExit(
                f"warm start failed: the saved model's tensor {name!r} is not in the script's {module}"
            )
    network.load_state_dict(state)
    print(MARKER + json.dumps({"warm_start": model_path, "module": module}), flush=True)


def _patch_warm_start(runtime: _Runtime, model_path: str, module: str) -> None:
    """Load the saved model when the script builds its first optimizer: its network exists by then
    (CleanRL builds ``agent`` / ``q_network`` and then its optimizer over their parameters) and no
    step has been trained; a dqn script copies ``target_network`` from ``q_network`` after that."""
    import torch

    original_init = torch.optim.Optimizer.__init__
    loaded = False

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal loaded
        if not loaded:
            loaded = True
            warm_start(runtime.namespace, model_path, module)
        original_init(self, *args, **kwargs)

    torch.optim.Optimizer.__init__ = __init__


def _install_signal_handlers(runtime: _Runtime) -> None:
    launcher_pid = os.getpid()

    def on_term(signum: int, frame: Any) -> None:
        if os.getpid() != launcher_pid:
            # A forked child of the script (e.g. an AsyncVectorEnv worker) inherited this handler: die normally.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if runtime.stopping:  # already saving after a stop: a second SIGTERM must not abort the save
            return
        runtime.stopping = True
        raise _Terminated()

    def on_usr1(signum: int, frame: Any) -> None:
        # Only a flag: saving from inside a signal handler could catch the networks mid-update.
        runtime.requested = True

    signal.signal(signal.SIGTERM, on_term)
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, on_usr1)
        # The worker starts this process with SIGUSR1 blocked; a request that arrived meanwhile
        # is delivered now, to the handler.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        cut = argv.index("--")
        own, flags = argv[:cut], argv[cut + 1 :]
    else:
        own, flags = argv, []
    parser = argparse.ArgumentParser(
        prog="python -m gym_gui_cleanrl_worker.launch",
        description="Run a CleanRL script in this process, saving its trained networks.",
    )
    parser.add_argument(
        "--script", required=True, help="path of the CleanRL script (e.g. .../cleanrl/ppo.py)"
    )
    parser.add_argument(
        "--run-dir", required=True, help="working directory: runs/, videos/, checkpoints/ land here"
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=None, help="also checkpoint every N global steps"
    )
    parser.add_argument("--warm-start", default=None, help="a saved model to start training from")
    parser.add_argument(
        "--warm-start-module", default=None, help="the script's network it is loaded into (e.g. agent)"
    )
    return parser.parse_args(own), flags


def run(
    script: Path,
    run_dir: Path,
    flags: list[str],
    checkpoint_every: int | None = None,
    warm_start_from: tuple[str, str] | None = None,
) -> int:
    """Run `script` with argv `[script, *flags]` in `run_dir` in this process; return the exit code.

    ``warm_start_from`` (model path, network name) loads a saved model into the script's network
    before training (:func:`warm_start`).

    0: the script finished and checkpoints/final.cleanrl_model was saved (when it had networks).
    143: SIGTERM stopped it; checkpoints/interrupted.cleanrl_model was saved and its writers closed.
    A script error (argparse's SystemExit, an exception) propagates unchanged, so the interpreter reports
    the script's own message on stderr and exits non-zero.
    """
    script = script.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(run_dir)
    # Piped stdout is block-buffered; the worker parses the script's lines as they come.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    compat.install()

    module = types.ModuleType("__main__")
    module.__file__ = str(script)
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    namespace = module.__dict__
    runtime = _Runtime(script, namespace, checkpoint_every)
    _patch_summary_writer(runtime)
    if warm_start_from is not None:
        _patch_warm_start(runtime, *warm_start_from)
    code = compile(script.read_bytes(), str(script), "exec")

    # As `python script.py` would: the script's dir first on sys.path, and it is `__main__` (for pickling).
    runtime.launcher_main = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    sys.argv = [str(script), *flags]
    if sys.path:
        sys.path[0] = str(script.parent)
    else:
        sys.path.insert(0, str(script.parent))
    _install_signal_handlers(runtime)
    print(MARKER + json.dumps({"started": True, "pid": os.getpid()}), flush=True)
    try:
        exec(code, namespace)
    except _Terminated:
        return _stop(runtime, "interrupted", EXIT_TERMINATED)
    except KeyboardInterrupt:
        runtime.stopping = True
        return _stop(runtime, "interrupted", EXIT_INTERRUPTED)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            runtime.stopping = True
            runtime.close_writers()
            raise
    except BaseException:
        runtime.stopping = True
        runtime.close_writers()
        raise
    # Training is over: a SIGTERM now would only lose the final model, so it is ignored while saving.
    runtime.stopping = True
    runtime.checkpoint("final", runtime.current_step(), final=True)
    return 0


def _stop(runtime: _Runtime, name: str, code: int) -> int:
    # The stop may have interrupted a print mid-line (`SPS:` without its number): end that line, so
    # the checkpoint's marker starts a line of its own and the worker reads it.
    print(flush=True)
    runtime.close_writers()
    runtime.checkpoint(name, runtime.current_step(), interrupted=True)
    return code


def main(argv: list[str] | None = None) -> int:
    """CLI: `launch --script PATH --run-dir DIR [--checkpoint-every N] [--warm-start MODEL
    --warm-start-module NAME] -- <script flags…>`."""
    options, flags = _parse(list(sys.argv[1:] if argv is None else argv))
    warm = (options.warm_start, options.warm_start_module or "") if options.warm_start else None
    return run(Path(options.script), Path(options.run_dir), flags, options.checkpoint_every, warm)


if __name__ == "__main__":
    sys.exit(main())
