"""Settings: the cockpit's remembered layout and choices, a typed wrapper over an INI QSettings file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow

from gym_gui.core.config import looks_secret
from gym_gui.storage.home import Home

FILE_NAME = "cockpit.ini"


class SecretNotStored(ValueError):
    """A value under a secret-looking key was offered for storage; secrets never reach disk."""


def _refuse_secrets(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if looks_secret(key):
                raise SecretNotStored(f"{where}.{key} looks like a secret and is never stored")
            _refuse_secrets(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _refuse_secrets(item, f"{where}[{index}]")


class Settings:
    """What the window remembers between starts (organization "gym_gui", application "cockpit").

    The file is ``<GYM_GUI_HOME>/cockpit.ini`` rather than the platform's settings location, so
    that each home (and each test's temporary home) has its own. Values that are not plain
    strings are stored as JSON text: INI files would otherwise turn ints and bools into strings.
    Nothing named like a secret (api key, token, secret, password) is ever written.
    """

    def __init__(self, home: Path | None = None) -> None:
        root = Home(home).root
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = root / FILE_NAME
        self._qsettings = QSettings(str(self.path), QSettings.Format.IniFormat)

    @property
    def qsettings(self) -> QSettings:
        return self._qsettings

    def sync(self) -> None:
        """Write pending changes to the file now (QSettings otherwise writes them lazily)."""
        self._qsettings.sync()

    # ------------------------------------------------------------ JSON values

    def _get_json(self, key: str) -> Any:
        raw = self._qsettings.value(key)
        if raw is None:
            return None
        try:
            return json.loads(str(raw))
        except ValueError:
            return None  # a hand-edited or foreign value: treat as unset rather than fail the window

    def _set_json(self, key: str, value: Any) -> None:
        _refuse_secrets({key.rsplit("/", 1)[-1]: value}, "settings")
        self._qsettings.setValue(key, json.dumps(value))

    def _get_str(self, key: str) -> str | None:
        value = self._get_json(key)
        return value if isinstance(value, str) and value else None

    # ------------------------------------------------------------ window

    def window_geometry(self) -> QByteArray | None:
        value = self._qsettings.value("window/geometry")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_window_geometry(self, geometry: QByteArray) -> None:
        self._qsettings.setValue("window/geometry", geometry)

    def window_state(self) -> QByteArray | None:
        value = self._qsettings.value("window/state")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_window_state(self, state: QByteArray) -> None:
        self._qsettings.setValue("window/state", state)

    def save_window(self, window: QMainWindow) -> None:
        """Remember the window's geometry and its docks' and toolbars' layout."""
        self.set_window_geometry(window.saveGeometry())
        self.set_window_state(window.saveState())
        self.sync()

    def restore_window(self, window: QMainWindow) -> bool:
        """Put the window back as it was saved; False when nothing was saved."""
        geometry, state = self.window_geometry(), self.window_state()
        restored = False
        if geometry is not None:
            restored = window.restoreGeometry(geometry) or restored
        if state is not None:
            restored = window.restoreState(state) or restored
        return restored

    def splitter_sizes(self, name: str) -> list[int] | None:
        value = self._get_json(f"splitters/{name}")
        if isinstance(value, list) and value and all(isinstance(v, int) and v >= 0 for v in value):
            return value
        return None

    def set_splitter_sizes(self, name: str, sizes: list[int]) -> None:
        self._set_json(f"splitters/{name}", [int(size) for size in sizes])

    # ------------------------------------------------------------ last choices

    def last_env(self) -> str | None:
        return self._get_str("last/env")

    def set_last_env(self, env_id: str | None) -> None:
        self._set_json("last/env", env_id or "")

    def last_worker(self) -> str | None:
        return self._get_str("last/worker")

    def set_last_worker(self, kind: str | None) -> None:
        self._set_json("last/worker", kind or "")

    def last_mode(self) -> str | None:
        return self._get_str("last/mode")

    def set_last_mode(self, mode: str | None) -> None:
        self._set_json("last/mode", mode or "")

    # ------------------------------------------------------------ forms

    def form_values(self, worker_kind: str) -> dict[str, Any]:
        """The values a worker's form had when it was last used (empty when never saved)."""
        value = self._get_json(f"forms/{worker_kind}")
        return value if isinstance(value, dict) else {}

    def set_form_values(self, worker_kind: str, values: dict[str, Any]) -> None:
        """Remember a form's values (JSON-able).

        Raises:
            SecretNotStored: when any key, at any depth, is named like a secret; nothing is written.
            TypeError: when a value is not JSON-able.
        """
        _refuse_secrets(values, f"forms.{worker_kind}")
        self._qsettings.setValue(f"forms/{worker_kind}", json.dumps(values))
