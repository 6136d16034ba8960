"""The bench scripts load against the code as it is now, so a refactor cannot break `make bench*` unseen."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(path for path in BENCH.glob("*.py") if not path.name.startswith("_"))


def test_there_are_bench_scripts() -> None:
    assert {path.name for path in SCRIPTS} >= {
        "telemetry_throughput.py",
        "cleanrl_overhead.py",
        "gui_live.py",
        "bdi_frozenlake.py",
    }


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_a_bench_script_imports_everything_it_names(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # its helpers (bench/_daemon.py) sit beside it
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs its imports and definitions, not its `__main__` block
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
