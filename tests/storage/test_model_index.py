"""The checkpoint browser's index without Qt: a run's models, its final return, digests and the load check."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import MetricPoint, RunRecord
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.storage.model_index import DigestCache, gather_models, group_models, load_refusal
from gym_gui.storage.run_dir import RunDir, RunEnvironment
from gym_gui.storage.telemetry import FINAL_RETURN_EPISODES
from gym_gui.storage.telemetry_writer import TelemetryWriter
from gym_gui.workers import worker_catalog
from tests.storage.test_telemetry import episode_record

WAIT = 10.0


def _run(
    home: Home,
    make_record: Callable[..., RunRecord],
    run_id: str,
    algorithm: str,
    models: dict[str, bytes],
    mode: str = "train",
    env_id: str = "CartPole-v1",
) -> RunRecord:
    """A run directory as a finished CleanRL run leaves it: config, manifest with its models, their files."""
    files = RunDir(home.run_dir(run_id))
    files.create()
    config = {
        "worker": "cleanrl",
        "env_id": "CartPole-v1",
        "algorithm": algorithm,
        "budget": {"timesteps": 100},
    }
    if mode == "evaluate":
        config.update(mode="evaluate", budget={"episodes": 1}, evaluation={"run_id": "x"})
    files.write_config(parse_run_config(config))
    manifest = files.create_manifest(RunEnvironment())
    for step, (path, data) in enumerate(models.items()):
        file = files.path / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
        kind = "model" if path.endswith("final.cleanrl_model") else "checkpoint"
        manifest.add_artifact(kind, path, 1000 * (step + 1), {"sha256": hashlib.sha256(data).hexdigest()})
    return make_record(
        run_id,
        RunState.COMPLETED,
        worker="cleanrl",
        env_id=env_id,
        lane="analytics",
        run_dir=str(files.path),
    )


def test_models_are_gathered_grouped_and_carry_the_final_return_of_either_lane(
    home: Home, make_record: Callable[..., RunRecord]
) -> None:
    ppo = _run(
        home,
        make_record,
        "ppo-run",
        "ppo",
        {"checkpoints/step_1.cleanrl_model": b"a", "checkpoints/final.cleanrl_model": b"bb"},
    )
    dqn = _run(home, make_record, "dqn-run", "dqn", {"checkpoints/final.cleanrl_model": b"ccc"})
    evaluation = _run(home, make_record, "eval-run", "ppo", {}, mode="evaluate")
    acrobot = _run(
        home,
        make_record,
        "acrobot-run",
        "ppo",
        {"checkpoints/final.cleanrl_model": b"d"},
        env_id="Acrobot-v1",
    )
    # The kind's return metric (CleanRL's, from its spec) where the run has its points; else the
    # stored episodes' total rewards (a run of a kind without one, or one that stored episodes only).
    with TelemetryWriter(RunDir(ppo.run_dir).telemetry_path) as writer:
        writer.put_metrics(
            [
                MetricPoint(worker_catalog().return_metric("cleanrl"), step, 0.0, float(step))
                for step in range(30)
            ]
        )
        assert writer.flush(timeout=WAIT)
    with TelemetryWriter(RunDir(dqn.run_dir).telemetry_path) as writer:
        for n in range(5):
            writer.put_episode(episode_record(n, 3))
        writer.put_metrics([MetricPoint("losses/td_loss", 1, 0.0, 1000.0)])
        assert writer.flush(timeout=WAIT)

    entries = gather_models([ppo, dqn, evaluation, acrobot], worker_catalog().return_metric)
    tree = group_models(entries)
    assert list(tree) == ["Acrobot-v1", "CartPole-v1"]
    assert list(tree["CartPole-v1"]) == ["cleanrl / dqn", "cleanrl / ppo"]
    assert [e.run_id for e in tree["Acrobot-v1"]["cleanrl / ppo"]] == ["acrobot-run"]
    assert tree["Acrobot-v1"]["cleanrl / ppo"][0].final_return is None  # no returns stored
    ppo_models = tree["CartPole-v1"]["cleanrl / ppo"]
    assert [(m.model.path, m.model.step, m.model.size) for m in ppo_models] == [
        ("checkpoints/step_1.cleanrl_model", 1000, 1),
        ("checkpoints/final.cleanrl_model", 2000, 2),
    ]
    last = list(range(30))[-FINAL_RETURN_EPISODES:]
    assert (
        ppo_models[0].final_return == sum(last) / len(last) and ppo_models[0].returns == FINAL_RETURN_EPISODES
    )
    (dqn_model,) = tree["CartPole-v1"]["cleanrl / dqn"]
    assert dqn_model.final_return == sum(range(5)) / 5 and dqn_model.returns == 5


def test_digests_are_computed_once_per_file_version_and_a_changed_or_missing_file_is_refused(
    home: Home, make_record: Callable[..., RunRecord]
) -> None:
    run = _run(home, make_record, "ppo-run", "ppo", {"checkpoints/final.cleanrl_model": b"model bytes"})
    (entry,) = gather_models([run], worker_catalog().return_metric)
    cache = DigestCache()
    assert load_refusal(entry, cache) is None
    assert cache.known(entry.file) == hashlib.sha256(b"model bytes").hexdigest()
    assert load_refusal(entry, cache) is None and cache.computed == 1  # unchanged: not read again

    entry.file.write_bytes(b"model bytes, tampered")
    refusal = load_refusal(entry, cache)
    assert refusal is not None and "has changed since it was saved" in refusal and cache.computed == 2
    stat = entry.file.stat()
    os.utime(entry.file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    load_refusal(entry, cache)
    assert cache.computed == 3  # a new modification time is a new version

    entry.file.unlink()
    assert f"{entry.model.path} of run ppo-run is gone" in (load_refusal(entry, cache) or "")
    (listed,) = gather_models([run], worker_catalog().return_metric)
    assert not listed.model.exists and listed.model.size == 0


def test_a_path_registered_twice_is_one_model_and_paths_outside_the_run_are_never_listed(home: Home) -> None:
    files = RunDir(home.run_dir("run"))
    files.create()
    (files.path / "checkpoints").mkdir()
    (files.path / "checkpoints" / "final.cleanrl_model").write_bytes(b"x")
    manifest = files.create_manifest(RunEnvironment())
    manifest.add_artifact("model", "checkpoints/final.cleanrl_model", 5, {})
    manifest.add_artifact("model", "checkpoints/final.cleanrl_model", 5, {})
    manifest.add_artifact("checkpoint", "../elsewhere.cleanrl_model", 1, {})
    assert [(m.path, m.sha256) for m in files.models()] == [("checkpoints/final.cleanrl_model", None)]
    assert files.saved_models() == files.models()
    (files.path / "checkpoints" / "final.cleanrl_model").unlink()
    assert files.saved_models() == [] and not files.models()[0].exists
