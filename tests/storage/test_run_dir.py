"""A run directory's one owner: its layout, config and manifest formats, damaged files, and export."""

from __future__ import annotations

import json
import re
import tarfile
import threading
import tokenize
from pathlib import Path

import pytest

from gym_gui.core.config import EvaluationOptions, parse_run_config
from gym_gui.core.errors import StorageError
from gym_gui.core.records import EpisodeRecord, StepRow
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import ArtifactEntry, Manifest, RunDir, RunEnvironment, WandbEntry
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_writer import TelemetryWriter

WAIT = 30.0
RUN_ID = "CartPole-v1__ppo__1__1700000000"
SRC = Path(__file__).resolve().parents[2] / "src" / "gym_gui"
OWNER = SRC / "storage" / "run_dir.py"
# The names only the owner may spell out; "logs" is matched as a whole string (it is also an English word).
FILE_NAMES = (
    "config.json",
    "manifest.json",
    "telemetry.sqlite",
    "worker.stdout.log",
    "worker.stderr.log",
    "tensorboard.log",
)
WHOLE_STRINGS = ("logs",)


@pytest.fixture
def run(home: Home) -> RunDir:
    files = RunDir(home.run_dir(RUN_ID))
    files.create()
    return files


def cleanrl_config() -> dict[str, object]:
    return {
        "worker": "cleanrl",
        "env_id": "CartPole-v1",
        "seed": 1,
        "algorithm": "ppo",
        "budget": {"timesteps": 5000},
        "env_kwargs": {"api_key": "sk-not-for-eyes", "max_episode_steps": 200},
    }


# ---------------------------------------------------------------- no other module names the files


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a module (docstrings included, comments not), with its line."""
    found = []
    with open(path, "rb") as handle:
        for token in tokenize.tokenize(handle.readline):
            # Python 3.12 splits f-strings into FSTRING_* tokens; their literal parts count too.
            if token.type == tokenize.STRING or tokenize.tok_name[token.type] == "FSTRING_MIDDLE":
                found.append((token.start[0], token.string))
    return found


def _names_in(literal: str) -> list[str]:
    named = [name for name in FILE_NAMES if name in literal]
    body = re.sub(r"^[rRbBuUfF]*(\"\"\"|'''|\"|')|(\"\"\"|'''|\"|')$", "", literal)
    named += [name for name in WHOLE_STRINGS if body == name or re.search(rf"(^|/){name}/", body)]
    return named


def test_only_the_owner_spells_out_a_run_directorys_file_names() -> None:
    offenders = [
        f"{path.relative_to(SRC.parent)}:{line} names {', '.join(named)}"
        for path in sorted(SRC.rglob("*.py"))
        if path != OWNER
        for line, literal in _string_literals(path)
        if (named := _names_in(literal))
    ]
    assert not offenders, "use gym_gui.storage.run_dir.RunDir instead:\n" + "\n".join(offenders)


def test_the_scan_sees_what_it_should(tmp_path: Path) -> None:
    # The check above would pass vacuously if the tokenizer missed strings: prove it catches them.
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Reads the telemetry.sqlite of a run."""\n'
        "# comments may say manifest.json\n"
        'LOGS = "logs"\n'
        "name = f'{LOGS}/worker.stderr.log'\n"
        "tail = r'logs/x'\n"
        'prose = "the worker logs what it does"\n'
    )
    named = [_names_in(literal) for _line, literal in _string_literals(sample)]
    assert named == [["telemetry.sqlite"], ["logs"], ["worker.stderr.log"], ["logs"], []]
    assert any(_names_in(literal) for _line, literal in _string_literals(OWNER))


# ---------------------------------------------------------------- layout and config


def test_layout_of_a_run_directory(home: Home) -> None:
    files = RunDir(home.run_dir(RUN_ID))
    root = home.runs_dir / RUN_ID
    assert files.path == root and files.run_id == RUN_ID
    assert files.config_path == root / "config.json"
    assert files.manifest_path == root / "manifest.json"
    assert files.telemetry_path == root / "telemetry.sqlite"
    assert files.worker_stdout_log == root / "logs" / "worker.stdout.log"
    assert files.worker_stderr_log == root / "logs" / "worker.stderr.log"
    assert files.tensorboard_log == root / "logs" / "tensorboard.log"
    assert not root.exists()  # naming the files creates nothing
    files.create()
    assert files.logs_dir.is_dir()
    with pytest.raises(FileExistsError):
        files.create()  # run ids are never reused


def test_config_round_trip_and_redacted_read(run: RunDir) -> None:
    config = parse_run_config(cleanrl_config())
    run.write_config(config)
    assert run.read_config() == config
    assert not list(run.path.glob("*.tmp"))
    shown = run.redacted_config()
    assert shown["env_kwargs"] == {"api_key": "***", "max_episode_steps": 200}
    assert shown["algorithm"] == "ppo"
    # Secrets in the stored file itself are the user's own env kwargs; the read for showing hides them.
    assert "sk-not-for-eyes" not in json.dumps(shown)


def test_a_config_stored_with_retired_settings_still_reads(run: RunDir) -> None:
    # What every run stored before tracking.tensorboard and resources.cpus were retired holds.
    stored = json.loads(parse_run_config(cleanrl_config()).model_dump_json())
    stored["tracking"]["tensorboard"] = False
    stored["resources"]["cpus"] = 4
    run.config_path.write_text(json.dumps(stored))
    config = run.read_config()
    assert config == parse_run_config(cleanrl_config())
    assert "tensorboard" not in config.model_dump()["tracking"]
    assert "cpus" not in config.model_dump()["resources"]


def test_a_missing_or_damaged_config_is_a_clear_error_and_stays_as_it_is(run: RunDir) -> None:
    with pytest.raises(StorageError, match="has no config file"):
        run.read_config()
    with pytest.raises(StorageError, match="has no config file"):
        run.redacted_config()
    run.config_path.write_text('{"worker": "cleanrl", "budget": ')
    with pytest.raises(StorageError, match="is damaged: not valid JSON"):
        run.read_config()
    invalid = {**cleanrl_config(), "budget": {"timesteps": -3}}
    run.config_path.write_text(json.dumps(invalid))
    with pytest.raises(StorageError, match=r"not a valid run config: field 'budget\.timesteps'"):
        run.read_config()
    # Shown as stored even though it no longer validates (an older gym_gui's config, say).
    assert run.redacted_config()["budget"] == {"timesteps": -3}
    assert json.loads(run.config_path.read_text()) == invalid


# ---------------------------------------------------------------- the manifest


def test_manifest_round_trip_is_typed(run: RunDir) -> None:
    environment = RunEnvironment(bundle="cleanrl", python="/b/python", packages=["torch==2.4.1"])
    writer = run.create_manifest(environment)
    writer.update(
        command=["/b/python", "-m", "gym_gui_cleanrl_worker", "train"],
        script="/b/cleanrl/ppo.py",
        script_command=["/b/python", "/b/cleanrl/ppo.py", "--seed", "1"],
        evaluates={"run_id": "CartPole-v1__ppo__0__1", "checkpoint": None, "real_time": True},
    )
    writer.add_artifact("checkpoint", "checkpoints/step_1000.cleanrl_model", 1000, {})
    writer.add_artifact("model", "checkpoints/final.cleanrl_model", 5000, {})
    writer.add_artifact("video", "videos/x/rl-video-episode-8.mp4", 900, {"episode": 8, "return": 21.0})
    writer.add_artifact("tensorboard", "runs/CartPole-v1__ppo__1", 0, {})
    writer.add_artifact(
        "wandb", "wandb/offline-run-20240101_000000-abc", 0, {"mode": "offline", "wandb_run_id": "abc"}
    )
    writer.update(ended_at=1700000100.5, final_state="COMPLETED")

    manifest = run.read_manifest()
    assert manifest == writer.manifest
    assert manifest.run_id == RUN_ID and manifest.cwd == str(run.path) and manifest.created_at > 0
    assert manifest.environment == environment
    assert manifest.evaluates == EvaluationOptions(run_id="CartPole-v1__ppo__0__1", real_time=True)
    assert [c.path for c in manifest.checkpoints] == [
        "checkpoints/step_1000.cleanrl_model",
        "checkpoints/final.cleanrl_model",
    ]
    assert manifest.videos == [
        ArtifactEntry(
            kind="video",
            path="videos/x/rl-video-episode-8.mp4",
            step=900,
            meta={"episode": 8, "return": 21.0},
        )
    ]
    assert len(manifest.artifacts) == 5
    assert manifest.tensorboard_dir == "runs/CartPole-v1__ppo__1"
    assert manifest.wandb == WandbEntry(
        path="wandb/offline-run-20240101_000000-abc", mode="offline", wandb_run_id="abc"
    )
    assert manifest.final_state is RunState.COMPLETED and manifest.ended_at == 1700000100.5
    # The file keeps the shape other tools (and older gym_gui versions) read.
    stored = json.loads(run.manifest_path.read_text())
    assert stored["wandb"]["path"].startswith("wandb/offline-run-") and stored["final_state"] == "COMPLETED"
    assert stored["checkpoints"][1]["kind"] == "model" and stored["environment"]["packages"] == [
        "torch==2.4.1"
    ]
    assert not list(run.path.glob("*.tmp"))


def test_an_invalid_update_changes_nothing(run: RunDir) -> None:
    writer = run.create_manifest(RunEnvironment(bundle="app"))
    before = run.manifest_path.read_bytes()
    with pytest.raises(StorageError, match="field 'command"):
        writer.update(command="not a list")
    with pytest.raises(StorageError, match="field 'final_state'"):
        writer.update(final_state="EXPLODED")
    with pytest.raises(StorageError, match="artifact 'wandb/run-x' not registered: field 'mode'"):
        writer.add_artifact("wandb", "wandb/run-x", 0, {"mode": ["not", "text"]})
    assert run.manifest_path.read_bytes() == before
    assert writer.manifest.command == [] and writer.manifest.final_state is None
    assert writer.manifest.wandb is None and writer.manifest.artifacts == []


def test_no_manifest_yet_reads_as_an_empty_one(run: RunDir) -> None:
    assert run.read_manifest() == Manifest(run_id=RUN_ID)
    assert not run.manifest_path.exists()  # reading writes nothing


def test_an_old_or_partial_manifest_loads_and_keeps_what_it_does_not_know(run: RunDir) -> None:
    # A hand-written or older manifest: only some fields, one this code has never heard of.
    old = {
        "run_id": RUN_ID,
        "checkpoints": [{"kind": "model", "path": "checkpoints/final.cleanrl_model", "step": 7}],
        "videos": [],
        "wandb": {
            "path": "wandb/run-1-x",
            "mode": "online",
            "url": "https://wandb.ai/e/p/runs/x",
            "team": "e",
        },
        "sweep": {"trial": 3},
    }
    run.manifest_path.write_text(json.dumps(old))
    manifest = run.read_manifest()
    assert manifest.checkpoints[0].step == 7 and manifest.checkpoints[0].meta == {}
    assert manifest.command == [] and manifest.tensorboard_dir is None and manifest.final_state is None
    assert manifest.wandb is not None and manifest.wandb.url == "https://wandb.ai/e/p/runs/x"
    assert manifest.model_extra == {"sweep": {"trial": 3}}

    # A restarted daemon picking the run up rewrites it without losing the unknown fields.
    writer = run.open_manifest()
    writer.add_artifact("video", "videos/a.mp4", 10, {"episode": 1})
    stored = json.loads(run.manifest_path.read_text())
    assert stored["sweep"] == {"trial": 3} and stored["wandb"]["team"] == "e"
    assert [v["path"] for v in stored["videos"]] == ["videos/a.mp4"]
    assert stored["checkpoints"] == [
        {"kind": "model", "path": "checkpoints/final.cleanrl_model", "step": 7, "meta": {}}
    ]


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ('{"run_id": "x", "checkpoints": [', "not valid JSON"),
        ('["a", "list"]', "holds no JSON object"),
        ('{"checkpoints": "all of them"}', "field 'checkpoints'"),
        ('{"videos": [{"path": "v.mp4", "step": "late"}]}', r"field 'videos\.0\.step'"),
    ],
)
def test_a_damaged_manifest_is_a_clear_error_and_is_never_overwritten(
    run: RunDir, content: str, complaint: str
) -> None:
    run.manifest_path.write_text(content)
    with pytest.raises(StorageError, match=complaint) as caught:
        run.read_manifest()
    assert str(run.manifest_path) in str(caught.value) and "left as it is" in str(caught.value)
    assert run.manifest_path.read_text() == content
    # Readers that only want a directory fall back to where CleanRL writes first.
    assert run.tensorboard_logdir() == run.path / "runs"
    assert run.manifest_path.read_text() == content

    # The daemon, which must keep recording, moves the damaged file aside and starts afresh.
    writer = run.open_manifest()
    (kept,) = run.path.glob("manifest.json.damaged-*")
    assert kept.read_text() == content
    assert run.read_manifest() == writer.manifest and writer.manifest.run_id == RUN_ID


# ---------------------------------------------------------------- what workers wrote


def test_tensorboard_logdir_follows_the_manifest(run: RunDir) -> None:
    assert run.tensorboard_logdir() == run.path / "runs"  # before the worker says where
    writer = run.create_manifest(RunEnvironment())
    writer.add_artifact("tensorboard", "runs/CartPole-v1__ppo__1__17", 0, {})
    assert run.tensorboard_logdir() == run.path / "runs"  # the parent: listed by its CleanRL name
    writer.add_artifact("tensorboard", "events", 0, {})
    assert run.tensorboard_logdir() == run.path / "events"
    writer.add_artifact("tensorboard", "../../elsewhere/runs/x", 0, {})
    assert run.tensorboard_logdir() == run.path / "runs"  # never outside the run


def test_tensorboard_logdir_is_the_exported_event_files_when_the_manifest_names_none(run: RunDir) -> None:
    assert run.exported_event_files == run.path / "tensorboard"
    (run.exported_event_files / RUN_ID).mkdir(parents=True)
    assert run.tensorboard_logdir() == run.exported_event_files  # listed under the run id
    writer = run.create_manifest(RunEnvironment())
    writer.add_artifact("tensorboard", "runs/CartPole-v1__ppo__1__17", 0, {})
    assert run.tensorboard_logdir() == run.path / "runs"  # the worker's own event files first


def test_artifact_paths_stay_inside_the_run(run: RunDir) -> None:
    assert run.artifact_path("videos/x/a.mp4") == run.path / "videos" / "x" / "a.mp4"
    for outside in ("", "../x.mp4", "videos/../../x", "/etc/passwd"):
        assert run.artifact_path(outside) is None, outside


def test_local_wandb_runs_oldest_first(run: RunDir) -> None:
    assert run.wandb_runs() == []
    for name in ("offline-run-20240102_000000-b", "run-20240101_000000-a", "debug.log", "latest-run"):
        (run.path / "wandb" / name).mkdir(parents=True)
    assert [p.name for p in run.wandb_runs()] == [
        "offline-run-20240102_000000-b",
        "run-20240101_000000-a",
    ]


# ---------------------------------------------------------------- export


def rows(episode: int, length: int) -> list[StepRow]:
    return [(episode, s, 1.0, s == length - 1, False, "0", "[0]", "{}", None, 1.0 * s) for s in range(length)]


def episode(n: int, length: int) -> EpisodeRecord:
    return EpisodeRecord(n, n, length, float(length), True, False, 0.0, 1.0, "{}")


def test_export_of_a_live_run_is_consistent(home: Home, run: RunDir, tmp_path: Path) -> None:
    run.write_config(parse_run_config(cleanrl_config()))
    run.create_manifest(RunEnvironment(bundle="app")).add_artifact("video", "videos/a.mp4", 1, {})
    run.worker_stdout_log.write_text("training…\n")
    writer = TelemetryWriter(run.telemetry_path)
    writer.start()
    for n in range(20):
        writer.put_steps(rows(n, 50))
        writer.put_episode(episode(n, 50))
    assert writer.flush(timeout=WAIT)
    stop = threading.Event()

    def keep_writing() -> None:
        n = 20
        while not stop.is_set():
            writer.put_steps(rows(n, 50))
            writer.put_episode(episode(n, 50))
            n += 1

    producer = threading.Thread(target=keep_writing, daemon=True)
    producer.start()
    try:
        target = tmp_path / "out" / "run.tar.gz"
        target.parent.mkdir()
        run.export(target, home=home)
    finally:
        stop.set()
        producer.join(WAIT)
        writer.close(timeout=WAIT)
    assert not producer.is_alive() and writer.error is None

    with tarfile.open(target) as tar:
        names = set(tar.getnames())
        tar.extractall(tmp_path / "out", filter="data")
    prefix = RUN_ID + "/"
    assert {prefix + "config.json", prefix + "manifest.json", prefix + "telemetry.sqlite"} <= names
    assert prefix + "logs/worker.stdout.log" in names
    assert not [n for n in names if n.endswith(("-wal", "-shm", ".tmp"))]
    assert not list(target.parent.glob("*.tmp"))

    copy = RunDir(tmp_path / "out" / RUN_ID)
    assert copy.read_config() == run.read_config()
    assert copy.read_manifest() == run.read_manifest()
    # The copied database stands alone (opened read-only, with no WAL beside it) and is one
    # committed state: at least what was flushed before the export, every episode with all its steps.
    reader = TelemetryReader(copy.telemetry_path)
    try:
        episodes = reader.episodes()
        per_episode = reader.steps_per_episode()
        assert len(episodes) >= 20
        assert all(per_episode.get(e.episode) == e.steps == 50 for e in episodes)
        assert set(per_episode) - {e.episode for e in episodes} <= {len(episodes)}
    finally:
        reader.close()


def test_export_of_no_directory_says_so_and_writes_nothing(home: Home, tmp_path: Path) -> None:
    target = tmp_path / "x.tar.gz"
    with pytest.raises(StorageError, match="no run directory at"):
        RunDir(home.run_dir(RUN_ID)).export(target, home=home)
    assert not target.exists()


def test_a_failed_export_leaves_no_archive(home: Home, run: RunDir, tmp_path: Path) -> None:
    run.telemetry_path.write_bytes(b"this is not a database" * 100)
    target = tmp_path / "x.tar.gz"
    with pytest.raises(StorageError, match="telemetry"):
        run.export(target, home=home)
    assert not target.exists() and not list(tmp_path.glob("*.tmp"))


def _written_run(run: RunDir, home: Home) -> None:
    """A run with a real database, and a real registry beside it in the home."""
    writer = TelemetryWriter(run.telemetry_path)
    writer.start()
    writer.put_steps(rows(0, 5))
    writer.put_episode(episode(0, 5))
    writer.close(timeout=WAIT)
    RunRegistry(home.registry_path).close()


def test_an_export_into_the_home_is_refused_and_overwrites_none_of_its_files(
    home: Home, run: RunDir, tmp_path: Path
) -> None:
    _written_run(run, home)
    before = {path: path.read_bytes() for path in home.root.rglob("*") if path.is_file()}
    into_home = tmp_path / "link"
    into_home.symlink_to(home.root)
    for target in (
        run.telemetry_path,
        home.registry_path,
        home.root / "run.tar.gz",
        into_home / "registry.sqlite",  # through a symlink: the home all the same
    ):
        with pytest.raises(StorageError, match="inside the gym_gui home"):
            run.export(target, home=home)
    after = {path: path.read_bytes() for path in home.root.rglob("*") if path.is_file()}
    assert after == before
    reader = TelemetryReader(run.telemetry_path)
    try:
        assert [e.steps for e in reader.episodes()] == [5]
    finally:
        reader.close()


def test_a_failed_export_leaves_the_files_beside_its_target_as_they_were(
    home: Home, run: RunDir, tmp_path: Path
) -> None:
    # The archive is written under a name of its own: a user's file called like a temporary is not
    # its temporary, and an earlier archive at the target stays whole until the new one is complete.
    run.telemetry_path.write_bytes(b"this is not a database" * 100)
    target = tmp_path / "x.tar.gz"
    target.write_bytes(b"an earlier archive")
    (tmp_path / "x.tar.gz.tmp").write_bytes(b"a file of the user's")
    with pytest.raises(StorageError, match="telemetry"):
        run.export(target, home=home)
    assert target.read_bytes() == b"an earlier archive"
    assert (tmp_path / "x.tar.gz.tmp").read_bytes() == b"a file of the user's"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == ["x.tar.gz", "x.tar.gz.tmp"]
