"""The gym_gui home directory ($GYM_GUI_HOME): where every run, the registry and the daemon's files live."""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
from pathlib import Path

import platformdirs

from gym_gui.core.daemon_file import DaemonFile, setting_differences
from gym_gui.core.daemon_options import option_differences, read_daemon_options
from gym_gui.core.errors import InvalidRunId
from gym_gui.core.files import write_atomically
from gym_gui.core.ids import validate_run_id, validate_sweep_id

logger = logging.getLogger(__name__)

HOME_ENV_VAR = "GYM_GUI_HOME"
_HOME_ID = re.compile(r"^[A-Za-z0-9.-]{1,60}-[0-9a-f]{8}$")
BUNDLES_ENV_VAR = "GYM_GUI_BUNDLES"


class Home:
    """Paths inside one gym_gui home directory.

    Nothing is created on construction; call :meth:`ensure` before writing. Its
    layout::

        <root>/runs/<run_id>/       one run directory each (its files: storage.run_dir.RunDir)
        <root>/registry.sqlite
        <root>/daemon.json  daemon.log  daemon.lock
        <root>/daemon-options.json  the daemon's options a user chose (core.daemon_options)
        <root>/space.reserve        the daemon's space reserve (storage.space.SpaceReserve)
        <root>/home.id              the home's id (:attr:`Home.home_id`)
        <root>/bundles/<name>/
        <root>/datasets/<dataset id>/  offline datasets, Minari's (gym_gui.datasets)
    """

    def __init__(self, root: Path | None = None) -> None:
        """Use ``root``, else ``$GYM_GUI_HOME``, else the platform's user data directory.

        The root is made absolute once here so that a later ``chdir`` does not move it.
        """
        if root is None:
            from_env = os.environ.get(HOME_ENV_VAR)
            root = Path(from_env) if from_env else Path(platformdirs.user_data_dir("gym_gui"))
        self._root = Path(root).expanduser().resolve()

    def __repr__(self) -> str:
        return f"Home({str(self._root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Home) and other._root == self._root

    def __hash__(self) -> int:
        return hash(self._root)

    @property
    def root(self) -> Path:
        return self._root

    def holds(self, path: Path | str) -> bool:
        """Whether ``path``, its symlinks resolved, is this home or lies inside it.

        The home's files are gym_gui's own (the registry, each run's database): nothing a user names
        as a destination or a foreign database may be one of them.
        """
        return Path(path).expanduser().resolve().is_relative_to(self._root)

    @property
    def runs_dir(self) -> Path:
        return self._root / "runs"

    @property
    def operators_dir(self) -> Path:
        """Where operator processes (a model answering a seat) write their standard error, one log each."""
        return self._root / "operators"

    @property
    def datasets_dir(self) -> Path:
        """Where the offline lane's datasets live: Minari's datasets root (``MINARI_DATASETS_PATH``)."""
        return self._root / "datasets"

    @property
    def sweeps_dir(self) -> Path:
        """Where each sweep keeps its spec and (by default) its study's SQLite file."""
        return self._root / "sweeps"

    def sweep_dir(self, sweep_id: str) -> Path:
        """The directory of sweep ``sweep_id`` (not created).

        Raises:
            InvalidRunId: when ``sweep_id`` is not a safe directory name.
        """
        return self.sweeps_dir / validate_sweep_id(sweep_id)

    @property
    def registry_path(self) -> Path:
        return self._root / "registry.sqlite"

    @property
    def daemon_json(self) -> Path:
        return self._root / "daemon.json"

    @property
    def daemon_options_path(self) -> Path:
        """The options every daemon of this home starts with (`gym-gui daemon start --max-concurrent …`)."""
        return self._root / "daemon-options.json"

    @property
    def daemon_log(self) -> Path:
        return self._root / "daemon.log"

    @property
    def dashboard_log(self) -> Path:
        """What the window's optuna-dashboard servers print (one file, appended to)."""
        return self._root / "optuna-dashboard.log"

    @property
    def daemon_lock(self) -> Path:
        return self._root / "daemon.lock"

    @property
    def tls_dir(self) -> Path:
        """The daemon's CA and server certificate, when it listens beyond loopback (daemon/tls.py)."""
        return self._root / "tls"

    @property
    def reserve_path(self) -> Path:
        """The daemon's space reserve: released when the disk fills, so the registry can record run ends."""
        return self._root / "space.reserve"

    @property
    def home_id_path(self) -> Path:
        return self._root / "home.id"

    def known_home_id(self) -> str | None:
        """This home's id if one was made (its daemon makes it), else None; reading creates nothing."""
        return self.home_id if self.home_id_path.exists() else None

    @property
    def home_id(self) -> str:
        """This home's id, ``{host}-{8 hex}``, made on first use and kept in ``home.id``.

        A study shared by several daemons (sweeps on PostgreSQL) marks each trial with the id of
        the home that plays it, so each daemon knows its own trials from the others'.
        """
        path = self.home_id_path
        try:
            found = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            found = ""
        if _HOME_ID.match(found):
            return found
        host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:60] or "host"
        made = f"{host}-{secrets.token_hex(4)}"
        self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomically(path, made + "\n")
        return made

    @property
    def bundles_dir(self) -> Path:
        """Where the worker bundles (virtual environments) live: ``$GYM_GUI_BUNDLES``, else ``<root>/bundles``.

        ``GYM_GUI_BUNDLES`` names one absolute directory that several homes share: a bundle
        takes minutes and gigabytes to build, so the test suite and ``make test`` point every
        temporary home at one pre-installed bundles directory instead of installing per home.
        The variable is read on each access (a relative value is taken from the current
        directory); unset or empty means the home's own ``bundles/``.
        """
        shared = os.environ.get(BUNDLES_ENV_VAR)
        if shared:
            return Path(shared).expanduser().resolve()
        return self._root / "bundles"

    def daemon_settings(self) -> dict[str, str | None]:
        """The environment settings a daemon of this home started now would read once and keep
        (its bundles directory, and the GPUs its workers see); None for an unset variable."""
        return {
            BUNDLES_ENV_VAR: str(self.bundles_dir),
            "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }

    def daemon_differences(self, running: DaemonFile) -> list[str]:
        """One sentence per setting or option the running daemon has other than a daemon of this home
        started now would (it reads them once, when it starts).

        Raises:
            ConfigError: when the home's daemon-options.json cannot be read as options.
        """
        return setting_differences(running.settings, self.daemon_settings()) + option_differences(
            running.options, read_daemon_options(self.daemon_options_path)
        )

    def ensure(self) -> Home:
        """Create the root (mode 0700), ``runs/`` and ``bundles/`` if missing; return ``self``.

        The root is private because ``daemon.json`` holds the daemon's token. The mode
        of an existing root is left alone: it may be a directory the user chose and manages.
        """
        if not self._root.exists():
            self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
            # mkdir's mode is filtered by the umask; make the intent hold regardless.
            os.chmod(self._root, 0o700)
            logger.info("created gym_gui home %s", self._root)
        self.runs_dir.mkdir(exist_ok=True)
        self.bundles_dir.mkdir(parents=True, exist_ok=True)
        return self

    def run_dir(self, run_id: str) -> Path:
        """The directory of run ``run_id`` (not created); ``RunDir(home.run_dir(run_id))`` names its files.

        Raises:
            InvalidRunId: when ``run_id`` is not a safe directory name, or when the
                directory would resolve outside ``runs/`` (e.g. through a symlink).
        """
        validate_run_id(run_id)
        path = self.runs_dir / run_id
        runs = self.runs_dir.resolve()
        resolved = path.resolve()
        if resolved == runs or not resolved.is_relative_to(runs):
            raise InvalidRunId(
                f"run id {run_id!r} resolves to {resolved}, outside the runs directory {runs}; "
                "remove the stray link or pick another id"
            )
        return path
