"""A model published on the Hugging Face Hub, fetched for import: gym_gui's own cards and CleanRL's own
uploads (a ``.cleanrl_model`` with its card), read as data; only the card and the model file are
downloaded (never a script of the repository), into huggingface_hub's own cache."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.repocard import metadata_load

from gym_gui.core.errors import ConfigError
from gym_gui.hub.publish import DESCRIPTION, LIBRARY, README, HubError, check_repo_id, first_line
from gym_gui.storage.run_dir import file_sha256

SCHEME = "hf://"
CLEANRL_SUFFIX = ".cleanrl_model"
# gym_gui.json is a few kilobytes; a larger one is not one of ours.
_MAX_DESCRIPTION_BYTES = 1 << 20
_REVISION = re.compile(r"[A-Za-z0-9._/-]{1,128}")


@dataclass(frozen=True)
class PublishedModel:
    """A model file downloaded from the Hub and what its card says it is."""

    url: str  # hf://ORG/NAME@COMMIT
    file: Path
    worker: str
    algorithm: str
    env_id: str


def is_hub_url(text: str) -> bool:
    return text.startswith(SCHEME)


def parse_url(text: str) -> tuple[str, str | None]:
    """``hf://ORG/NAME[@REVISION]`` → (repo id, revision or None).

    Raises:
        ConfigError: naming the URL and what is wrong.
    """
    repo_id, _, revision = text.removeprefix(SCHEME).partition("@")
    try:
        check_repo_id(repo_id)
    except ConfigError:
        raise ConfigError(f"{text!r}: give a Hub model as hf://ORG/NAME[@REVISION]") from None
    if revision and not _REVISION.fullmatch(revision):
        raise ConfigError(f"{text!r}: {revision!r} is not a revision")
    return repo_id, revision or None


def fetch_model(text: str, worker: str | None, algorithm: str | None, env_id: str | None) -> PublishedModel:
    """Download the model ``text`` (``hf://ORG/NAME[@REVISION]``) names and read what it is from its
    card; ``worker``, ``algorithm`` and ``env_id``, where given, must agree with the card.

    Raises:
        ConfigError: the repository holds neither card, the card contradicts itself or what was
            given, or the file is not the one the card recorded.
        HubError: the Hub could not be reached or refused (one line).
    """
    repo_id, revision = parse_url(text)
    api = HfApi()  # endpoint: HF_ENDPOINT; token: HF_TOKEN or the stored login (a private repository)
    try:
        info = api.model_info(repo_id, revision=revision, files_metadata=False)
    except Exception as exc:  # the client's HTTP and connection errors alike
        raise HubError(f"{text}: {first_line(exc)}") from None
    commit = info.sha or revision or "main"
    names = {sibling.rfilename for sibling in info.siblings or []}
    url = f"{SCHEME}{repo_id}@{commit}"

    def download(name: str) -> Path:
        try:
            return Path(hf_hub_download(repo_id, name, revision=commit))
        except Exception as exc:
            raise HubError(f"{text}: {name}: {first_line(exc)}") from None

    card = _metadata(download(README)) if README in names else {}
    if DESCRIPTION in names:
        found = _gym_gui_model(text, download(DESCRIPTION), card, names)
    else:
        found = _cleanrl_model(text, card, names, env_id)
    given = {"worker": ("--worker", worker), "algorithm": ("--algo", algorithm), "env": ("--env", env_id)}
    for field, (option, value) in given.items():
        if value is not None and value != found[field]:
            raise ConfigError(f"{option} {value}: the card of {text} says {found[field]}")
    file = download(found["path"])
    recorded = found.get("sha256")
    if recorded and file_sha256(file) != recorded:
        raise ConfigError(
            f"{text}: {found['path']} is not the file its card recorded (sha256 {recorded[:12]}…)"
        )
    return PublishedModel(url, file, found["worker"], found["algorithm"], found["env"])


def _metadata(readme: Path) -> dict[str, Any]:
    try:
        data = metadata_load(readme)
    except Exception as exc:  # YAML the card's author wrote
        raise ConfigError(f"{readme.name}: its metadata header is not YAML: {first_line(exc)}") from None
    return data if isinstance(data, dict) else {}


def _gym_gui_model(text: str, path: Path, card: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """What a card gym_gui published says: its gym_gui.json, checked against the card's header."""
    where = f"{text}: {DESCRIPTION}"
    if path.stat().st_size > _MAX_DESCRIPTION_BYTES:
        raise ConfigError(f"{where} is larger than gym_gui writes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise ConfigError(f"{where} is not JSON") from None
    model = data.get("model") if isinstance(data, dict) else None
    fields = {key: data.get(key) for key in ("worker", "algorithm", "env_id")} if model else {}
    if not isinstance(model, dict) or not all(isinstance(value, str) and value for value in fields.values()):
        raise ConfigError(f"{where} does not say worker, algorithm, env_id and model")
    name = model.get("path")
    if not isinstance(name, str) or name not in names or ".." in PurePosixPath(name).parts:
        raise ConfigError(f"{where} names a model file the repository does not hold: {name!r}")
    if card.get("library_name") == LIBRARY:
        for key, value in fields.items():
            if card.get(key) != value:
                raise ConfigError(
                    f"{text}: the card says {key} {card.get(key)!r}, {DESCRIPTION} says {value!r}"
                )
    sha256 = model.get("sha256")
    return {
        "worker": fields["worker"],
        "algorithm": fields["algorithm"],
        "env": fields["env_id"],
        "path": name,
        "sha256": sha256 if isinstance(sha256, str) else None,
    }


def _cleanrl_model(text: str, card: dict[str, Any], names: set[str], given_env: str | None) -> dict[str, Any]:
    """What one of CleanRL's own uploads is: its ``{exp_name}.cleanrl_model`` (the algorithm is the
    script's name) and the env its card's evaluation names (``model-index``, else its first tag)."""
    models = sorted(name for name in names if name.endswith(CLEANRL_SUFFIX) and "/" not in name)
    if not models:
        raise ConfigError(
            f"{text}: neither a gym_gui card ({DESCRIPTION}) nor a CleanRL model (*{CLEANRL_SUFFIX}) in it"
        )
    if len(models) > 1:
        raise ConfigError(
            f"{text}: {len(models)} CleanRL models in it ({', '.join(models)}); give one repository a model"
        )
    env_id = _card_env(card) or given_env
    if env_id is None:
        raise ConfigError(f"{text}: its card names no environment (model-index dataset or tags); give --env")
    return {
        "worker": "cleanrl",
        "algorithm": models[0].removesuffix(CLEANRL_SUFFIX),
        "env": env_id,
        "path": models[0],
        "sha256": None,
    }


def _card_env(card: dict[str, Any]) -> str | None:
    for entry in card.get("model-index") or []:
        for result in (entry or {}).get("results") or [] if isinstance(entry, dict) else []:
            dataset = result.get("dataset") if isinstance(result, dict) else None
            name = dataset.get("name") or dataset.get("type") if isinstance(dataset, dict) else None
            if isinstance(name, str) and name:
                return name
    tags = card.get("tags")
    if isinstance(tags, list) and tags and isinstance(tags[0], str):
        return tags[0]
    return None
