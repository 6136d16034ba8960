"""Each CleanRL script's own argument definitions (argparse or tyro), and the argv and validation built on them."""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import hashlib
import importlib
import importlib.util
import inspect
import io
import json
import math
import os
import re
import runpy
import sys
import tokenize
import types
import typing
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gym_gui_cleanrl_worker.envs import env_table, operator_spaces_answer, refusal, script_envs_answer
from gym_gui_cleanrl_worker.flags import resolve_command
from gym_gui_cleanrl_worker.scripts import AlgorithmInfo, algorithm_info, find_algorithm, list_algorithms


class _Captured(BaseException):
    """Raised instead of parsing the command line; carries the script's parameters.

    A BaseException so that no ``except Exception`` in a script can swallow it.
    """

    def __init__(self, style: str, params: list[dict[str, Any]]) -> None:
        super().__init__(style)
        self.style = style
        self.params = params


def _jsonable(value: Any) -> Any:
    """A default as JSON: scalars and lists as they are, anything else (callables, objects) as its str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return str(value)


def _param(
    *,
    name: str,
    flag: str,
    dest: str,
    type_: str,
    default: Any,
    help_: str,
    choices: list[Any] | None,
    bool_style: str | None,
    required: bool,
) -> dict[str, Any]:
    return {
        "name": name,
        "flag": flag,
        "dest": dest,
        "type": type_,
        "default": _jsonable(default),
        "help": help_,
        "choices": choices,
        "bool_style": bool_style,
        "required": required,
    }


# ---------------------------------------------------------------- argparse scripts (the PyPI release)


def _is_strtobool(func: Any) -> bool:
    """CleanRL's ``type=lambda x: bool(strtobool(x))``: a plain function mapping "true"/"false" to the bools."""
    if not inspect.isfunction(func):
        return False
    try:
        return func("true") is True and func("false") is False
    except Exception:
        return False


def _argparse_params(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    params = []
    for action in parser._actions:  # argparse has no public accessor; _actions is stable since Python 3.2.
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        if not action.option_strings:
            # CleanRL scripts take options only; a positional has no flag the form could fill.
            continue
        longs = [o for o in action.option_strings if o.startswith("--")]
        flag = (longs or action.option_strings)[0]
        bool_style: str | None = None
        if isinstance(action, argparse._StoreTrueAction):
            base, bool_style = "bool", "store_true"
        elif isinstance(action, argparse._StoreFalseAction):
            base, bool_style = "bool", "store_false"
        elif isinstance(action, argparse.BooleanOptionalAction):
            base, bool_style = "bool", "tyro"  # the same --flag / --no-flag form tyro uses
        elif _is_strtobool(action.type):
            base, bool_style = "bool", "strtobool"
        elif action.type in (int, float, str):
            base = action.type.__name__
        else:
            # No type means argparse hands the script a str; other callables (Path, …) also take the text.
            base = "str"
        nargs = action.nargs
        is_list = nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 1)
        text = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
        with contextlib.suppress(Exception):
            text = text % {**vars(action), "prog": parser.prog}
        default = None if action.default is argparse.SUPPRESS else action.default
        params.append(
            _param(
                name=flag.lstrip("-"),
                flag=flag,
                dest=action.dest,
                type_=f"list[{base}]" if is_list else base,
                default=default,
                help_=text,
                choices=[_jsonable(c) for c in action.choices] if action.choices is not None else None,
                bool_style=bool_style,
                required=bool(action.required),
            )
        )
    return params


# ---------------------------------------------------------------- tyro scripts (current CleanRL)


def _comments(source: str) -> dict[int, str]:
    comments: dict[int, str] = {}
    with contextlib.suppress(tokenize.TokenError, IndentationError, SyntaxError):
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.string.lstrip("#").strip()
    return comments


def _field_docs(source: str, class_names: list[str]) -> dict[str, str]:
    """Field name → help: the string literal right after the field in the class body (tyro's convention),
    else the comment on the field's line. Classes are looked up by name, most derived first."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    comments = _comments(source)
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    docs: dict[str, str] = {}
    for class_name in reversed(class_names):  # base classes first, so subclasses override
        node = classes.get(class_name)
        if node is None:
            continue
        for i, stmt in enumerate(node.body):
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            following = node.body[i + 1] if i + 1 < len(node.body) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(following.value.value)
            elif (stmt.end_lineno or stmt.lineno) in comments:
                docs[stmt.target.id] = comments[stmt.end_lineno or stmt.lineno]
    return docs


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0], len(rest) < len(args)
    return tp, False


def _scalar_name(tp: Any) -> tuple[str, list[Any] | None]:
    """The declared type as "bool"/"int"/"float"/"str", and the choices a Literal or an Enum allows."""
    tp, _ = _unwrap_optional(tp)
    if typing.get_origin(tp) is typing.Literal:
        values = list(typing.get_args(tp))
        kinds = {type(v) for v in values}
        name = kinds.pop().__name__ if len(kinds) == 1 and kinds <= {bool, int, float, str} else "str"
        return name, [_jsonable(v) for v in values]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "str", [m.name for m in tp]  # tyro takes enum members by name
    if tp in (bool, int, float, str):
        return tp.__name__, None
    return "str", None


def _type_of(tp: Any) -> tuple[str, list[Any] | None]:
    inner, _ = _unwrap_optional(tp)
    origin = typing.get_origin(inner)
    if origin in (list, tuple, set, frozenset) or (
        origin is not None and getattr(origin, "__module__", "") == "collections.abc"
    ):
        args = [a for a in typing.get_args(inner) if a is not Ellipsis]
        name, choices = _scalar_name(args[0]) if args else ("str", None)
        return f"list[{name}]", choices
    return _scalar_name(inner)


def _dataclass_params(
    cls: type, source: str, globalns: dict[str, Any], prefix: str = ""
) -> list[dict[str, Any]]:
    try:
        hints = typing.get_type_hints(cls, globalns=globalns)
    except Exception:
        hints = {}
    docs = _field_docs(source, [c.__name__ for c in cls.__mro__ if dataclasses.is_dataclass(c)])
    params = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints.get(f.name, f.type)
        dest = prefix + f.name
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            # tyro flattens a nested dataclass into --outer.inner flags.
            params += _dataclass_params(tp, source, globalns, prefix=f"{dest}.")
            continue
        required = False
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default, required = None, True
        type_name, choices = _type_of(tp) if not isinstance(tp, str) else (_string_type(tp), None)
        name = dest.replace("_", "-")
        # tyro gives a bool with a default the --flag / --no-flag pair; a required bool takes --flag True.
        bool_style = "tyro" if type_name == "bool" and not required else None
        params.append(
            _param(
                name=name,
                flag=f"--{name}",
                dest=dest,
                type_=type_name,
                default=default,
                help_=docs.get(f.name, ""),
                choices=choices,
                bool_style=bool_style,
                required=required,
            )
        )
    return params


def _string_type(annotation: str) -> str:
    """The type of an annotation get_type_hints could not evaluate, read from its text."""
    text = annotation.replace("Optional[", "").replace("typing.", "").strip("] ")
    text = re.sub(r"\s*\|\s*None|None\s*\|\s*", "", text)
    match = re.fullmatch(r"(?:list|List|tuple|Tuple|Sequence)\[(\w+)(?:,\s*\.\.\.)?", text)
    if match:
        return f"list[{match.group(1) if match.group(1) in ('bool', 'int', 'float', 'str') else 'str'}]"
    return text if text in ("bool", "int", "float", "str") else "str"


# ---------------------------------------------------------------- running a script up to its parsing


@contextlib.contextmanager
def _patched(path: Path, source: str) -> Iterator[None]:
    """Parsing raises _Captured for the duration; the interpreter's state is put back afterwards."""
    argv_list, path_list = sys.argv, sys.path  # the objects themselves: a script may rebind them
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    saved_environ = dict(os.environ)
    saved_modules = set(sys.modules)
    saved_parse = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args

    def capture_argparse(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Captured("argparse", _argparse_params(self))

    def capture_tyro(target: Any, *args: Any, **kwargs: Any) -> Any:
        if not (isinstance(target, type) and dataclasses.is_dataclass(target)):
            raise TypeError(f"tyro.cli({target!r}): only a dataclass target can be described")
        caller = sys._getframe(1).f_globals  # the script's globals, to resolve string annotations
        raise _Captured("tyro", _dataclass_params(target, source, caller))

    tyro_module: Any = None
    if "tyro" in source and importlib.util.find_spec("tyro") is not None:
        tyro_module = importlib.import_module("tyro")  # only scripts that use tyro pay for its import
        saved_cli = tyro_module.cli
    argparse.ArgumentParser.parse_args = capture_argparse  # type: ignore[method-assign]
    argparse.ArgumentParser.parse_known_args = capture_argparse  # type: ignore[method-assign]
    if tyro_module is not None:
        tyro_module.cli = capture_tyro
    try:
        # As `python script.py` would have it: argv[0] is the script and its folder comes first on sys.path.
        sys.argv = [str(path)]
        sys.path.insert(0, str(path.parent))
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            # stdout carries only this module's JSON; whatever a script prints on import goes to stderr.
            yield
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = saved_parse  # type: ignore[method-assign]
        if tyro_module is not None:
            tyro_module.cli = saved_cli
        argv_list[:], path_list[:] = saved_argv, saved_path
        sys.argv, sys.path = argv_list, path_list
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)
        # Modules from the scripts' own folder go, so the next script (or checkout) imports its own helpers.
        # Third-party modules stay: torch and other native extensions cannot be imported twice in a process.
        folder = str(path.parent.resolve())
        for name in set(sys.modules) - saved_modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file and os.path.abspath(file).startswith(folder + os.sep):
                del sys.modules[name]


def describe_script(path: str | Path) -> dict[str, Any]:
    """The arguments of one CleanRL script, read by running it until it parses its command line.

    Returns {"algo", "path", "style": "argparse"|"tyro", "params": [...]}, each param being
    {"name", "flag", "dest", "type", "default", "help", "choices", "bool_style", "required"}; or
    {"algo", "path", "error"} when the script cannot be imported here or never parses arguments.
    Nothing is trained: parsing raises before the script's first use of its arguments.
    """
    script = Path(path).resolve()
    entry: dict[str, Any] = {"algo": script.stem, "path": str(script)}
    try:
        source = script.read_text(encoding="utf-8")
        with _patched(script, source):
            runpy.run_path(str(script), run_name="__main__")
    except _Captured as captured:
        return {**entry, "style": captured.style, "params": captured.params}
    except (Exception, SystemExit) as exc:
        return {**entry, "error": f"{type(exc).__name__}: {exc}"}
    return {
        **entry,
        "error": "the script finished without parsing a command line (neither argparse nor tyro.cli)",
    }


def _cache_file(script: Path) -> Path:
    stat = script.stat()
    key = f"{script}:{stat.st_mtime_ns}:{stat.st_size}:{sys.version_info[:2]}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return Path(sys.prefix) / ".gym_gui_describe_cache" / f"{script.stem}-{digest}.json"


def describe_cached(path: str | Path) -> dict[str, Any]:
    """describe_script, remembered per script file version in this interpreter's prefix.

    Describing runs the script's imports (seconds, for torch); a launch asks again for the
    same script every time, so the answer is kept until the file changes.
    """
    script = Path(path).resolve()
    try:
        cache = _cache_file(script)
        return json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    description = describe_script(script)
    if "error" not in description:
        with contextlib.suppress(OSError):
            cache.parent.mkdir(exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(description), encoding="utf-8")
            os.replace(tmp, cache)
    return description


def describe_algo(name: str, user_dir: str | None = None) -> dict[str, Any]:
    """describe_script of the script called name in scripts_dir(user_dir); an error entry when there is none."""
    try:
        path = find_algorithm(name, user_dir)
    except (KeyError, FileNotFoundError) as exc:
        return {"algo": name, "error": str(exc.args[0]) if exc.args else str(exc)}
    return describe_cached(path)


def describe_all(user_dir: str | None = None) -> list[dict[str, Any]]:
    """describe_script of every runnable script (list_algorithms) in one process, in name order."""
    return [describe_script(info.path) for info in list_algorithms(user_dir) if info.runnable]


def main(argv: list[str] | None = None) -> int:
    """`python -m gym_gui_cleanrl_worker.describe`: JSON on stdout; exit 1 when the answer is an error."""
    parser = argparse.ArgumentParser(
        prog="python -m gym_gui_cleanrl_worker.describe",
        description="Describe CleanRL scripts from their own argument definitions, as JSON.",
    )
    parser.add_argument(
        "--scripts-dir", default=None, help="a CleanRL checkout (default: the installed cleanrl)"
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--algo", help="describe the script with this name (file stem), e.g. ppo")
    what.add_argument("--all", action="store_true", help="describe every runnable script")
    what.add_argument("--list", action="store_true", help="list the scripts without executing any")
    what.add_argument(
        "--env-table", action="store_true", help="every env id gym and gymnasium register here, made once"
    )
    parser.add_argument(
        "--values", help="with --algo: the user's parameters (JSON object) to check and turn into flags"
    )
    parser.add_argument(
        "--mapped", default="{}", help="with --values: flags derived from the run config (JSON)"
    )
    parser.add_argument(
        "--env-id",
        default=None,
        help="with --algo: refuse a script that cannot run here, or an env it cannot train on here",
    )
    parser.add_argument(
        "--envs",
        nargs="*",
        default=None,
        help="with --algo: the environments the script trains on here (and a verdict on each id given)",
    )
    parser.add_argument(
        "--spaces",
        metavar="ENV_ID",
        default=None,
        help="with --algo: the spaces a model of the script trained on ENV_ID acts on (its operator's)",
    )
    args = parser.parse_args(argv)
    result: Any
    failed = False
    try:
        if args.list:
            result = [dataclasses.asdict(info) for info in list_algorithms(args.scripts_dir)]
        elif args.all:
            result = describe_all(args.scripts_dir)
        elif args.env_table:
            result = [dataclasses.asdict(row) for row in env_table()]
        elif args.spaces is not None:
            result = operator_spaces_answer(args.algo, args.spaces, args.scripts_dir)
        elif args.envs is not None:
            result = script_envs_answer(args.algo, args.envs, args.scripts_dir)
        else:
            if args.values is not None or args.env_id:
                # Before running anything: the script must be runnable here, and so must the env.
                # (Its own file only: reading all ~30 scripts took a second of every run's submit.)
                try:
                    info: AlgorithmInfo | None = algorithm_info(args.algo, args.scripts_dir)
                except KeyError:
                    info = None  # describe_algo below names the closest scripts
                if info is not None and not info.runnable:
                    raise ValueError(f"{args.algo} cannot run here: {info.reason}")
                reason = refusal(info, args.env_id) if args.env_id else ""
                if reason:
                    raise ValueError(f"field 'env_id': {reason}")
            result = describe_algo(args.algo, args.scripts_dir)
            failed = "error" in result
            if args.values is not None and not failed:
                result = resolve_command(result, json.loads(args.values), json.loads(args.mapped))
    except FileNotFoundError as exc:
        result, failed = {"error": str(exc)}, True
    except ValueError as exc:
        result, failed = {"error": str(exc)}, True
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
