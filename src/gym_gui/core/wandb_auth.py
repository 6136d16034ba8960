"""A user's W&B API key, found where W&B's own tools keep it: the one owner of that lookup.

Every place that hands a key to a process (a run's worker, ``wandb sync``) asks :func:`api_key`.
The key is read, passed on in memory and never written by gym_gui.
"""

from __future__ import annotations

import logging
import netrc
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

API_KEY_VAR = "WANDB_API_KEY"
BASE_URL_VAR = "WANDB_BASE_URL"
NETRC_VAR = "NETRC"
# W&B's cloud: `wandb login` stores its key under one of these netrc machines (wandb 0.31 under its
# default server's, api.forge.coreweave.com; older versions under api.wandb.ai), and wandb reads
# either for a cloud address.
CLOUD_MACHINES = ("api.wandb.ai", "api.forge.coreweave.com")
_CLOUD_HOSTNAMES = frozenset({*CLOUD_MACHINES, "forge.coreweave.com"})


def netrc_path(environ: Mapping[str, str] | None = None) -> Path:
    """The netrc file W&B reads: ``NETRC`` when set, else ``~/.netrc``."""
    env = os.environ if environ is None else environ
    named = env.get(NETRC_VAR)
    if named:
        return Path(named).expanduser()
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".netrc"


def netrc_machines(base_url: str | None) -> tuple[str, ...]:
    """The netrc machine names that hold the key for the W&B server at ``base_url`` (None: W&B's
    cloud), as wandb looks them up: the address's ``host[:port]``, and the cloud's for a cloud address."""
    if not base_url:
        return CLOUD_MACHINES
    parts = urlsplit(base_url)
    machines = [parts.netloc] if parts.netloc else []
    if parts.hostname in _CLOUD_HOSTNAMES:
        machines += [m for m in CLOUD_MACHINES if m not in machines]
    return tuple(machines)


def api_key(base_url: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The W&B API key for the server at ``base_url`` (None: W&B's cloud), or None when there is none.

    As wandb finds it: ``WANDB_API_KEY`` when set, else the password of the server's entry in the
    netrc file (:func:`netrc_path`), which ``wandb login`` writes. A netrc file that cannot be read
    or parsed counts as no key (and is logged), as it does for wandb.
    """
    env = os.environ if environ is None else environ
    key = env.get(API_KEY_VAR, "").strip()
    if key:
        return key
    path = netrc_path(env)
    try:
        entries = netrc.netrc(str(path))
    except FileNotFoundError:
        return None
    except (netrc.NetrcParseError, OSError) as exc:
        log.warning("the netrc file %s could not be read: %s", path, exc)
        return None
    for machine in netrc_machines(base_url):
        found = entries.authenticators(machine)
        if found and found[2]:
            return found[2]
    return None


def key_sources(base_url: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Where :func:`api_key` looks, for messages: ``WANDB_API_KEY or a `wandb login` (machine … in …)``."""
    machine = netrc_machines(base_url)[:1] or ("?",)
    return f"{API_KEY_VAR} or a `wandb login` (machine {machine[0]} in {netrc_path(environ)})"


def wandb_environment(
    base_url: str | None, environ: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """``environ`` (default: this process's environment) with the W&B server at ``base_url`` (None:
    the one ``WANDB_BASE_URL`` names, else W&B's cloud) and its key set: what a ``wandb`` command
    (``wandb sync``) runs with. None when no key is found."""
    env = dict(os.environ if environ is None else environ)
    server = base_url or env.get(BASE_URL_VAR) or None
    key = api_key(server, env)
    if key is None:
        return None
    env[API_KEY_VAR] = key
    if server:
        env[BASE_URL_VAR] = server
    return env
