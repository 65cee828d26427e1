"""eventlake.storage.files: written whole or not at all, with the final permissions from the
start."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eventlake.storage.files import write_atomically


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_secret_is_created_readable_by_its_owner_only(tmp_path: Path) -> None:
    write_atomically(tmp_path / "password", "s3cret\n", mode=0o600)

    assert (tmp_path / "password").read_text() == "s3cret\n"
    assert _mode(tmp_path / "password") == 0o600


def test_a_write_that_fails_leaves_the_old_file_and_no_partial_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "eventlake-identity.json"
    write_atomically(target, '{"source": "topics:a"}\n')

    def crash(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, '{"source": "topics:b"}\n')

    assert target.read_text() == '{"source": "topics:a"}\n'
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
