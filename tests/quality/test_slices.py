"""The data files of new rows, read from Delta commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from eventlake.quality.slices import new_data_files, table_as_of


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


def test_table_as_of_is_the_table_at_that_version(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "t"
    for start in (0, 10, 20):
        spark.range(start, start + 10).write.format("delta").mode("append").save(str(path))
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 5")  # rewrites the first file

    assert sorted(r["id"] for r in table_as_of(spark, path, 1).collect()) == list(range(20))
    assert sorted(r["id"] for r in table_as_of(spark, path, 3).collect()) == list(range(5, 30))


def test_table_as_of_leaves_out_rows_a_deletion_vector_removed(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    spark.range(10).write.format("delta").option("delta.enableDeletionVectors", "true").save(
        str(path)
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")

    assert sorted(r["id"] for r in table_as_of(spark, path, 1).collect()) == [
        0,
        1,
        2,
        4,
        5,
        6,
        7,
        8,
        9,
    ]


def test_a_table_delta_rs_cannot_read_is_read_through_delta(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deltalake
    from deltalake.exceptions import DeltaProtocolError

    path = tmp_path / "t"
    spark.range(10).write.format("delta").save(str(path))

    def refuses(*_args: object, **_kwargs: object) -> None:
        raise DeltaProtocolError("unsupported reader features: {someFeature}")

    monkeypatch.setattr(deltalake, "DeltaTable", refuses)

    assert sorted(r["id"] for r in table_as_of(spark, path, 0).collect()) == list(range(10))
