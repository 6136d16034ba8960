"""``python -m gym_gui_corl_worker.describe``: what the corl bundle says of a CORL checkout, as JSON on stdout.

    --scripts-dir D --list                  the offline scripts, each runnable here or not (and why)
    --scripts-dir D --algo A                the fields of A's TrainConfig: name, type, default, help
    --scripts-dir D --algo A --check JSON   whether pyrallis takes the arguments (a JSON list: a config
                                            file, overrides) for A
    --env ID                                the spaces of old gym's ID here, or why it cannot be made

Runs in the bundle, asked by the plugin. Reading a script's fields imports it (torch, gym, wandb: a few
seconds) with the d4rl stand-in first on its path, as a run would; nothing of its ``train`` runs. An
answer that is a refusal is ``{"error": "..."}``, one line.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import hashlib
import importlib.util
import io
import json
import os
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_gui_corl_worker.scripts import (
    CONFIG_CLASS,
    STANDIN,
    STANDIN_MODULES,
    CheckoutError,
    ScriptSource,
    script_names,
    script_path,
)

_SCALARS: dict[Any, str] = {bool: "bool", int: "int", float: "float", str: "str"}
# Where the answers about scripts' fields are kept, under the interpreter's prefix.
_KEPT_DIR = "gym_gui_corl_describe"


class DescribeError(Exception):
    """What cannot be answered, in one line."""


def listing(scripts_dir: str) -> list[dict[str, Any]]:
    """Every offline script of the checkout, runnable in this interpreter or greyed with why."""
    found = []
    for name in script_names(scripts_dir):
        path = script_path(scripts_dir, name)
        entry: dict[str, Any] = {"name": name, "runnable": True, "reason": "", "summary": ""}
        try:
            source = ScriptSource.read(path)
        except (OSError, SyntaxError, ValueError) as exc:
            entry.update(runnable=False, reason=f"cannot be read: {exc}")
            found.append(entry)
            continue
        entry["summary"] = source.summary
        missing = sorted(m for m in source.imports - STANDIN_MODULES if importlib.util.find_spec(m) is None)
        if missing:
            entry.update(runnable=False, reason=f"needs {', '.join(missing)}, which the corl bundle lacks")
        elif not source.has_config:
            entry.update(runnable=False, reason=f"it has no pyrallis {CONFIG_CLASS}")
        elif source.env_field is None:
            entry.update(runnable=False, reason=f"its {CONFIG_CLASS} names no env (env or env_name)")
        found.append(entry)
    return found


def load_script(path: Path) -> types.ModuleType:
    """Import the script as a module (its ``__main__`` block does not run), as its run would find its
    imports: the d4rl stand-in first, then the script's own directory.

    Raises:
        DescribeError: it cannot be imported here (a module the bundle lacks, an error at import).
    """
    for entry in (str(path.parent), str(STANDIN)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    name = f"corl_script_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DescribeError(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except Exception as exc:
        raise DescribeError(f"{path.name} cannot be imported here: {type(exc).__name__}: {exc}") from None
    return module


def config_class(module: types.ModuleType) -> type:
    cls = getattr(module, CONFIG_CLASS, None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise DescribeError(f"{module.__file__} has no dataclass {CONFIG_CLASS}")
    return cls


def field_type(annotation: Any) -> str | None:
    """The contract's type of a field: a scalar, a list of scalars (an ``Optional`` one's own type); None
    for what a form cannot hold (nested dataclasses, dicts, unions of several types)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        return field_type(kept[0]) if len(kept) == 1 else None
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if origin in (list, tuple, Sequence) and args:
        items = [arg for arg in args if arg is not Ellipsis]
        if len(set(items)) == 1 and items[0] in _SCALARS and items[0] is not bool:
            return f"list[{_SCALARS[items[0]]}]"
    return None


def comments(cls: type) -> dict[str, str]:
    """Each field's help: the comment lines right above it in the class's source (CORL's convention)."""
    path = sys.modules[cls.__module__].__file__
    if path is None:
        return {}
    lines = Path(path).read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)
    found: dict[str, str] = {}
    for item in node.body if node is not None else []:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            above: list[str] = []
            index = item.lineno - 2
            while index >= 0 and lines[index].strip().startswith("#"):
                above.insert(0, lines[index].strip().lstrip("#").strip())
                index -= 1
            found[item.target.id] = " ".join(part for part in above if part)
    return found


def _default(item: dataclasses.Field[Any]) -> Any:
    if item.default is not dataclasses.MISSING:
        value = item.default
    elif item.default_factory is not dataclasses.MISSING:
        value = item.default_factory()
    else:
        return None
    return list(value) if isinstance(value, tuple) else value


def fields(scripts_dir: str, algorithm: str) -> dict[str, Any]:
    """The script's config fields as the contract's parameters (JSON), those a form cannot hold by name,
    and which field names its env.

    Importing a script costs seconds (torch, wandb): the answer is kept in the interpreter's prefix, by
    the bytes of the script and of this module, so another daemon or a new form reads it at once.
    """
    path = script_path(scripts_dir, algorithm)
    digest = hashlib.sha256(path.read_bytes() + Path(__file__).read_bytes()).hexdigest()
    kept = Path(sys.prefix) / _KEPT_DIR / f"{digest}.json"
    try:
        answer: dict[str, Any] = json.loads(kept.read_text())
        if answer.get("script") == str(path):
            return answer
    except (OSError, ValueError):
        pass
    answer = _fields(path)
    with contextlib.suppress(OSError):  # kept for next time when it can be
        kept.parent.mkdir(exist_ok=True)
        staging = kept.with_suffix(f".{os.getpid()}.tmp")
        staging.write_text(json.dumps(answer))
        staging.replace(kept)
    return answer


def _fields(path: Path) -> dict[str, Any]:
    cls = config_class(load_script(path))
    hints = typing.get_type_hints(cls)
    helps = comments(cls)
    params, unsupported = [], []
    for item in dataclasses.fields(cls):
        kind = field_type(hints.get(item.name, item.type))
        default = _default(item)
        if kind is None or not _json_value(default):
            unsupported.append(item.name)
            continue
        entry: dict[str, Any] = {"name": item.name, "type": kind, "flag": f"--{item.name}"}
        if default is not None:
            entry["default"] = float(default) if kind == "float" and isinstance(default, int) else default
        if helps.get(item.name):
            entry["help"] = helps[item.name]
        params.append(entry)
    env_field = ScriptSource.read(path).env_field
    return {"script": str(path), "params": params, "unsupported": unsupported, "env_field": env_field}


def _json_value(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def check(scripts_dir: str, algorithm: str, args: list[str]) -> dict[str, Any]:
    """Whether pyrallis makes the script's config from ``args`` (``--config_path=FILE``, ``--field=value``):
    ``{"ok": true}`` or its own complaint."""
    cls = config_class(load_script(script_path(scripts_dir, algorithm)))
    import pyrallis

    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            pyrallis.parse(config_class=cls, args=args)
    except SystemExit:
        lines = [line.strip() for line in errors.getvalue().splitlines() if line.strip()]
        raise DescribeError(lines[-1] if lines else "pyrallis refused the arguments") from None
    except Exception as exc:
        raise DescribeError(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}") from None
    return {"ok": True}


def space(value: Any) -> dict[str, Any]:
    """An old gym space as the plugin compares it with a dataset's (type, shape, n)."""
    shape = getattr(value, "shape", None)
    entry: dict[str, Any] = {
        "type": type(value).__name__,
        "shape": list(shape) if shape is not None else None,
    }
    if hasattr(value, "n"):
        entry["n"] = int(value.n)
    return entry


def env_spaces(env_id: str) -> dict[str, Any]:
    """The observation and action spaces of old gym's ``env_id`` in this interpreter."""
    import gym

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            env = gym.make(env_id)
    except Exception as exc:
        line = (str(exc).strip().splitlines() or [""])[0]
        raise DescribeError(f"gym 0.23 cannot make {env_id} here: {type(exc).__name__}: {line}") from None
    try:
        return {"observation": space(env.observation_space), "action": space(env.action_space)}
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gym_gui_corl_worker.describe")
    parser.add_argument("--scripts-dir")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--algo")
    parser.add_argument("--check", help="the script's arguments, a JSON list")
    parser.add_argument("--env")
    args = parser.parse_args(argv)
    try:
        if args.env:
            answer: Any = env_spaces(args.env)
        elif args.list:
            answer = listing(args.scripts_dir or "")
        elif args.algo and args.check is not None:
            answer = check(args.scripts_dir or "", args.algo, [str(a) for a in json.loads(args.check)])
        elif args.algo:
            answer = fields(args.scripts_dir or "", args.algo)
        else:
            parser.error("ask for --list, --algo or --env")
    except (DescribeError, CheckoutError) as exc:
        answer = {"error": str(exc)}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
