"""A later state batch applied by rewriting the files it changes (eventlake.state.rewrite),
on the real broker and Delta: the rows, the Change Data Feed, the marks in one commit,
and the MERGE when the table's files change under it or cannot be read as they are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.ledger.marks import STATE, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.state import rewrite as state_rewrite
from eventlake.warehouse.delta_log import commit_actions
from eventlake.warehouse.names import state_path
from tests.helpers import binary_headers, delta_operations

#: The first batch: a, b and d put.
_FIRST: list[Record] = [
    (b"a", b"1", binary_headers("a1")),
    (b"b", b"1", binary_headers("b1")),
    (b"d", b"1", binary_headers("d1")),
]
#: The next: a updated, b deleted (a binary event with no data), c new, d untouched.
_NEXT: list[Record] = [
    (b"a", b"2", binary_headers("a2")),
    (b"b", None, binary_headers("b2")),
    (b"c", b"1", binary_headers("c1")),
]


@pytest.fixture
def topic(broker: LocalBroker, warehouse_settings: Settings, topic_name: str) -> Iterator[str]:
    create_topic(warehouse_settings, topic_name, config={"cleanup.policy": "compact"})
    yield topic_name


def _ingest(spark: SparkSession, settings: Settings, topic: str) -> IngestSummary:
    return run_ingest(spark, settings, IngestRequest(topics=(topic,), state=True))


def _state(spark: SparkSession, settings: Settings, topic: str) -> dict[bytes, str]:
    rows = spark.read.format("delta").load(str(state_path(settings, topic))).collect()
    return {bytes(r.kafka_key): r.id for r in rows}


def _two_batches(
    spark: SparkSession,
    settings: Settings,
    topic: str,
    between: Callable[[str], object] | None = None,
) -> IngestSummary:
    """Ingest _FIRST, then _NEXT; ``between`` gets the state table's path in between."""
    produce_all(settings, topic, _FIRST)
    _ingest(spark, settings, topic)
    if between is not None:
        between(str(state_path(settings, topic)))
    produce_all(settings, topic, _NEXT)
    return _ingest(spark, settings, topic)


def test_a_later_batch_replaces_the_files_it_changes_in_the_commit_of_its_marks(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    summary = _two_batches(spark, warehouse_settings, topic)

    path = state_path(warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"a": "a2", b"c": "c1", b"d": "d1"}
    assert delta_operations(path) == ["CREATE TABLE", "WRITE", "WRITE"]
    actions = commit_actions(path, 2) or []
    assert [a["remove"]["path"] for a in actions if "remove" in a] == [
        a["add"]["path"] for a in commit_actions(path, 1) or [] if "add" in a
    ]
    assert read_marks(path, STATE, [topic])[1] == {(topic, 0): 6}
    assert (summary.state_upserted, summary.state_deleted) == (2, 1)


def test_a_later_batchs_change_feed_is_what_delta_merge_writes(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _two_batches(spark, warehouse_settings, topic)

    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 2)
        .load(str(state_path(warehouse_settings, topic)))
        .collect()
    )
    assert sorted((bytes(r.kafka_key), r.id, r._change_type) for r in changes) == [
        (b"a", "a1", "update_preimage"),
        (b"a", "a2", "update_postimage"),
        (b"b", "b1", "delete"),
        (b"c", "c1", "insert"),
    ]


def test_files_added_under_a_rewrite_make_it_commit_nothing_and_the_merge_applies_the_batch(
    spark: SparkSession,
    warehouse_settings: Settings,
    topic: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    produce_all(warehouse_settings, topic, _FIRST)
    _ingest(spark, warehouse_settings, topic)
    path = str(state_path(warehouse_settings, topic))
    original = state_rewrite.rewrite_state

    def another_writer_appends_first(*args: Any, **kwargs: Any) -> Any:
        written = original(*args, **kwargs)
        # A row no batch holds, appended by another writer before the rewrite commits.
        spark.read.format("delta").load(path).where("kafka_key = X'64'").withColumn(
            "kafka_key", F.lit(b"x")
        ).write.format("delta").mode("append").save(path)
        return written

    monkeypatch.setattr(state_rewrite, "rewrite_state", another_writer_appends_first)
    produce_all(warehouse_settings, topic, _NEXT)

    summary = _ingest(spark, warehouse_settings, topic)

    assert _state(spark, warehouse_settings, topic) == {
        b"a": "a2",
        b"c": "c1",
        b"d": "d1",
        b"x": "d1",
    }
    assert delta_operations(state_path(warehouse_settings, topic))[-3:] == [
        "WRITE",
        "MERGE",
        "WRITE",
    ]
    assert (summary.state_upserted, summary.state_deleted) == (2, 1)
    assert f"state {topic}: the table's files changed under the batch's rewrite" in (
        capsys.readouterr().out
    )


def test_a_state_table_with_deletion_vectors_is_merged(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    # Its files may hold rows the table no longer has: not read as they are.
    _two_batches(
        spark,
        warehouse_settings,
        topic,
        lambda path: spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
        ),
    )

    path = state_path(warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"a": "a2", b"c": "c1", b"d": "d1"}
    assert delta_operations(path)[-2:] == ["MERGE", "WRITE"]


def test_a_state_table_with_a_column_of_its_users_is_merged_and_keeps_it(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    # A rewrite writes the columns eventlake knows: the MERGE leaves the others be.
    def add_a_note(path: str) -> None:
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (note STRING)")
        spark.sql(f"UPDATE delta.`{path}` SET note = 'mine' WHERE kafka_key = X'64'")

    _two_batches(spark, warehouse_settings, topic, add_a_note)

    path = state_path(warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"a": "a2", b"c": "c1", b"d": "d1"}
    notes = spark.read.format("delta").load(str(path)).where("note IS NOT NULL").collect()
    assert [(bytes(r.kafka_key), r.note) for r in notes] == [(b"d", "mine")]
    assert delta_operations(path)[-2:] == ["MERGE", "WRITE"]


@pytest.mark.parametrize(
    "name",
    [
        "file:///wh/state/a%20b/part-0.parquet",
        "file:/wh/state/a%20b/part-0.parquet",
        "/wh/state/a b/part-0.parquet",
    ],
)
def test_a_files_name_is_the_same_as_spark_reports_it_and_as_the_log_gives_it(name: str) -> None:
    assert state_rewrite._file_name(name) == "/wh/state/a b/part-0.parquet"
