"""The committed gRPC stubs are exactly what trainer.proto generates (`make proto` regenerates them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SDK_SRC = Path(__file__).resolve().parents[2] / "sdk" / "src"
GENERATED = ("trainer_pb2.py", "trainer_pb2.pyi", "trainer_pb2_grpc.py")


def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{SDK_SRC}",
            f"--python_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            "gym_gui_sdk/trainer.proto",
        ],
        check=True,
    )
    for name in GENERATED:
        fresh = (tmp_path / "gym_gui_sdk" / name).read_text()
        committed = (SDK_SRC / "gym_gui_sdk" / name).read_text()
        assert fresh == committed, f"{name} is stale: run `make proto`"


def test_stub_gencode_fits_the_oldest_bundle_runtime() -> None:
    # Worker bundles (CleanRL) pin protobuf < 7: the stubs must be protobuf-6 gencode.
    text = (SDK_SRC / "gym_gui_sdk" / "trainer_pb2.py").read_text()
    assert "# Protobuf Python Version: 6." in text
