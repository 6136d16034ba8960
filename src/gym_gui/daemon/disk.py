"""The disk the runs are stored on: refusing to start runs when it is nearly full, warning live runs, the reserve."""

from __future__ import annotations

import logging

from gym_gui.daemon.live import LiveRuns, SupervisorSettings
from gym_gui.storage.space import FreeSpace, SpaceReserve, format_bytes, free_space

log = logging.getLogger(__name__)


class DiskWatch:
    """Free space on the filesystem of the home's runs, as the daemon acts on it.

    - Below ``min_free_bytes`` no run starts: a submit is refused, a queued run fails "not launched".
    - Below ``warn_free_bytes`` every started, live run carries a warning (its row's ``warning``,
      and a WARNING event once), cleared when space returns.
    - The space reserve (``SpaceReserve``, which the registry releases when the disk fills) is
      allocated again once there is room for it.

    ``check`` runs on every tick of the supervision loop, under the runs' lock.
    """

    def __init__(self, runs: LiveRuns, settings: SupervisorSettings, reserve: SpaceReserve | None) -> None:
        self.runs = runs
        self.settings = settings
        self.reserve = reserve
        self._warned: set[str] = set()  # runs told once by an event

    def space(self) -> FreeSpace | None:
        """The free space now, or None when the filesystem cannot be asked (nothing is refused then)."""
        try:
            return free_space(self.runs.home.runs_dir)
        except OSError as exc:
            log.warning("free space of %s unknown: %s", self.runs.home.runs_dir, exc)
            return None

    def refusal(self) -> str:
        """Why no run may start now, or "" when one may."""
        space = self.space()
        least = self.settings.min_free_bytes
        if space is None or space.free >= least:
            return ""
        return (
            f"disk full: {space.describe()}, and a run starts only with at least {format_bytes(least)} "
            "free (`gym-gui daemon start --min-free-mb`)"
        )

    def check(self) -> None:
        """Warn the live runs while space is low (or stop warning), and take the reserve back when there is room."""
        space = self.space()
        if space is None:
            return
        if self.reserve is not None and space.free >= self.settings.min_free_bytes and not self.reserve.held:
            self.reserve.ensure()
        text = ""
        if space.free < self.settings.warn_free_bytes:
            text = f"disk low: {space.describe()}; a run fails once the disk is full"
        for run in self.runs.all():
            if run.finalized or run.writer is None:
                continue
            changed = bool(run.warning) != bool(text)
            run.warning = text
            if changed:
                self.runs.publish_row(run.run_id)
            if text and run.run_id not in self._warned:
                self._warned.add(run.run_id)
                log.warning("run %s: %s", run.run_id, text)
                self.runs.event(run, "WARNING", text, kind="disk")
        self._warned.intersection_update(run.run_id for run in self.runs.all())
