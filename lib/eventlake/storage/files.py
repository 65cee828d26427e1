"""Files that matter, written whole or not at all, with their final permissions from the
first byte: a temporary file beside the target, fsync, rename, fsync of the folder.

A crash mid-write leaves the old file (or none), never half a JSON document; a secret is
never readable by others, not even for the moment between a write and a chmod.

Example:
    >>> write_atomically(folder / "eventlake-identity.json", text)
    >>> write_atomically(home / "password", secret, mode=0o600)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` in one step, created with permissions ``mode``.

    Example:
        >>> write_atomically(Path("/wh/_checkpoints/c/eventlake-identity.json"), "{}\\n")
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600 and owned by us; it is widened (never narrowed) to
    # mode before any byte is in it.
    handle, partial = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(handle, mode)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
