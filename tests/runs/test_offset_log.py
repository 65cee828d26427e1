"""eventlake.runs.offset_log: the one reader of Spark's offset log, and its version check."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlake.runs.offset_log import OffsetLogError, last_committed_batch, logged_batch

METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1764050000000,"conf":{}}'


def _offsets(folder: Path, batch: int, *lines: str) -> Path:
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    (folder / "offsets" / str(batch)).write_text("\n".join(lines))
    return folder


def test_a_batch_gives_its_end_offsets_and_planning_time(tmp_path: Path) -> None:
    folder = _offsets(tmp_path, 3, "v1", METADATA, '{"orders":{"1":7,"0":12}}')

    planned = logged_batch(folder, 3)

    assert planned.ends == {("orders", 0): 12, ("orders", 1): 7}
    assert planned.logged_at_ms == 1764050000000


def test_an_offset_log_version_not_checked_is_refused_by_name(tmp_path: Path) -> None:
    folder = _offsets(tmp_path, 0, "v2", METADATA, '{"orders":{"0":1}}')

    with pytest.raises(OffsetLogError, match="'v2'"):
        logged_batch(folder, 0)


def test_the_last_committed_batch_is_the_highest_in_commits(tmp_path: Path) -> None:
    assert last_committed_batch(tmp_path) is None
    (tmp_path / "commits").mkdir()
    for name in ("0", "1", "10", ".10.crc"):
        (tmp_path / "commits" / name).write_text("v1\n{}")

    assert last_committed_batch(tmp_path) == 10
