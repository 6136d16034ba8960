"""The model file of a CleanRL run (``*.cleanrl_model``): its format, and reading one.

The launcher writes it (:func:`gym_gui_cleanrl_worker.launch.save_model`); an evaluation and a
warm start read it.
"""

from __future__ import annotations

import os
from typing import Any

MODEL_FORMAT = 1
MODEL_SUFFIX = ".cleanrl_model"


class ModelError(RuntimeError):
    """The model file, or the script it names, cannot be turned into a policy."""


def load_model_file(model_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a model file written by the launcher (format 1); ModelError when it is not one."""
    import torch

    try:
        # weights_only: the format is plain containers and tensors, so an untrusted file cannot run code.
        model = torch.load(os.fspath(model_path), map_location="cpu", weights_only=True)
    except Exception as exc:
        # The first line only: torch's unpickling errors go on for paragraphs.
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ModelError(f"cannot read model {model_path}: {type(exc).__name__}: {first}") from exc
    if not isinstance(model, dict) or model.get("format") != MODEL_FORMAT or "modules" not in model:
        raise ModelError(f"{model_path} is not a gym_gui CleanRL model (format {MODEL_FORMAT})")
    return model
