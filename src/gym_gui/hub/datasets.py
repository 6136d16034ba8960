"""A dataset of the home pushed to the Hugging Face Hub in the layout Minari's own remote (``hf://ORG``)
uses, so `minari download hf://ORG/NAMESPACE/NAME-vN` fetches it: one dataset repository per namespace,
``namespace_metadata.json`` at its root listing the namespace's datasets, each dataset's directory
(``data/`` and gym_gui's card beside it) under its name."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

from gym_gui.core.errors import ConfigError
from gym_gui.datasets import DatasetStore
from gym_gui.hub.publish import (
    DATASET_STAGES,
    Commit,
    HubError,
    PublishProgress,
    check_repo_id,
    commit,
    first_line,
    require_token,
)

# Minari's own name for it (minari.storage.remotes.huggingface).
NAMESPACE_METADATA = "namespace_metadata.json"


def push_dataset(
    store: DatasetStore,
    name: str,
    repo_id: str,
    private: bool,
    progress: Callable[[PublishProgress], None] | None = None,
) -> Commit:
    """Upload dataset ``name`` to the dataset repository ``repo_id`` (ORG/NAMESPACE, NAMESPACE being the
    dataset's) in one commit, adding it to the namespace's list; returns where it went. ``progress`` is
    told each of :data:`DATASET_STAGES` as it starts.

    Raises:
        ConfigError: no token, the dataset is missing, changed since it was recorded, has no
            namespace, or --repo names another namespace.
        HubError: the Hub refused or could not be reached; nothing was published.
    """
    say = progress or (lambda _progress: None)
    stages = len(DATASET_STAGES)
    say(PublishProgress(0, f"checking {name} against its recorded digests", stages=stages))
    check_repo_id(repo_id)
    require_token("dataset push")
    namespace, slash, rest = name.partition("/")
    if not slash:
        raise ConfigError(
            f"dataset {name!r} has no namespace: Minari's Hub remote keeps a namespace per repository, so "
            "push a dataset named NAMESPACE/NAME-vN (e.g. cartpole/random-v0)"
        )
    organisation, repo_name = repo_id.split("/")
    if repo_name != namespace:
        raise ConfigError(
            f"--repo {repo_id}: Minari's remote keeps dataset {name} in the repository "
            f"{organisation}/{namespace} (its namespace), for `minari download hf://{organisation}/{name}`"
        )
    card = store.verify(name)  # the files as recorded, or refused naming the one that changed
    directory = store.path(name)
    contents = {
        f"{rest}/{path.relative_to(directory).as_posix()}": path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }
    local = store.root / namespace / NAMESPACE_METADATA
    metadata = _remote_namespace(repo_id) or (_json_object(local.read_bytes()) if local.is_file() else {})
    listed = metadata.get("datasets")
    metadata["datasets"] = sorted({*(listed if isinstance(listed, list) else []), name})
    contents[NAMESPACE_METADATA] = json.dumps(metadata, indent=2).encode()
    message = f"gym_gui: dataset {name} ({card.episodes} episodes, {card.steps} steps)"
    say(PublishProgress(1, f"uploading {len(contents)} files to {repo_id}", stages=stages))
    return commit(repo_id, contents, private, message, repo_type="dataset")


def _remote_namespace(repo_id: str) -> dict[str, Any]:
    """The namespace metadata the repository holds already ({} when it holds none, or is not there)."""
    if not HfApi().repo_exists(repo_id, repo_type="dataset"):
        return {}
    try:
        path = hf_hub_download(repo_id, NAMESPACE_METADATA, repo_type="dataset")
    except (EntryNotFoundError, RepositoryNotFoundError):
        return {}
    except Exception as exc:  # the client's HTTP and connection errors alike
        raise HubError(f"not published to {repo_id}: {first_line(exc)}; nothing was uploaded") from None
    with open(path, "rb") as file:
        return _json_object(file.read())


def _json_object(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
