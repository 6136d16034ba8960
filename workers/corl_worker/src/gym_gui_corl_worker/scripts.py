"""Where a CORL checkout keeps the scripts gym_gui runs, and what a script's source says without running it.

Plain Python: the plugin (gym_gui's venv) finds a run's script with it before anything is asked of the
bundle; the describe helper (the bundle) lists and reads the scripts with it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

# The offline algorithms of a CORL checkout, one file each (algorithms/finetune/ trains online as well).
OFFLINE_DIR = "algorithms/offline"
# The pyrallis dataclass every CORL script is configured by.
CONFIG_CLASS = "TrainConfig"
# The config fields that name the D4RL dataset, which is also the env its evaluation plays: most
# scripts call it ``env``; awac.py and dt.py ``env_name``.
ENV_FIELDS = ("env", "env_name")
# An algorithm's name is its script's file name, as CORL's own docs name them.
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# Modules a script imports that are not looked for in the interpreter: the stand-in provides d4rl.
STANDIN_MODULES = frozenset({"d4rl"})
# The directory holding the d4rl stand-in package (standin/d4rl): first on a script's path.
STANDIN = Path(__file__).resolve().parent / "standin"


class CheckoutError(Exception):
    """The checkout or the script is not there (the message names the parameter and the path)."""


def script_path(scripts_dir: str | Path, algorithm: str) -> Path:
    """The file of ``algorithm`` in the checkout.

    Raises:
        CheckoutError: the checkout is not a directory, it has no offline algorithms, the name is not an
            algorithm's, or there is no such script.
    """
    root = Path(scripts_dir)
    if not root.is_dir():
        raise CheckoutError(f"field 'params.scripts_dir': {root} is not a directory (a CORL checkout)")
    offline = root / OFFLINE_DIR
    if not offline.is_dir():
        raise CheckoutError(
            f"field 'params.scripts_dir': {root} is not a CORL checkout: it has no {OFFLINE_DIR}/"
        )
    if not _NAME.fullmatch(algorithm):
        raise CheckoutError(f"field 'algorithm': {algorithm!r} is not the name of a script (e.g. iql)")
    path = offline / f"{algorithm}.py"
    if not path.is_file():
        names = ", ".join(script_names(root)) or "none"
        raise CheckoutError(
            f"field 'algorithm': {root} has no {OFFLINE_DIR}/{algorithm}.py (its offline algorithms: {names})"
        )
    return path


def script_names(scripts_dir: str | Path) -> list[str]:
    """The algorithms of the checkout: its offline scripts' names, sorted."""
    offline = Path(scripts_dir) / OFFLINE_DIR
    if not offline.is_dir():
        return []
    return sorted(p.stem for p in offline.glob("*.py") if _NAME.fullmatch(p.stem))


@dataclass(frozen=True)
class ScriptSource:
    """What a script's source says: the modules it imports at its top, and whether it is configured the
    way gym_gui runs it (a pyrallis ``TrainConfig`` with a field naming its env)."""

    imports: frozenset[str]
    has_config: bool
    env_field: str | None
    summary: str

    @classmethod
    def read(cls, path: Path) -> ScriptSource:
        """Read ``path`` (never run).

        Raises:
            SyntaxError, OSError: it cannot be read as Python.
        """
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
        imports: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                imports.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imports.add(node.module.split(".")[0])
        config = next(
            (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == CONFIG_CLASS),
            None,
        )
        fields = (
            {
                n.target.id
                for n in config.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            }
            if config is not None
            else set()
        )
        env_field = next((name for name in ENV_FIELDS if name in fields), None)
        return cls(
            imports=frozenset(imports),
            has_config=config is not None and "pyrallis" in imports,
            env_field=env_field,
            summary=_summary(text),
        )


def _summary(text: str) -> str:
    """Where the script's code comes from, when its first comments say (``# source: URL``, or an
    ``# Inspired by:`` line over the URL): CORL's ports of other implementations do."""
    lines = [line.lstrip("# ").strip() for line in text.splitlines()[:6] if line.startswith("#")]
    for index, line in enumerate(lines):
        if "http" in line:
            return (
                line
                if ":" in line.split("http")[0]
                else f"{lines[index - 1]} {line}".strip()
                if index
                else line
            )
    return ""
