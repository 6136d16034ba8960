"""The W&B tab: a run's Weights & Biases run — local config and summary, Sync for offline runs, the URL of online ones."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core import wandb_auth
from gym_gui.core.errors import GymGuiError, StorageError
from gym_gui.core.records import RunRecord
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.artifacts import json_file
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tabs.base import RunTab
from gym_gui.workers.wandb_sync import (
    bundle_environment,
    key_sources,
    offline_runs,
    sync_offline_runs,
    wandb_python,
)

log = logging.getLogger(__name__)

READ_TIMEOUT = 120.0
_MARK = "GYM_GUI_WANDB "

# Run by the bundle's interpreter (it has wandb and PyYAML): the local run's config and summary
# as JSON. files/config.yaml and files/wandb-summary.json are what wandb writes when it syncs;
# an offline run may have neither, and then both are rebuilt from the run's transaction log
# (run-<id>.wandb: a LevelDB-style record log of wandb's protobuf Records).
_READER = r"""
import json, struct, sys
from pathlib import Path

run = Path(sys.argv[1])
out = {"config": None, "config_source": None, "summary": None, "summary_source": None, "problems": []}

def unwrap(data):
    return {k: (v["value"] if isinstance(v, dict) and "value" in v else v) for k, v in (data or {}).items()}

path = run / "files" / "config.yaml"
if path.is_file():
    try:
        import yaml
        out["config"] = unwrap(yaml.safe_load(path.read_text()))
        out["config_source"] = "files/config.yaml"
    except Exception as exc:
        out["problems"].append(f"files/config.yaml could not be read: {type(exc).__name__}: {exc}")
path = run / "files" / "wandb-summary.json"
if path.is_file():
    try:
        out["summary"] = json.loads(path.read_text())
        out["summary_source"] = "files/wandb-summary.json"
    except Exception as exc:
        out["problems"].append(f"files/wandb-summary.json could not be read: {type(exc).__name__}: {exc}")

def records(data):
    block, pos, pending = 32768, 7, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            pos += left
            continue
        if pos + 7 + length > len(data):
            return  # the run is still writing this record
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield chunk
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield pending + chunk
            pending = b""

def key_of(item):
    return item.key or ".".join(item.nested_key)

def apply(target, update, remove=()):
    for item in update:
        try:
            target[key_of(item)] = json.loads(item.value_json)
        except ValueError:
            target[key_of(item)] = item.value_json
    for item in remove:
        target.pop(key_of(item), None)

logs = sorted(run.glob("run-*.wandb"))
if (out["config"] is None or out["summary"] is None) and logs:
    try:
        from wandb.proto import wandb_internal_pb2 as wpb
        data = logs[-1].read_bytes()
        if data[:4] != b":W&B":
            raise ValueError("not a W&B transaction log")
        config, summary = {}, {}
        for raw in records(data):
            record = wpb.Record()
            record.ParseFromString(raw)
            kind = record.WhichOneof("record_type")
            if kind == "run":
                apply(config, record.run.config.update)
            elif kind == "config":
                apply(config, record.config.update, record.config.remove)
            elif kind == "summary":
                apply(summary, record.summary.update, record.summary.remove)
        if out["config"] is None:
            out["config"], out["config_source"] = config, logs[-1].name
        if out["summary"] is None and summary:
            out["summary"], out["summary_source"] = summary, logs[-1].name
    except Exception as exc:
        out["problems"].append(f"{logs[-1].name} could not be decoded: {type(exc).__name__}: {exc}")
print("GYM_GUI_WANDB " + json.dumps(out, default=str))
"""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VIEW_RUN = re.compile(r"View run at:?\s+(https?://\S+)")


@dataclass
class WandbRunInfo:
    """What the tab shows about a run's W&B run."""

    mode: str  # "disabled", "offline", "online", or "" when the run has no config
    message: str
    path: Path | None = None
    url: str | None = None
    config: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)  # what is missing, and why
    offline_dirs: list[Path] = field(default_factory=list)
    python: Path | None = None  # the interpreter with wandb (the worker's bundle's), when installed
    bundle_reason: str = ""  # why there is none
    base_url: str | None = None  # the run's W&B server (tracking.wandb_base_url); None: W&B's cloud


def _url_from_logs(files: RunDir) -> str | None:
    # wandb prints "View run at <url>" when an online run starts; the worker keeps the script's output.
    for log_file in (files.worker_stderr_log, files.worker_stdout_log):
        try:
            text = _ANSI.sub("", log_file.read_text(errors="replace"))
        except OSError:
            continue
        found = _VIEW_RUN.findall(text)
        if found:
            return str(found[-1])
    return None


def read_wandb_run(run_dir: Path, worker: str, bundles_dir: Path, terminal: bool) -> WandbRunInfo:
    """Everything the tab shows about ``run_dir``'s W&B run (blocking: call it off the GUI thread).

    wandb is read with the interpreter of the bundle the run's ``worker`` runs in (gym_gui's own
    environment has no wandb).

    Raises:
        StorageError: the run's manifest is damaged (the message names the file and what is wrong).
    """
    files = RunDir(run_dir)
    wanted: str
    base_url: str | None = None
    try:
        tracking = files.read_config().tracking
        wanted, base_url = tracking.wandb_mode, tracking.wandb_base_url
    except StorageError:
        wanted = ""  # no readable config: only the W&B files on disk can tell
    entry = files.read_manifest().wandb
    recorded = files.artifact_path(entry.path) if entry is not None else None
    local = files.wandb_runs()
    offline_dirs = offline_runs(run_dir)
    if recorded is None and not local:
        if wanted in ("offline", "online"):
            when = "no W&B run was written" if terminal else "its W&B run has not started yet"
            return WandbRunInfo(wanted, f"This run logs to Weights & Biases ({wanted}), but {when}.")
        return WandbRunInfo(
            "disabled",
            "This run does not log to Weights & Biases (tracking.wandb_mode is disabled). "
            "Choose offline or online W&B tracking in the training form to get one.",
        )
    path = recorded if recorded is not None else local[-1]
    mode = (entry.mode if entry else None) or ("offline" if path.name.startswith("offline-") else "online")
    python: Path | None
    try:
        python, reason = wandb_python(worker, bundles_dir), ""
    except GymGuiError as exc:
        python, reason = None, str(exc)
    info = WandbRunInfo(
        mode,
        "",
        path=path,
        offline_dirs=offline_dirs,
        python=python,
        bundle_reason=reason,
        base_url=base_url,
    )
    if mode == "online":
        info.url = (entry.url if entry else None) or _url_from_logs(files)
        info.message = (
            f"Online W&B run: {info.url}"
            if info.url
            else f"Online W&B run {path.name}; W&B did not report its URL (find it in your project by "
            f"the run id {(entry.wandb_run_id if entry else None) or path.name.rsplit('-', 1)[-1]})."
        )
    else:
        server = f"the W&B server at {base_url}" if base_url else "W&B"
        info.message = f"Offline W&B run, kept in {path}. Sync uploads it to {server}."
    _read_local(info, path)
    return info


def _read_local(info: WandbRunInfo, path: Path) -> None:
    if info.python is None:
        # Without the bundle, only the JSON summary is readable here (config.yaml needs PyYAML).
        summary = path / "files" / "wandb-summary.json"
        if summary.is_file():
            info.summary = json_file(summary)
        info.notes.append(
            f"The config is read with the wandb of the run's worker bundle, which is not ready: {info.bundle_reason}"
        )
        return
    try:
        result = subprocess.run(
            [str(info.python), "-c", _READER, str(path)],
            capture_output=True,
            text=True,
            timeout=READ_TIMEOUT,
            env=bundle_environment(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        info.notes.append(f"the local W&B run could not be read: {exc}")
        return
    lines = [line for line in result.stdout.splitlines() if line.startswith(_MARK)]
    if not lines:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        info.notes.append(f"the local W&B run could not be read: {tail}")
        return
    data = json.loads(lines[-1][len(_MARK) :])
    info.config = data.get("config")
    info.summary = data.get("summary")
    info.notes.extend(data.get("problems") or [])
    if info.config is None:
        info.notes.append(
            "No config: the W&B run has neither files/config.yaml nor a readable run-*.wandb log."
        )
    elif data.get("config_source") != "files/config.yaml":
        info.notes.append(f"files/config.yaml is missing; the config was read from {data['config_source']}.")
    if info.summary is None:
        info.notes.append(
            "No summary yet: files/wandb-summary.json is missing and the run logged no summary values."
        )
    elif data.get("summary_source") != "files/wandb-summary.json":
        info.notes.append(
            f"files/wandb-summary.json is missing; the summary was rebuilt from {data['summary_source']}."
        )


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key in sorted(data, key=str):
        value = data[key]
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows.extend(_flatten(value, name + "."))
        else:
            rows.append((name, value))
    return rows


def _visible(data: dict[str, Any]) -> dict[str, Any]:
    # W&B's own bookkeeping (_wandb, _runtime, _step, _timestamp) is not the researcher's data.
    return {k: v for k, v in data.items() if not str(k).startswith("_")}


class WandbTab(RunTab):
    """The run's Weights & Biases run: what is stored locally, how to upload it, where it lives online."""

    title = "W&B"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self.info: WandbRunInfo | None = None
        self._generation = 0
        self._syncing = False
        self._background = Background(self)

        self.message = QLabel("No run selected.")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_button = QPushButton("Open in browser")
        self.open_button.setVisible(False)
        self.open_button.clicked.connect(self.open_in_browser)
        self.sync_button = QPushButton("Sync to W&B")
        self.sync_button.setVisible(False)
        self.sync_button.clicked.connect(self.sync)
        self.sync_status = QLabel("")
        self.sync_status.setWordWrap(True)
        self.notes = QLabel("")
        self.notes.setWordWrap(True)
        self.config_tree = self._tree()
        self.summary_tree = self._tree()
        config_box = QGroupBox("Config")
        QVBoxLayout(config_box).addWidget(self.config_tree)
        summary_box = QGroupBox("Summary")
        QVBoxLayout(summary_box).addWidget(self.summary_tree)
        self.details = QWidget()
        details_layout = QHBoxLayout(self.details)
        details_layout.setContentsMargins(0, 0, 0, 0)
        details_layout.addWidget(config_box)
        details_layout.addWidget(summary_box)
        self.details.setVisible(False)

        actions = QHBoxLayout()
        actions.addWidget(self.open_button)
        actions.addWidget(self.sync_button)
        actions.addWidget(self.sync_status, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addLayout(actions)
        layout.addWidget(self.notes)
        layout.addWidget(self.details, 1)
        layout.addStretch(0)

    @staticmethod
    def _tree() -> QTreeWidget:
        tree = QTreeWidget()
        tree.setColumnCount(2)
        tree.setHeaderLabels(["key", "value"])
        tree.setRootIsDecorated(False)
        tree.setAlternatingRowColors(True)
        return tree

    # ------------------------------------------------------------ RunTab

    def attach(self, run: RunRecord) -> None:
        super().attach(run)
        self._clear()
        self.message.setText("Reading the run's W&B data…")
        self._load()

    def run_changed(self, run: RunRecord) -> None:
        previous = self.run
        super().run_changed(run)
        # The W&B run appears once the script starts, and its files are complete once it ends.
        if previous is None or previous.state != run.state:
            self._load()

    def detach(self) -> None:
        self._generation += 1
        self._clear()
        self.message.setText("No run selected.")
        super().detach()

    def _clear(self) -> None:
        self.info = None
        self.open_button.setVisible(False)
        self.sync_button.setVisible(False)
        self.sync_status.setText("")
        self.notes.setText("")
        self.config_tree.clear()
        self.summary_tree.clear()
        self.details.setVisible(False)

    def _load(self) -> None:
        run = self.run
        if run is None:
            return
        self._generation += 1
        generation = self._generation
        run_dir = Path(run.run_dir)
        bundles = Home(self.link.home).bundles_dir
        worker = run.worker
        terminal = run.state.terminal
        self._background.run(
            lambda: read_wandb_run(run_dir, worker, bundles, terminal),
            lambda info: self._show(generation, info),
            lambda message: self._error(generation, message),
            name=f"wandb-read-{run.run_id}",
        )

    # ------------------------------------------------------------ showing

    def _error(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.message.setText(f"The run's W&B data could not be read: {message}")

    def _show(self, generation: int, info: WandbRunInfo) -> None:
        if generation != self._generation:
            return
        self._clear()
        self.info = info
        self.message.setText(info.message)
        self.notes.setText("\n".join(info.notes))
        if info.path is None:
            return
        self.open_button.setVisible(bool(info.url))
        self._fill(self.config_tree, _visible(info.config or {}))
        self._fill(self.summary_tree, _visible(info.summary or {}))
        self.details.setVisible(True)
        if info.mode == "offline":
            self.sync_button.setVisible(True)
            reason = self.sync_blocked_reason()
            self.sync_button.setEnabled(reason is None)
            self.sync_button.setToolTip(
                reason or f"Upload {len(info.offline_dirs)} offline run(s) with `wandb sync`"
            )
            self.sync_status.setText(reason or "")

    @staticmethod
    def _fill(tree: QTreeWidget, data: dict[str, Any]) -> None:
        tree.clear()
        for key, value in _flatten(data):
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            tree.addTopLevelItem(QTreeWidgetItem([key, shown]))
        tree.resizeColumnToContents(0)

    def sync_blocked_reason(self) -> str | None:
        """Why Sync cannot run now, or None when it can."""
        info = self.info
        if info is None or info.mode != "offline":
            return "only offline W&B runs are synced"
        if self._syncing:
            return "a sync is running"
        if not info.offline_dirs:
            return "the run has no offline W&B data to sync"
        if info.python is None:
            return f"syncing needs the run's worker bundle: {info.bundle_reason}"
        if wandb_auth.wandb_environment(info.base_url) is None:
            return (
                f"Sync needs a W&B API key: {key_sources(info.base_url)}, in the environment gym_gui was "
                "started from (gym_gui never stores it); or run `gym-gui wandb sync RUN` in a shell that has it."
            )
        return None

    # ------------------------------------------------------------ actions

    def sync(self) -> None:
        run = self.run
        if run is None or self.sync_blocked_reason() is not None:
            return
        self._syncing = True
        self.sync_button.setEnabled(False)
        self.sync_status.setText("Syncing…")
        run_id, run_dir, worker = run.run_id, Path(run.run_dir), run.worker
        bundles = Home(self.link.home).bundles_dir
        self._background.run(
            lambda: sync_offline_runs(run_dir, worker, bundles),
            lambda message: self._synced(run_id, message),
            lambda message: self._synced(run_id, message),
            name="wandb-sync",
        )

    def _synced(self, run_id: str, message: str) -> None:
        self._syncing = False
        if self.run is None or self.run.run_id != run_id:
            return
        self.sync_status.setText(message)
        self.sync_button.setEnabled(self.sync_blocked_reason() is None)

    def open_in_browser(self) -> None:
        if self.info is not None and self.info.url:
            QDesktopServices.openUrl(QUrl(self.info.url))

    # ------------------------------------------------------------ for tests and callers

    def config(self) -> dict[str, Any] | None:
        """The W&B config shown (None when none is known)."""
        return None if self.info is None or self.info.config is None else _visible(self.info.config)

    def summary(self) -> dict[str, Any] | None:
        return None if self.info is None or self.info.summary is None else _visible(self.info.summary)
