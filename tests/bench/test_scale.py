"""bench/scale.py runs end to end at a tiny size, so `make bench-scale` cannot rot (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_scale_bench_runs_at_a_tiny_size_and_reports_every_figure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)

    tiny = "--runs 20 --small-runs 5 --repeat 1 --workers 3 --procs 2 --rate 100 --seconds 0.5 --steps 300"
    status = module.main(
        [*tiny.split(), "--viewers", "0", "2", "--fanout-rate", "500", "--fanout-seconds", "0.5"]
    )

    out = capsys.readouterr().out
    assert status == 0, out
    figures = out[out.index("load average after:") :]
    assert "registry: 5 → 20 runs" in figures
    for read in (
        "ListRuns page (gym-gui runs: the newest 50)",
        "ListRuns page (window: the newest 50, archived too)",
        "ListRuns every run (archived too)",
        "ListRuns every run",
        "GetRun (one run)",
        "WatchRuns",
    ):
        assert read in figures
    # Every session's rows are on disk (the bench fails otherwise): 3 × 50 paced, 3 × 300 flat out.
    assert (
        "3 sessions paced 100 steps/s (offered 300 rows/s; the time includes the last ACK): stored" in figures
        and "lossless: 150 on disk = sent" in figures
    )
    assert "3 sessions flat out: stored" in figures and "lossless: 900 on disk = sent" in figures
    assert "B a step in 3 per-run files" in figures
    assert "fan-out  0 viewers" in figures and "fan-out  2 viewers" in figures and "a viewer" in figures
    # The page's ratio is the last line.
    assert out.strip().splitlines()[-1].startswith("one page at 20 runs ÷ the same page at 5 runs: ")
