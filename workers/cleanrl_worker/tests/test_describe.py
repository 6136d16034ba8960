"""CleanRL algorithm discovery and argument description, run in the cleanrl bundle's interpreter."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

TYRO_CHECKOUT = Path(__file__).parent / "fixtures" / "tyro_checkout"
RUNNABLE_HERE = [
    "ppo",
    "dqn",
    "c51",
    "ppo_continuous_action",
    "sac_continuous_action",
    "td3_continuous_action",
    "ddpg_continuous_action",
]

# Calls one function of the worker package inside the bundle: JSON arguments on stdin, JSON answer on stdout.
_CALL = textwrap.dedent(
    """
    import json, sys
    from gym_gui_cleanrl_worker import describe, flags, scripts
    module, func, args = json.loads(sys.stdin.read())
    try:
        answer = {"ok": getattr({"describe": describe, "flags": flags, "scripts": scripts}[module], func)(*args)}
    except ValueError as exc:
        answer = {"error": str(exc)}
    sys.stdout.write(json.dumps(answer))
    """
)

_cache: dict[tuple[str, ...], Any] = {}


def _describe_cli(python: Path, *args: str, expect_rc: int = 0) -> Any:
    proc = subprocess.run(
        [str(python), "-m", "gym_gui_cleanrl_worker.describe", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == expect_rc, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _cached_cli(python: Path, *args: str) -> Any:
    # Describing imports torch in the bundle (seconds); several tests read the same answer.
    key = (str(python), *args)
    if key not in _cache:
        _cache[key] = _describe_cli(python, *args)
    return _cache[key]


def _call(python: Path, module: str, func: str, *args: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), "-c", _CALL],
        input=json.dumps([module, func, list(args)]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _has_module(python: Path, module: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({module!r}) else 1)"
    return subprocess.run([str(python), "-c", code], timeout=60).returncode == 0


def _params(description: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in description["params"]}


@pytest.fixture
def ppo(cleanrl_python: Path) -> dict[str, Any]:
    return _cached_cli(cleanrl_python, "--algo", "ppo")


@pytest.fixture
def tyro_ppo(cleanrl_python: Path) -> dict[str, Any]:
    return _cached_cli(cleanrl_python, "--scripts-dir", str(TYRO_CHECKOUT), "--algo", "ppo")


# ---------------------------------------------------------------- discovery


def test_list_comes_from_the_scripts_present(cleanrl_python: Path) -> None:
    listed = {a["name"]: a for a in _cached_cli(cleanrl_python, "--list")}
    for name in RUNNABLE_HERE:
        assert listed[name]["runnable"], listed[name]
        assert listed[name]["requires"] == [] and listed[name]["reason"] == ""
    assert listed["ppo"]["env_family"] == "classic_control"
    assert listed["ppo"]["default_env"] == "CartPole-v1"
    assert listed["ppo"]["path"].endswith("cleanrl/ppo.py")
    # Continuous-action scripts default to MuJoCo in cleanrl 1.2.0 but run on Pendulum-v1 too: still runnable.
    assert listed["ppo_continuous_action"]["env_family"] == "mujoco"
    assert listed["ppo_continuous_action"]["default_env"] == "HalfCheetah-v4"

    for name, module, pip_name in [
        ("dqn_jax", "jax", "pip install jax"),
        ("c51_jax", "flax", "pip install flax"),
        ("ppo_atari_envpool", "envpool", "run `gym-gui bundles install cleanrl --extra envpool`"),
        ("ppo_procgen", "procgen", "pip install procgen"),
        ("ppo_continuous_action_isaacgym", "isaacgym", "isaac-gym"),
        ("ppo_pettingzoo_ma_atari", "pettingzoo", "pip install pettingzoo"),
    ]:
        info = listed[name]
        assert not info["runnable"], info
        assert module in info["requires"], info
        assert module in info["reason"] and pip_name in info["reason"], info
    assert listed["ppo_atari_envpool"]["env_family"] == "envpool"
    assert listed["ppg_procgen"]["env_family"] == "procgen"
    assert listed["ppo_pettingzoo_ma_atari"]["env_family"] == "pettingzoo"
    assert listed["ppo_continuous_action_isaacgym"]["env_family"] == "isaacgym"
    for name in ("dqn_atari", "ppo_atari", "c51_atari", "sac_atari"):
        info = listed[name]
        assert info["env_family"] == "atari"
        assert info["runnable"] == (not info["requires"])
        if "ale_py" in info["requires"]:
            assert "run `gym-gui bundles install cleanrl --extra atari`" in info["reason"], info


def test_list_executes_no_script(cleanrl_python: Path) -> None:
    code = (
        "import sys\nfrom gym_gui_cleanrl_worker.scripts import list_algorithms\n"
        "assert list_algorithms()\nprint(sorted(m for m in ('torch', 'gym', 'gymnasium', 'cleanrl.ppo') if m in sys.modules))"
    )
    out = subprocess.run([str(cleanrl_python), "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_checkout_is_found_at_its_root_or_its_cleanrl_folder(cleanrl_python: Path) -> None:
    for where in (TYRO_CHECKOUT, TYRO_CHECKOUT / "cleanrl"):
        listed = _describe_cli(cleanrl_python, "--scripts-dir", str(where), "--list")
        assert [a["name"] for a in listed] == ["ppo"]
        assert listed[0]["runnable"] and listed[0]["env_family"] == "classic_control"
    missing = _describe_cli(cleanrl_python, "--scripts-dir", "/nonexistent/cleanrl", "--list", expect_rc=1)
    assert "does not exist" in missing["error"]


def test_env_family_and_missing_modules_by_env_id(cleanrl_python: Path) -> None:
    families = {
        "CartPole-v1": "classic_control",
        "Pendulum-v1": "classic_control",
        "MountainCarContinuous-v0": "classic_control",
        "HalfCheetah-v4": "mujoco",
        "Hopper-v3": "mujoco",
        "BreakoutNoFrameskip-v4": "atari",
        "ALE/Pong-v5": "atari",
        "Pong-v5": "atari",
        "starpilot": "procgen",
        "pong_v3": "pettingzoo",
        "LunarLander-v2": "box2d",
    }
    for env_id, family in families.items():
        assert _call(cleanrl_python, "scripts", "env_family_of", env_id) == {"ok": family}, env_id

    assert _call(cleanrl_python, "scripts", "missing_for_env", "Pendulum-v1") == {"ok": None}
    assert _call(cleanrl_python, "scripts", "missing_for_env", "CartPole-v1") == {"ok": None}
    pong = _call(cleanrl_python, "scripts", "missing_for_env", "ALE/Pong-v5")["ok"]
    if _has_module(cleanrl_python, "ale_py") and _has_module(cleanrl_python, "cv2"):
        assert pong is None
    else:
        # The bundle's own extra, pinned to its gymnasium, never a pip line of packages it might not take.
        assert pong.startswith("ALE/Pong-v5 (atari environment) needs ale_py, cv2, missing in ")
        assert pong.endswith(": run `gym-gui bundles install cleanrl --extra atari`")
    cheetah = _call(cleanrl_python, "scripts", "missing_for_env", "HalfCheetah-v4")["ok"]
    assert (cheetah is None) == _has_module(cleanrl_python, "mujoco")
    if cheetah:
        assert "pip install" in cheetah and "mujoco" in cheetah


# ---------------------------------------------------------------- the environments each script trains on


def _envs(python: Path, algo: str, *also: str, scripts_dir: Path | None = None) -> dict[str, Any]:
    where = ["--scripts-dir", str(scripts_dir)] if scripts_dir else []
    return _describe_cli(python, *where, "--algo", algo, "--envs", *also)


def test_the_bundle_makes_each_registered_env_once_and_says_why_not(cleanrl_python: Path) -> None:
    table = _cached_cli(cleanrl_python, "--env-table")
    rows = {(row["api"], row["env_id"]): row for row in table}
    for api in ("gym", "gymnasium"):
        cartpole = rows[(api, "CartPole-v1")]
        assert (
            cartpole["problem"] == "" and cartpole["action"] == "discrete" and cartpole["array_observations"]
        )
        lake = rows[(api, "FrozenLake-v1")]
        assert (
            lake["problem"] == ""
            and not lake["array_observations"]
            and "Discrete(16)" in lake["observation_space"]
        )
        assert rows[(api, "Pendulum-v1")]["action"] == "continuous"
        # No Box2D in the bundle: its ids are registered, not made, and the hint says what to install.
        lander = rows[(api, "LunarLander-v2")]["problem"]
        assert "needs Box2D" in lander and "pip install box2d-py" in lander
        # MuJoCo's maintained bindings make -v4; the -v3 ids want mujoco-py.
        assert rows[(api, "HalfCheetah-v4")]["problem"] == "", rows[(api, "HalfCheetah-v4")]
        assert rows[(api, "HalfCheetah-v4")]["action"] == "continuous"
        assert "pip install free-mujoco-py" in rows[(api, "HalfCheetah-v3")]["problem"]
    # Old gym reaches gymnasium's MuJoCo -v4 ids through the launcher's compat patch, as a run does.
    assert ("gym", "Hopper-v4") in rows
    # gymnasium's wrappers of another id are no environments of their own.
    assert not any(env_id.startswith("GymV2") for _, env_id in rows)
    # Nothing the app's gymnasium 1.4 has and the bundle's packages lack.
    assert not {("gym", "Taxi-v4"), ("gymnasium", "Taxi-v4"), ("gymnasium", "HalfCheetah-v5")} & set(rows)


def test_scripts_say_how_they_make_envs_and_what_actions_they_take(cleanrl_python: Path) -> None:
    listed = {a["name"]: a for a in _cached_cli(cleanrl_python, "--list")}
    expected = {
        "ppo": ("gym", "discrete"),
        "c51": ("gym", "discrete"),
        "dqn": ("gymnasium", "discrete"),
        "ppo_continuous_action": ("gymnasium", "continuous"),
        "ddpg_continuous_action": ("gymnasium", "continuous"),
        "sac_continuous_action": ("gym", "continuous"),
        "td3_continuous_action": ("gym", "continuous"),
    }
    for name, (api, actions) in expected.items():
        assert (listed[name]["env_api"], listed[name]["action_space"]) == (api, actions), name
        assert listed[name]["array_observations"], name
    tyro = _describe_cli(cleanrl_python, "--scripts-dir", str(TYRO_CHECKOUT), "--list")[0]
    assert (tyro["env_api"], tyro["action_space"]) == ("gymnasium", "discrete")


def test_each_script_is_offered_what_it_trains_on_and_told_why_not_the_rest(cleanrl_python: Path) -> None:
    asked = ("CartPole-v1", "Taxi-v4", "LunarLander-v3", "HalfCheetah-v5", "Pendulum-v1", "FrozenLake-v1")
    ppo = _envs(cleanrl_python, "ppo", *asked)
    assert ppo["api"] == "gym 0.23.1"
    reasons = {env["id"]: env["reason"] for env in ppo["envs"]}
    trains = [env_id for env_id, reason in reasons.items() if not reason]
    assert trains == ["CartPole-v0", "CartPole-v1", "MountainCar-v0", "Acrobot-v1"]
    assert reasons["Taxi-v4"].startswith("Taxi-v4 is not registered in gym 0.23.1 here")
    assert "it has Taxi-v3" in reasons["Taxi-v4"] and "Discrete(500)" in reasons["Taxi-v4"]
    assert (
        "it has LunarLander-v2" in reasons["LunarLander-v3"]
        and "pip install box2d-py" in reasons["LunarLander-v3"]
    )
    assert "ppo trains discrete actions only" in reasons["Pendulum-v1"]
    assert "ppo trains discrete actions only" in reasons["HalfCheetah-v5"]
    assert "observation" in reasons["FrozenLake-v1"]
    # What a missing module keeps from it is listed with the install hint; MuJoCo's old versions are not
    # (their -v4 is made here, it is continuous, and nobody asked).
    assert "pip install box2d-py" in reasons["LunarLander-v2"]
    assert not any(env_id.startswith("HalfCheetah-v") and env_id != "HalfCheetah-v5" for env_id in reasons)

    sac = {env["id"]: env["reason"] for env in _envs(cleanrl_python, "sac_continuous_action", *asked)["envs"]}
    assert sac["Pendulum-v1"] == "" and sac["Hopper-v4"] == "" and sac["HalfCheetah-v4"] == ""
    assert sac["HalfCheetah-v5"].endswith("choose HalfCheetah-v4")
    assert "continuous actions only" in sac["CartPole-v1"]
    dqn = _envs(cleanrl_python, "dqn", "CartPole-v1")
    assert dqn["api"] == "gymnasium 0.29.1" and {"id": "CartPole-v1", "reason": ""} in dqn["envs"]
    # EnvPool, Procgen …: their own library makes the envs, no registry lists them.
    assert _envs(cleanrl_python, "ppo_procgen")["envs"] is None
    tyro = _envs(cleanrl_python, "ppo", scripts_dir=TYRO_CHECKOUT)
    assert tyro["api"] == "gymnasium 0.29.1" and {"id": "CartPole-v1", "reason": ""} in tyro["envs"]


def test_a_run_on_an_env_its_script_cannot_train_on_is_refused_with_the_same_reason(
    cleanrl_python: Path,
) -> None:
    refused = ("Taxi-v4", "Pendulum-v1", "LunarLander-v2", "FrozenLake-v1")
    offered = {env["id"]: env["reason"] for env in _envs(cleanrl_python, "ppo", *refused)["envs"]}
    for env_id in refused:
        answer = _describe_cli(
            cleanrl_python, "--algo", "ppo", "--values", "{}", "--env-id", env_id, expect_rc=1
        )
        assert answer["error"] == f"field 'env_id': {offered[env_id]}" and offered[env_id]
    resolved = _describe_cli(cleanrl_python, "--algo", "ppo", "--values", "{}", "--env-id", "Acrobot-v1")
    assert resolved["argv"] == []


# ---------------------------------------------------------------- argparse scripts (the PyPI release)


def test_describe_ppo_reads_its_own_argparse_definitions(ppo: dict[str, Any]) -> None:
    assert ppo["algo"] == "ppo" and ppo["style"] == "argparse"
    params = _params(ppo)
    assert 24 <= len(params) <= 28
    assert params["learning-rate"] == {
        "name": "learning-rate",
        "flag": "--learning-rate",
        "dest": "learning_rate",
        "type": "float",
        "default": 0.00025,
        "help": "the learning rate of the optimizer",
        "choices": None,
        "bool_style": None,
        "required": False,
    }
    assert params["num-envs"]["type"] == "int" and params["num-envs"]["default"] == 4
    assert params["cuda"]["type"] == "bool" and params["cuda"]["default"] is True
    assert params["cuda"]["bool_style"] == "strtobool"
    assert params["target-kl"]["type"] == "float" and params["target-kl"]["default"] is None
    assert params["env-id"]["default"] == "CartPole-v1"
    # A default that is an expression in the script (os.path.basename(__file__).rstrip(".py")) is evaluated.
    assert params["exp-name"]["default"] == "ppo"
    assert params["wandb-entity"]["default"] is None
    for name in ("exp-name", "seed", "torch-deterministic", "track", "wandb-project-name", "capture-video"):
        assert name in params
    assert all(p["help"] for p in params.values())


def test_describe_all_covers_every_runnable_script(cleanrl_python: Path) -> None:
    described = {d["algo"]: d for d in _cached_cli(cleanrl_python, "--all")}
    for name in RUNNABLE_HERE:
        assert "error" not in described[name], described[name]
        params = _params(described[name])
        assert {"env-id", "total-timesteps", "seed", "cuda"} <= set(params), name
    assert _params(described["ppo_continuous_action"])["env-id"]["default"] == "HalfCheetah-v4"
    assert _params(described["dqn"])["env-id"]["default"] == "CartPole-v1"
    assert "dqn_jax" not in described  # not runnable here, so not executed


def test_a_script_that_cannot_import_is_an_error_entry(cleanrl_python: Path, tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "import argparse\nimport not_a_module_xyz\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--env-id', default='CartPole-v1')\n"
        "parser.parse_args()\n"
    )
    (tmp_path / "explodes.py").write_text(
        "import argparse\nraise RuntimeError('boom at import')\n"
        "argparse.ArgumentParser().add_argument('--env-id', default='CartPole-v1')\n"
    )
    (tmp_path / "fine.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--env-id', type=str, default='Acrobot-v1', help='the env')\np.parse_args()\n"
    )
    listed = {a["name"]: a for a in _describe_cli(cleanrl_python, "--scripts-dir", str(tmp_path), "--list")}
    assert listed["broken"]["requires"] == ["not_a_module_xyz"] and not listed["broken"]["runnable"]
    assert listed["fine"]["env_family"] == "classic_control"

    broken = _describe_cli(cleanrl_python, "--scripts-dir", str(tmp_path), "--algo", "broken", expect_rc=1)
    assert broken["algo"] == "broken" and "not_a_module_xyz" in broken["error"]

    # explodes.py looks runnable from its imports; describing all of them still answers for every one.
    everything = {
        d["algo"]: d for d in _describe_cli(cleanrl_python, "--scripts-dir", str(tmp_path), "--all")
    }
    assert "boom at import" in everything["explodes"]["error"]
    assert _params(everything["fine"])["env-id"]["default"] == "Acrobot-v1"

    unknown = _describe_cli(cleanrl_python, "--algo", "ppx", expect_rc=1)
    assert "did you mean ppo" in unknown["error"]


def test_describing_restores_the_interpreter(cleanrl_python: Path, tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 'from helper'\n")
    (tmp_path / "first.py").write_text(
        "import argparse, sys, helper\nsys.argv.append('--junk')\n"
        "p = argparse.ArgumentParser()\np.add_argument('--env-id', default=helper.VALUE)\np.parse_args()\n"
    )
    code = textwrap.dedent(
        f"""
        import argparse, json, sys
        from gym_gui_cleanrl_worker.describe import describe_script
        argv = list(sys.argv)
        d = describe_script({str(tmp_path / "first.py")!r})
        p = argparse.ArgumentParser()
        p.add_argument("--x", type=int, default=3)
        print(json.dumps([d["params"][0]["default"], sys.argv == argv, "helper" in sys.modules,
                          p.parse_args([]).x, p.parse_known_args(["--x", "5"])[0].x]))
        """
    )
    out = subprocess.run([str(cleanrl_python), "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["from helper", True, False, 3, 5]


# ---------------------------------------------------------------- validation and argv


def test_validate_coerces_and_refuses_with_the_scripts_own_names(
    cleanrl_python: Path, ppo: dict[str, Any]
) -> None:
    ok = _call(
        cleanrl_python,
        "flags",
        "validate",
        ppo,
        {"learning-rate": "0.001", "cuda": "false", "num_envs": "8", "--total-timesteps": "1e5", "seed": 7},
    )
    assert ok == {
        "ok": {"learning-rate": 0.001, "cuda": False, "num-envs": 8, "total-timesteps": 100000, "seed": 7}
    }

    assert _call(cleanrl_python, "flags", "validate", ppo, {"learning-rat": "0.1"}) == {
        "error": "unknown parameter --learning-rat for ppo; did you mean --learning-rate?"
    }
    assert _call(cleanrl_python, "flags", "validate", ppo, {"learning-rate": "fast"}) == {
        "error": "--learning-rate: expected a float, got 'fast'"
    }
    assert _call(cleanrl_python, "flags", "validate", ppo, {"num-envs": "4.5"}) == {
        "error": "--num-envs: expected an int, got '4.5'"
    }
    assert _call(cleanrl_python, "flags", "validate", ppo, {"cuda": "maybe"}) == {
        "error": "--cuda: expected a bool (true/false), got 'maybe'"
    }
    # Every float flag takes finite numbers only, and a count counts at least one (a batch of none).
    for text in ("nan", "inf", "-inf", "Infinity"):
        answer = _call(cleanrl_python, "flags", "validate", ppo, {"learning-rate": text})
        assert answer["error"].startswith("--learning-rate: expected a finite number, got "), answer
    assert _call(cleanrl_python, "flags", "validate", ppo, {"gamma": float("nan")})["error"].startswith(
        "--gamma: expected a finite number"
    )
    for count in ("num-envs", "num-steps", "num-minibatches", "update-epochs"):
        assert _call(cleanrl_python, "flags", "validate", ppo, {count: "0"}) == {
            "error": f"--{count}: must be in [1, inf], got 0"
        }
    assert _call(cleanrl_python, "flags", "validate", ppo, {"num-envs": "1"}) == {"ok": {"num-envs": 1}}


def test_the_form_offers_each_count_from_one_and_each_float_finite(ppo: dict[str, Any]) -> None:
    from gym_gui_cleanrl_worker.form import parameters

    offered = {parameter.name: parameter for parameter in parameters(ppo)}
    assert offered["num-envs"].low == 1 and offered["num-envs"].problem(0)
    assert offered["num-minibatches"].problem(0) and not offered["num-minibatches"].problem(1)
    assert offered["learning-rate"].problem(float("inf")) and not offered["learning-rate"].problem(3e-4)
    assert offered["seed"].low is None  # a seed is no count


def test_build_argv_for_argparse_scripts(cleanrl_python: Path, ppo: dict[str, Any], tmp_path: Path) -> None:
    values = {
        "learning-rate": "0.001",
        "cuda": "false",
        "track": False,
        "target-kl": None,
        "total-timesteps": 0,
    }
    argv = _call(cleanrl_python, "flags", "build_argv", ppo, values)["ok"]
    assert argv == [
        "--cuda",
        "False",
        "--track",
        "False",
        "--total-timesteps",
        "0",
        "--learning-rate",
        "0.001",
    ]
    # The script itself accepts what was built (zero timesteps: it parses, sets up, trains nothing).
    run = subprocess.run(
        [str(cleanrl_python), ppo["path"], *argv], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_build_argv_styles_choices_and_lists(cleanrl_python: Path) -> None:
    def param(
        name: str, type_: str, default: Any, bool_style: str | None = None, choices: Any = None
    ) -> dict:
        return {
            "name": name,
            "flag": f"--{name}",
            "dest": name.replace("-", "_"),
            "type": type_,
            "default": default,
            "help": "",
            "choices": choices,
            "bool_style": bool_style,
            "required": False,
        }

    description = {
        "algo": "made_up",
        "style": "argparse",
        "params": [
            param("verbose", "bool", False, "store_true"),
            param("quiet", "bool", False, "store_true"),
            param("mode", "str", "a", choices=["a", "b"]),
            param("device-ids", "list[int]", []),
        ],
    }
    argv = _call(
        cleanrl_python,
        "flags",
        "build_argv",
        description,
        {"verbose": "yes", "quiet": False, "mode": "b", "device-ids": "1, 2 3"},
    )
    assert argv == {"ok": ["--verbose", "--mode", "b", "--device-ids", "1", "2", "3"]}
    assert _call(cleanrl_python, "flags", "validate", description, {"mode": "c"}) == {
        "error": "--mode: 'c' is not one of a, b"
    }
    assert _call(cleanrl_python, "flags", "validate", description, {"device-ids": [1, "x"]}) == {
        "error": "--device-ids: expected an int, got 'x'"
    }


# ---------------------------------------------------------------- tyro scripts (current CleanRL)


def test_the_tyro_fixture_is_current_cleanrl() -> None:
    source = (TYRO_CHECKOUT / "cleanrl" / "ppo.py").read_text()
    assert "args = tyro.cli(Args)" in source and "@dataclass" in source
    assert (TYRO_CHECKOUT / "LICENSE-cleanrl").read_text().startswith("MIT License")


def test_describe_a_tyro_checkout(tyro_ppo: dict[str, Any]) -> None:
    assert tyro_ppo["style"] == "tyro" and tyro_ppo["algo"] == "ppo"
    assert tyro_ppo["path"].endswith("tyro_checkout/cleanrl/ppo.py")
    params = _params(tyro_ppo)
    assert params["learning-rate"] == {
        "name": "learning-rate",
        "flag": "--learning-rate",
        "dest": "learning_rate",
        "type": "float",
        "default": 0.00025,
        "help": "the learning rate of the optimizer",
        "choices": None,
        "bool_style": None,
        "required": False,
    }
    assert params["cuda"]["type"] == "bool" and params["cuda"]["bool_style"] == "tyro"
    assert params["cuda"]["default"] is True
    assert params["env-id"]["default"] == "CartPole-v1"
    assert params["exp-name"]["default"] == "ppo"
    assert params["target-kl"]["type"] == "float" and params["target-kl"]["default"] is None
    assert params["num-envs"]["type"] == "int" and params["num-envs"]["default"] == 4
    assert params["clip-vloss"]["help"].startswith("Toggles whether or not to use a clipped loss")
    assert all(p["help"] for p in params.values())


def test_build_argv_for_tyro_scripts(cleanrl_python: Path, tyro_ppo: dict[str, Any], tmp_path: Path) -> None:
    values = {"cuda": "false", "anneal_lr": True, "learning-rate": "1e-3", "env-id": "Acrobot-v1"}
    argv = _call(cleanrl_python, "flags", "build_argv", tyro_ppo, values)["ok"]
    assert argv == ["--no-cuda", "--env-id", "Acrobot-v1", "--learning-rate", "0.001", "--anneal-lr"]
    assert _call(cleanrl_python, "flags", "validate", tyro_ppo, {"num-env": 2}) == {
        "error": "unknown parameter --num-env for ppo; did you mean --num-envs?"
    }
    run = subprocess.run(
        [str(cleanrl_python), tyro_ppo["path"], *argv, "--total-timesteps", "0", "--num-envs", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_the_bundles_answers_are_asked_once_per_install_and_a_checkouts_every_time(
    cleanrl_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gym_gui_cleanrl_worker.form import ScriptSource
    from gym_gui_cleanrl_worker.plugin import CleanRLLauncher

    from gym_gui.core.errors import ConfigError
    from gym_gui.storage.home import Home
    from gym_gui.workers import ONLY, PARAMETERS, LaunchContext, bundle_answers, worker_catalog
    from tests.fixtures import SHARED_BUNDLES
    from workers.cleanrl_worker.tests.support import cleanrl_config

    bundles = worker_catalog().bundle_directory(Path(SHARED_BUNDLES))
    launcher = CleanRLLauncher(LaunchContext(Home(tmp_path / "h").ensure(), bundles))
    asked: list[list[str]] = []
    real_run = subprocess.run

    def counted(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        asked.append(list(args))  # the bundle's interpreter still answers: this only counts
        return real_run(args, **kwargs)

    monkeypatch.setattr(bundle_answers.subprocess, "run", counted)

    def trial(**params: Any) -> Any:
        return cleanrl_config("ppo", "CartPole-v1", 2000, params=params)

    # A sweep's trials: two questions to the bundle (the verdict on script and env, and the script's
    # definitions), then each trial's flags are made here from the answers.
    launcher.validate(trial(**{"learning-rate": 0.001}))
    launcher.validate(trial(**{"learning-rate": 0.002, "num-envs": 2}))
    assert len(asked) == 2
    assert launcher._script_argv(trial(**{"ent-coef": 0.02}), gpu=False)["argv"][-2:] == [
        "--ent-coef",
        "0.02",
    ]
    with pytest.raises(ConfigError, match="num-envs"):
        launcher.validate(trial(**{"num-envs": "many"}))  # refused with the script's own flag name
    with pytest.raises(ConfigError, match="CarPole-v1"):
        launcher.validate(cleanrl_config("ppo", "CarPole-v1", 2000))  # an env is a question of its own
    assert len(asked) == 3
    # A sweep's check of its space asks for the parameters alone: the definitions already known.
    only = launcher.describe({ONLY: PARAMETERS, "algorithm": "ppo"})
    assert only.variant == "ppo" and only.parameter("learning-rate") is not None and not only.variants
    assert len(asked) == 3

    # A reinstall of the bundle (a new install time in its marker) is asked again.
    marker = bundles.marker_path("cleanrl")
    original = marker.read_bytes()
    try:
        reinstalled = {**json.loads(original), "installed_at": json.loads(original)["installed_at"] + 1}
        marker.write_text(json.dumps(reinstalled))
        launcher.validate(trial(**{"learning-rate": 0.001}))
        assert len(asked) == 5
    finally:
        marker.write_bytes(original)

    # A checkout of one's own may change under gym_gui: asked every time, and an edit is seen.
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    script = checkout / "ppo.py"
    script.write_text(Path(launcher.arguments(ScriptSource(), "ppo")["path"]).read_text())
    own = {"scripts_dir": str(checkout), "ent-coef": 0.01}
    launcher.validate(cleanrl_config("ppo", "CartPole-v1", 2000, params=own))
    script.write_text(script.read_text().replace('"--ent-coef"', '"--entropy-coef"'))
    with pytest.raises(ConfigError, match="entropy-coef"):
        launcher.validate(cleanrl_config("ppo", "CartPole-v1", 2000, params=own))
