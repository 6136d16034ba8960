"""bench/runs_table.py runs end to end at a tiny size, so `make bench-runs-table` cannot rot (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_runs_table_bench_runs_at_a_tiny_size_and_reports_its_figures_last(
    qtbot: QtBot, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_runs_table", BENCH / "runs_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)

    assert module.main(["--runs", "130", "--small-runs", "5", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("the window's first page (100 runs) from its start: ")
    assert lines[-1].startswith("first page at 130 runs: ") and lines[-1].endswith("(goal ≤ 1 s)")
