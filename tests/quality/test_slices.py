"""The data files of new rows, read from Delta commits."""

from __future__ import annotations

from typing import Any

from eventlake.quality.slices import new_data_files


def test_new_data_files_keeps_appends_and_skips_rewrites() -> None:
    commits: list[list[dict[str, Any]]] = [
        [{"add": {"path": "a", "dataChange": True}}, {"commitInfo": {}}],
        [  # OPTIMIZE: rows move, nothing new
            {"remove": {"path": "a", "dataChange": False}},
            {"add": {"path": "b", "dataChange": False}},
        ],
        [{"add": {"path": "c", "dataChange": True}}],
    ]
    assert new_data_files(commits) == ["a", "c"]


def test_new_data_files_drops_deleted_files_but_not_deletion_vector_readds() -> None:
    commits: list[list[dict[str, Any]]] = [
        [{"add": {"path": "a", "dataChange": True}}, {"add": {"path": "b", "dataChange": True}}],
        [
            {"remove": {"path": "a", "dataChange": True}},
            {"remove": {"path": "b", "dataChange": True}},
            {"add": {"path": "b", "dataChange": True, "deletionVector": {"cardinality": 1}}},
        ],
    ]
    assert new_data_files(commits) == ["b"]
