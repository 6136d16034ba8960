"""The loopback Hub answers the real ``huggingface_hub`` client as the Hub does for the calls gym_gui makes."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

from tests.hub_server import FakeHub

TOKEN = "hf_loopback_token_for_tests"


def test_the_real_client_creates_commits_lists_and_downloads(tmp_path: Path) -> None:
    with FakeHub(TOKEN) as hub:
        api = HfApi(endpoint=hub.url, token=TOKEN)
        url = api.create_repo("gg-team/cartpole-ppo", private=True)
        assert url.repo_id == "gg-team/cartpole-ppo"
        api.create_repo("gg-team/cartpole-ppo", exist_ok=True)  # a second time: the 409 is taken
        card = "---\nlibrary_name: gym-gui\ntags:\n- reinforcement-learning\n---\n# A model\n"
        info = api.create_commit(
            "gg-team/cartpole-ppo",
            [
                CommitOperationAdd("README.md", card.encode()),
                CommitOperationAdd("model/agent.cleanrl_model", b"\x00\x01weights" * 100),
            ],
            commit_message="Publish",
        )
        repo = hub.repo("gg-team/cartpole-ppo")
        assert repo is not None and repo.private and info.oid == repo.head
        assert sorted(api.list_repo_files("gg-team/cartpole-ppo")) == [
            "README.md",
            "model/agent.cleanrl_model",
        ]
        path = hf_hub_download(
            "gg-team/cartpole-ppo",
            "model/agent.cleanrl_model",
            endpoint=hub.url,
            token=TOKEN,
            local_dir=tmp_path / "download",
        )
        assert Path(path).read_bytes() == b"\x00\x01weights" * 100
        # Private: invisible without the token.
        with pytest.raises(RepositoryNotFoundError):
            HfApi(endpoint=hub.url, token=False).list_repo_files("gg-team/cartpole-ppo")
        api.delete_repo("gg-team/cartpole-ppo")
        assert hub.repo("gg-team/cartpole-ppo") is None
        assert hub.unknown == [] and hub.tokens_seen == {TOKEN}


def test_a_failed_commit_changes_nothing() -> None:
    with FakeHub(TOKEN, fail={"commit": 500}) as hub:
        api = HfApi(endpoint=hub.url, token=TOKEN)
        api.create_repo("gg-team/broken")
        with pytest.raises(HfHubHTTPError):
            api.create_commit("gg-team/broken", [CommitOperationAdd("a.txt", b"a")], commit_message="x")
        repo = hub.repo("gg-team/broken")
        assert repo is not None and repo.files == {} and hub.refused == [("commit", 500)]
