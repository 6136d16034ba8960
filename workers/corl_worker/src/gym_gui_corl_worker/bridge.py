"""The live bridge between a CORL script and its run: every ``wandb.log`` dict into metrics before W&B gets
it, the W&B run ``wandb.init`` started, each ``torch.save`` into the checkpoints directory as an artifact,
and the run's pause and stop at the script's next log.

It works the same whether W&B is online, offline or disabled: the wrappers forward to gym_gui first and
then call W&B's own functions, which do what the mode says (nothing, when disabled).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterator, Mapping
from numbers import Real
from pathlib import Path
from typing import Any, Protocol

# The tag a normalised evaluation's raw return is recorded under (the kind's return metric).
RETURN_TAG = "eval/return"

Point = tuple[str, int, float]


class Session(Protocol):
    """What the bridge asks of the run's ``WorkerSession``."""

    @property
    def held(self) -> bool: ...

    def wait_if_paused(self) -> None: ...

    def metrics(self, points: list[Point], wall_time: float | None = None) -> None: ...

    def artifact(self, kind: str, path: str, step: int = 0, meta: dict[str, Any] | None = None) -> None: ...

    def event(self, level: str, message: str, data: dict[str, Any] | None = None) -> None: ...


class RunStopped(BaseException):
    """Raised inside the script at its next ``wandb.log`` once the run was asked to stop. A BaseException,
    so the script's own ``except Exception`` lets it through."""


def scalar(value: Any) -> float | None:
    """``value`` as a float when it is one number (a Python or numpy number, a one-element array or
    tensor); None for anything else W&B logs (media, histograms, text)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, Real):
        return float(value)
    size = getattr(value, "size", None)
    if callable(size):  # a torch tensor: size() is its shape
        size = value.numel() if hasattr(value, "numel") else None
    if size == 1 and hasattr(value, "item"):
        try:
            item = value.item()
        except (TypeError, ValueError, RuntimeError):
            return None
        return float(item) if isinstance(item, Real) else None
    return None


def flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """The leaves of a logged dict; a nested dict's keys joined with ``.``, as W&B names them."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flatten(value, f"{name}.")
        else:
            yield name, value


class WandbBridge:
    """One run's wrappers around ``wandb.init``, ``wandb.log`` and ``torch.save``.

    Steps follow W&B's rule: a log with ``step`` is at that step, one without is at the step after the
    last committed one, and ``commit=False`` keeps the step for the next log.
    """

    def __init__(self, session: Session, run_dir: Path, checkpoints_dir: Path) -> None:
        self.session = session
        self.run_dir = run_dir.resolve()
        self.checkpoints_dir = checkpoints_dir.resolve()
        self.step = 0  # the step of the next log without one
        self.last_step = 0  # the step of the latest log
        self.saved: list[tuple[str, int]] = []  # checkpoints registered: (path in the run, step)
        self.wandb_run: dict[str, Any] | None = None
        self.wandb_error: str | None = None
        self.skipped: set[str] = set()  # keys whose values are no number (said once each)

    # ------------------------------------------------------------ wandb.log

    def log(self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
        """Forward ``data``'s numbers as metrics at the step W&B will log them at; hold while paused, and
        unwind the script (:class:`RunStopped`) once the run is asked to stop."""
        if self.session.held:
            self.session.wait_if_paused()
        if self.stop_requested():
            raise RunStopped
        at = self.step if step is None else int(step)
        points: list[Point] = []
        for tag, value in flatten(data):
            number = scalar(value)
            if number is None:
                if tag not in self.skipped:
                    self.skipped.add(tag)
                    self.session.event("INFO", f"W&B key {tag!r} holds no number: it is not charted here")
            elif math.isfinite(number):
                points.append((tag, at, number))
        if points:
            self.session.metrics(points)
        self.last_step = at
        if commit is not False:
            self.step = at + 1
        else:
            self.step = at

    def stop_requested(self) -> bool:
        stop = getattr(self.session, "stop_requested", None)
        return bool(stop is not None and stop.is_set())

    def score(self, raw: float) -> None:
        """A return the script normalised (its evaluation), recorded at the latest step."""
        if math.isfinite(raw):
            self.session.metrics([(RETURN_TAG, self.last_step, raw)])

    # ------------------------------------------------------------ wandb.init

    def started(self, run: Any) -> None:
        """Register the W&B run ``wandb.init`` returned (a disabled one has no directory: nothing)."""
        if run is None or getattr(run, "disabled", False) or type(run).__name__ == "RunDisabled":
            return
        sync_dir = getattr(run, "sync_dir", None) or getattr(run, "dir", None)
        if not sync_dir:
            return
        path = Path(sync_dir).resolve()
        if path.name == "files":
            path = path.parent
        if not path.is_relative_to(self.run_dir):
            self.session.event(
                "WARNING", f"the W&B run went outside the run directory ({path}): not registered"
            )
            return
        offline = bool(getattr(run, "offline", False))
        meta = {
            "mode": "offline" if offline else "online",
            "wandb_run_id": run.id,
            "project": getattr(run, "project", None),
        }
        if not offline:
            meta["url"] = run.url
        self.wandb_run = {"path": str(path.relative_to(self.run_dir)), "meta": meta}
        self.session.artifact("wandb", self.wandb_run["path"], self.last_step, meta)

    # ------------------------------------------------------------ torch.save

    def saved_to(self, target: Any) -> None:
        """A file ``torch.save`` wrote: a checkpoint when it is under the run's checkpoints directory."""
        if not isinstance(target, str | os.PathLike):
            return
        path = Path(os.fspath(target))
        path = (Path.cwd() / path if not path.is_absolute() else path).resolve()
        if not path.is_relative_to(self.checkpoints_dir) or not path.is_file():
            return
        relative = str(path.relative_to(self.run_dir))
        self.saved.append((relative, self.last_step))
        self.session.artifact("checkpoint", relative, self.last_step, {"saved_by": "torch.save"})

    def final_model(self) -> tuple[str, int] | None:
        """The newest checkpoint still there: the run's model."""
        for relative, step in reversed(self.saved):
            if (self.run_dir / relative).is_file():
                return relative, step
        return None

    # ------------------------------------------------------------ installing

    def install(self, wandb: Any, torch: Any) -> None:
        """Wrap ``wandb.init``, ``wandb.log`` and ``torch.save`` (the modules the script will import).

        ``wandb.init`` points ``wandb.log`` at its run's ``log`` (a ``NoopRun``'s when disabled), so the
        run's class gets the wrapper once init returns, and ``wandb.log`` is pointed at it again.
        """
        real_init, real_save = wandb.init, torch.save
        patch_legacy_save(wandb)

        @functools.wraps(real_init)
        def init(*args: Any, **kwargs: Any) -> Any:
            try:
                run = real_init(*args, **kwargs)
            except Exception as exc:
                self.wandb_error = (f"{type(exc).__name__}: {exc}".strip().splitlines() or ["unknown"])[0]
                raise
            self._wrap_log(type(run))
            wandb.log = run.log
            try:
                self.started(run)
            except Exception as exc:  # a run W&B started goes on, registered or not
                self.session.event("WARNING", f"the W&B run could not be registered: {exc!r}")
            return run

        @functools.wraps(real_save)
        def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
            result = real_save(obj, f, *args, **kwargs)
            self.saved_to(f)
            return result

        wandb.init, torch.save = init, save

    def _wrap_log(self, run_class: Any) -> None:
        real = run_class.log
        if getattr(real, _WRAPPED, None) is self:
            return
        bridge = self

        @functools.wraps(real)
        def log(
            run: Any,
            data: Mapping[str, Any],
            step: int | None = None,
            commit: bool | None = None,
            **kwargs: Any,
        ) -> Any:
            bridge.log(data, step, commit)
            return real(run, data, step=step, commit=commit, **kwargs)

        setattr(log, _WRAPPED, self)
        run_class.log = log


_WRAPPED = "_gym_gui_bridge"


def patch_legacy_save(wandb: Any) -> None:
    """``wandb.run.save()`` with no file, which CORL's scripts call after ``wandb.init`` (W&B 0.12 took it
    as a no-op kept for old code), is a no-op again: W&B 0.31 requires the file and raises."""
    run_class = wandb.sdk.wandb_run.Run
    real = run_class.save
    if getattr(real, _WRAPPED, False):
        return

    @functools.wraps(real)
    def save(run: Any, glob_str: Any = None, *args: Any, **kwargs: Any) -> Any:
        if glob_str is None and not args and not kwargs:
            return True
        return real(run, glob_str, *args, **kwargs)

    setattr(save, _WRAPPED, True)
    run_class.save = save
