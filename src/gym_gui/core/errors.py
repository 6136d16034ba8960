"""Exceptions whose message a user can act on; the CLI and GUI show the message, not a traceback."""

from __future__ import annotations


class GymGuiError(Exception):
    """Base of every error gym_gui reports to a user."""


class ConfigError(GymGuiError):
    """A run configuration is invalid; the message names the field and the bad value."""


class InvalidRunId(GymGuiError):
    """A run id is not of the form gym_gui accepts (it would not be a safe directory name)."""


class IllegalTransition(GymGuiError):
    """A run was asked to move between two states the run model does not connect."""


class UnknownEnv(GymGuiError):
    """An environment id is not in the catalog or not installed; the message says how to install it."""


class RunNotFound(GymGuiError):
    """No run with that id exists."""


class RunBusy(GymGuiError):
    """The run is in a state that does not allow the operation (e.g. deleting a running run)."""


class StorageError(GymGuiError):
    """Stored data could not be read or written as asked; nothing stored was changed."""


class DiskFull(StorageError):
    """The filesystem holding gym_gui's data is full, or too full to start a run.

    The message starts with "disk full:" and names the filesystem, the path written and the
    bytes still free.
    """


class SweepNotFound(GymGuiError):
    """No sweep with that id exists."""
