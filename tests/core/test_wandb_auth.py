"""The W&B API key is found where W&B's own tools keep it: WANDB_API_KEY, else `wandb login`'s netrc entry."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest

from gym_gui.core import wandb_auth
from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError

CLOUD_KEY = "c" * 40
LOCAL_KEY = "l" * 40
ENV_KEY = "e" * 40
SELF_HOSTED = "http://127.0.0.1:8080"

# What `wandb login` writes (wbnetrc._update_netrc), for W&B's cloud and a self-hosted server.
NETRC = f"""machine api.wandb.ai
  login user
  password {CLOUD_KEY}
machine 127.0.0.1:8080
  login user
  password {LOCAL_KEY}
"""


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME holding a real ~/.netrc, as `wandb login` leaves it."""
    home = tmp_path / "user"
    home.mkdir()
    (home / ".netrc").write_text(NETRC)
    (home / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC")
    return home


def test_the_key_of_a_wandb_login_is_found_for_its_server(user_home: Path) -> None:
    assert wandb_auth.netrc_path() == user_home / ".netrc"
    assert wandb_auth.api_key() == CLOUD_KEY
    assert wandb_auth.api_key("https://api.wandb.ai") == CLOUD_KEY
    assert wandb_auth.api_key("https://api.forge.coreweave.com") == CLOUD_KEY
    assert wandb_auth.api_key(SELF_HOSTED) == LOCAL_KEY
    assert wandb_auth.api_key(SELF_HOSTED + "/") == LOCAL_KEY
    assert wandb_auth.api_key("http://127.0.0.1:9090") is None  # another server: no key of its own


def test_wandb_api_key_wins_over_the_netrc_file(user_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", ENV_KEY)
    assert wandb_auth.api_key() == ENV_KEY
    assert wandb_auth.api_key(SELF_HOSTED) == ENV_KEY


def test_netrc_names_the_file(user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.netrc"
    other.write_text(f"machine api.wandb.ai login user password {LOCAL_KEY}\n")
    monkeypatch.setenv("NETRC", str(other))
    assert wandb_auth.api_key() == LOCAL_KEY
    monkeypatch.setenv("NETRC", str(tmp_path / "missing"))
    assert wandb_auth.api_key() is None


def test_a_broken_netrc_file_is_no_key_and_is_logged(
    user_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (user_home / ".netrc").write_text(f"machine api.wandb.ai login user password {CLOUD_KEY} port 1\n")
    with caplog.at_level(logging.WARNING, logger=wandb_auth.__name__):
        assert wandb_auth.api_key() is None
    assert str(user_home / ".netrc") in caplog.text
    (user_home / ".netrc").write_text("machine api.wandb.ai login user\n")  # an entry without a key
    assert wandb_auth.api_key() is None


def test_the_wandb_command_gets_the_server_and_its_key(
    user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = wandb_auth.wandb_environment(SELF_HOSTED)
    assert env is not None
    assert env["WANDB_API_KEY"] == LOCAL_KEY and env["WANDB_BASE_URL"] == SELF_HOSTED
    assert env["HOME"] == str(user_home)
    given = {"HOME": str(user_home), "PATH": "/usr/bin"}  # the environment it is added to
    assert wandb_auth.wandb_environment(SELF_HOSTED, given) == {
        **given,
        "WANDB_API_KEY": LOCAL_KEY,
        "WANDB_BASE_URL": SELF_HOSTED,
    }
    monkeypatch.setenv("WANDB_BASE_URL", SELF_HOSTED)  # the shell's server, when none is given
    env = wandb_auth.wandb_environment(None)
    assert env is not None and env["WANDB_API_KEY"] == LOCAL_KEY
    (user_home / ".netrc").unlink()
    assert wandb_auth.wandb_environment(None) is None
    assert "machine 127.0.0.1:8080 in" in wandb_auth.key_sources(SELF_HOSTED)


_WANDB_READS = """
import json, sys
from wandb.sdk.lib.wbauth import read_netrc_auth
print(json.dumps([read_netrc_auth(host=url) for url in sys.argv[1:]]))
"""


def test_the_same_key_as_wandb_itself_finds(user_home: Path, cleanrl_python: Path) -> None:
    servers = [
        "https://api.forge.coreweave.com",
        "https://api.wandb.ai",
        SELF_HOSTED,
        "http://127.0.0.1:9090",
    ]
    env = {"HOME": str(user_home), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [str(cleanrl_python), "-c", _WANDB_READS, *servers],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        wandb_auth.api_key(url, env) for url in servers
    ]


def _tracking(**tracking: object) -> dict[str, object]:
    return {"worker": "cleanrl", "env_id": "CartPole-v1", "budget": {"timesteps": 1}, "tracking": tracking}


def test_a_runs_w_and_b_server_is_an_address_without_credentials() -> None:
    config = parse_run_config(_tracking(wandb_base_url=" http://wandb.lab:8080/ "))
    assert config.tracking.wandb_base_url == "http://wandb.lab:8080"
    assert parse_run_config(_tracking()).tracking.wandb_base_url is None  # W&B's cloud
    for bad, says in (
        ("wandb.lab:8080", "http"),
        ("ftp://wandb.lab", "http"),
        ("https://user:secret@wandb.lab", "credentials"),
        ("https://wandb.lab/?token=x", "query"),
    ):
        with pytest.raises(ConfigError, match=rf"tracking\.wandb_base_url.*{says}"):
            parse_run_config(_tracking(wandb_base_url=bad))
