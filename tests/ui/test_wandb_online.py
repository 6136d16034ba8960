"""W&B online, tested at the protocol boundary: real CleanRL runs whose real wandb client logs to a W&B
server on the loopback interface (tests/wandb_server.py), read back through the manifest and the W&B tab."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.tabs.wandb import WandbTab
from tests.fixtures import SHARED_BUNDLES
from tests.support import files_containing, gym_gui, module_daemon
from tests.wandb_server import ENTITY, FakeWandb

# A self-hosted server's key: a prefix, a dash and 40+ characters (what wandb accepts).
KEY = "local-ggonline0123456789abcdef0123456789abcdef"
OTHER_KEY = "local-ggother00123456789abcdef0123456789abcdef"
# The key itself and the form it travels in (HTTP basic auth): neither may be written anywhere.
KEY_FORMS = (KEY.encode(), base64.b64encode(f"api:{KEY}".encode()))
PROJECT = "gg-online"
RETURN = "charts/episodic_return"


@pytest.fixture(scope="module")
def user_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HOME of the daemon, its workers and the submitting shell: searched for the key afterwards."""
    return tmp_path_factory.mktemp("user_home")


@pytest.fixture(scope="module")
def wandb_server() -> Iterator[FakeWandb]:
    with FakeWandb(KEY) as server:
        yield server


@pytest.fixture(scope="module")
def online_daemon(
    tmp_path_factory: pytest.TempPathFactory, user_home: Path
) -> Iterator[tuple[DaemonClient, Home]]:
    root = tmp_path_factory.mktemp("wandb_online_home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOME", str(user_home))
        with module_daemon(root, SHARED_BUNDLES, ["--max-concurrent", "3"]) as daemon:
            yield daemon


# conftest's `link` fixture connects to whatever `home` and `client` are: here, the module's daemon.
@pytest.fixture
def home(online_daemon: tuple[DaemonClient, Home]) -> Home:
    return online_daemon[1]


@pytest.fixture
def client(online_daemon: tuple[DaemonClient, Home]) -> DaemonClient:
    return online_daemon[0]


@pytest.fixture(scope="module")
def online_run(online_daemon: tuple[DaemonClient, Home], wandb_server: FakeWandb) -> RunRecord:
    """A short PPO run submitted as a user does: `gym-gui train --wandb online` in a shell that has
    WANDB_API_KEY and WANDB_BASE_URL (the server)."""
    client, home = online_daemon
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WANDB_API_KEY", KEY)
        env.setenv("WANDB_BASE_URL", wandb_server.url)
        result = gym_gui(
            "train", "--worker", "cleanrl", "--algo", "ppo", "--env", "CartPole-v1", "--seed", "1",
            "--total-timesteps", "2048", "--param", "num-steps=128",
            "--wandb", "online", "--wandb-project", PROJECT, "--detach",
            home=home.root,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = re.search(r"run (\S+)", result.stdout)
    assert found, result.stdout
    final = client.wait_for_end(found.group(1), timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    return final


def _wandb_run_id(home: Home, run: RunRecord) -> str:
    entry = RunDir(home.run_dir(run.run_id)).read_manifest().wandb
    assert entry is not None and entry.wandb_run_id
    return entry.wandb_run_id


def test_an_online_run_records_its_url_and_streams_its_metrics_to_the_server(
    online_run: RunRecord, wandb_server: FakeWandb, home: Home
) -> None:
    files = RunDir(home.run_dir(online_run.run_id))
    assert files.read_config().tracking.wandb_base_url == wandb_server.url
    entry = files.read_manifest().wandb
    assert entry is not None and entry.mode == "online", entry
    assert (
        entry.wandb_run_id and entry.path.startswith("wandb/run-") and entry.path.endswith(entry.wandb_run_id)
    )
    assert entry.url == wandb_server.run_url(PROJECT, entry.wandb_run_id)

    # The server created that run in the project, with the script's config.
    assert "Viewer" in wandb_server.operations and wandb_server.refused == [] and wandb_server.unknown == []
    created = [u for u in wandb_server.upserts if u.get("name") == entry.wandb_run_id]
    assert created and all(u["project"] == PROJECT for u in created)
    # The file stream brought the script's metrics while it trained and ended the run cleanly.
    streamed = wandb_server.streams[(ENTITY, PROJECT, entry.wandb_run_id)]
    returns = [row[RETURN] for row in streamed.history if RETURN in row]
    assert returns, streamed.history[:5]
    reader = TelemetryReader(files.telemetry_path)
    stored = reader.metrics(RETURN)
    reader.close()
    assert len(returns) == len(stored) and sorted(returns) == pytest.approx(sorted(p.value for p in stored))
    assert streamed.complete and streamed.exitcode == 0
    assert streamed.summary.get("global_step") == 2048
    uploaded = wandb_server.uploads.get(f"{ENTITY}/{PROJECT}/{entry.wandb_run_id}/config.yaml")
    assert uploaded is not None and b"CartPole-v1" in uploaded


def test_the_wandb_tab_shows_the_online_runs_url(
    qtbot: QtBot, link: DaemonLink, online_run: RunRecord, wandb_server: FakeWandb, home: Home
) -> None:
    url = wandb_server.run_url(PROJECT, _wandb_run_id(home, online_run))
    tab = WandbTab(link)
    qtbot.addWidget(tab)
    tab.show()
    tab.attach(online_run)
    qtbot.waitUntil(lambda: tab.info is not None, timeout=60_000)
    assert tab.info is not None and tab.info.mode == "online", tab.message.text()
    assert tab.info.url == url
    assert url in tab.message.text()
    assert tab.open_button.isVisible() and not tab.sync_button.isVisible()
    config = tab.config()
    assert config is not None and config["env_id"] == "CartPole-v1", tab.notes.text()


def test_the_key_is_never_written_to_disk(online_run: RunRecord, user_home: Path, home: Home) -> None:
    run_dir = home.run_dir(online_run.run_id)
    settings = RunDir(run_dir).wandb_state_dir
    # wandb's own config, cache and data directories are the run's, not the user's.
    assert (settings / "cache").is_dir()
    assert not [p for p in user_home.rglob("*") if "wandb" in p.name.lower()]
    assert files_containing(run_dir, *KEY_FORMS) == []
    assert files_containing(settings, *KEY_FORMS) == []
    assert files_containing(home.root, *KEY_FORMS) == []
    assert files_containing(user_home, *KEY_FORMS) == []


@pytest.mark.parametrize(
    ("server_key", "fail", "says"),
    [
        # A server that does not know the key: 401 on everything, the login check first.
        (OTHER_KEY, {}, "invalid API key"),
        # A server that breaks while creating the run: wandb retries until its init timeout.
        (KEY, {"UpsertBucket": 500}, "HTTP 500"),
    ],
    ids=["key-refused", "upsert-500"],
)
def test_a_failed_wandb_init_is_an_event_of_the_run_with_the_reason(
    online_daemon: tuple[DaemonClient, Home], server_key: str, fail: dict[str, int], says: str
) -> None:
    client, home = online_daemon
    with FakeWandb(server_key, fail) as server:
        config = parse_run_config(
            {
                "worker": "cleanrl",
                "algorithm": "ppo",
                "env_id": "CartPole-v1",
                "budget": {"timesteps": 2048},
                "tracking": {"wandb_mode": "online", "wandb_base_url": server.url, "wandb_project": PROJECT},
            }
        )
        record, _ = client.submit(config, {"WANDB_API_KEY": KEY})
        final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.FAILED
    files = RunDir(home.run_dir(record.run_id))
    reader = TelemetryReader(files.telemetry_path)
    errors = [e.message for e in reader.events() if e.level == "ERROR" and e.kind == "worker"]
    reader.close()
    assert len(errors) == 1 and errors[0].startswith("W&B could not start the run: "), errors
    assert says in errors[0]
    # The run's end names the same reason (after the script's exit code).
    assert final.reason.endswith(errors[0]), final.reason
    if fail:
        assert set(server.refused) == {("UpsertBucket", 500)}  # asked again until wandb gave up
    else:
        assert ("Viewer", 401) in server.refused and server.operations == []
    # No W&B run to show: the server never made one.
    assert files.read_manifest().wandb is None


def test_the_form_hands_the_key_of_a_wandb_login_to_online_runs(
    qtbot: QtBot, link: DaemonLink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine api.wandb.ai\n  login user\n  password {KEY}\n")
    monkeypatch.setenv("NETRC", str(netrc))
    form = GeneratedForm("cleanrl", link)
    qtbot.addWidget(form)
    form.wandb_mode_combo.setCurrentText("online")
    assert form.wandb_key_edit.text() == ""
    assert form.secret_env() == {"WANDB_API_KEY": KEY}
    form.wandb_key_edit.setText(OTHER_KEY)  # a key typed in the form wins
    assert form.secret_env() == {"WANDB_API_KEY": OTHER_KEY}
    form.wandb_mode_combo.setCurrentText("disabled")
    assert form.secret_env() == {}


def test_an_offline_run_syncs_to_its_server_with_the_key_of_a_wandb_login(
    qtbot: QtBot,
    link: DaemonLink,
    client: DaemonClient,
    home: Home,
    wandb_server: FakeWandb,
    user_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": 2,
            "budget": {"timesteps": 1024},
            "params": {"num-steps": 128},
            "tracking": {
                "wandb_mode": "offline",
                "wandb_base_url": wandb_server.url,
                "wandb_project": PROJECT,
            },
        }
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    entry = RunDir(home.run_dir(record.run_id)).read_manifest().wandb
    assert entry is not None and entry.mode == "offline" and entry.url is None and entry.wandb_run_id

    elsewhere = tmp_path / "cwd"  # where the cockpit and the shell were started
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    tab = WandbTab(link)
    qtbot.addWidget(tab)
    tab.show()
    tab.attach(final)
    qtbot.waitUntil(lambda: tab.info is not None, timeout=60_000)
    assert f"Sync uploads it to the W&B server at {wandb_server.url}." in tab.message.text()
    blocked = tab.sync_blocked_reason()  # no key anywhere yet
    assert blocked is not None and f"machine {wandb_server.url.split('://', 1)[1]} in" in blocked
    # `wandb login --host <server>` keeps the key under the server's host:port.
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine {wandb_server.url.split('://', 1)[1]}\n  login user\n  password {KEY}\n")
    monkeypatch.setenv("NETRC", str(netrc))
    assert tab.sync_blocked_reason() is None
    tab.sync()
    qtbot.waitUntil(lambda: "Syncing" not in tab.sync_status.text(), timeout=120_000)
    synced = f"Synced 1 W&B run(s) of {record.run_id} to the W&B server at {wandb_server.url}."
    assert tab.sync_status.text() == synced

    streamed = wandb_server.streams[(ENTITY, PROJECT, entry.wandb_run_id)]
    assert any(RETURN in row for row in streamed.history)
    assert streamed.complete
    # The same from a shell: `gym-gui wandb sync RUN` finds the key for the run's server.
    result = gym_gui("wandb", "sync", record.run_id, home=home.root)
    assert result.returncode == 0, result.stderr
    assert f"1/1 wandb sync {entry.path.rsplit('/', 1)[-1]}…" in result.stdout
    assert synced in result.stdout
    # wandb sync's own logs stay with the run, not where the sync was started from.
    assert list(elsewhere.iterdir()) == []
    assert list((home.run_dir(record.run_id) / "wandb" / "logs").glob("debug-sync.*"))
    assert files_containing(home.root, *KEY_FORMS) == [] and files_containing(user_home, *KEY_FORMS) == []
