"""Writing a small file so that readers see the old content or the new, never half of it."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: str | bytes, *, private: bool = False) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``.

    ``private``: the file is created readable by its owner only (mode 0600), from its first byte on
    (a token, a key, a URL that may hold a password). A failed write removes the temporary file and
    raises.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    payload = data.encode() if isinstance(data, str) else data
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
