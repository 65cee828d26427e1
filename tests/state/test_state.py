"""State tables on the real broker: put, update, tombstone, re-create; null keys;
binary vs structured no-data; crash between the events write and the state MERGE."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import EVENT_COLUMNS
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest, state_step
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.ledger.marks import STATE, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.state import apply as state_apply
from eventlake.state import reconcile, retry
from eventlake.state import records as state_records
from eventlake.warehouse import conflicts, delta_log
from eventlake.warehouse.names import state_path
from eventlake.warehouse.schemas import EVENTS_SCHEMA, REJECTS_SCHEMA
from eventlake.warehouse.tables import ensure_tables
from tests.helpers import binary_headers, delta_operations, read_table, structured_value

JSON_CT = [("content-type", b"application/cloudevents+json")]
#: Key a put; key b put, then deleted by a plain tombstone.
_A_KEPT_B_DELETED: list[Record] = [
    (b"a", b"1", binary_headers("a1")),
    (b"b", b"1", binary_headers("b1")),
    (b"b", None, []),
]


def _send(settings: Settings, topic: str, records: list[Record]) -> None:
    produce_all(settings, topic, records)


def _state(spark: SparkSession, settings: Settings, topic: str) -> dict[bytes, str]:
    rows = spark.read.format("delta").load(str(state_path(settings, topic))).collect()
    return {bytes(r.kafka_key): r.id for r in rows}


def _ingest(spark: SparkSession, settings: Settings, topic: str) -> IngestSummary:
    return run_ingest(spark, settings, IngestRequest(topics=(topic,), state=True))


@pytest.fixture
def topic(broker: LocalBroker, warehouse_settings: Settings, topic_name: str) -> Iterator[str]:
    create_topic(warehouse_settings, topic_name, config={"cleanup.policy": "compact"})
    yield topic_name


def test_one_batch_put_update_tombstone_recreate(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _send(
        warehouse_settings,
        topic,
        [
            (b"a", b"1", binary_headers("a1")),
            (b"a", b"2", binary_headers("a2")),
            (b"a", None, binary_headers("a3")),  # binary event with no data: tombstone
            (b"a", b"4", binary_headers("a4")),  # re-created
            (b"b", b"1", binary_headers("b1")),
            (b"b", None, binary_headers("b2")),
        ],
    )
    _ingest(spark, warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"a": "a4"}


def test_across_batches_later_record_wins(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    steps = [
        ([(b"a", b"1", binary_headers("a1"))], {b"a": "a1"}),
        ([(b"a", b"2", binary_headers("a2"))], {b"a": "a2"}),
        ([(b"a", None, binary_headers("a3"))], {}),
        ([(b"a", b"4", binary_headers("a4"))], {b"a": "a4"}),
    ]
    for records, expected in steps:
        _send(warehouse_settings, topic, records)
        _ingest(spark, warehouse_settings, topic)
        assert _state(spark, warehouse_settings, topic) == expected


def test_a_batch_of_only_rejects_lands_them_and_leaves_state_as_it_was(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _send(warehouse_settings, topic, [(b"a", b"1", binary_headers("a1"))])
    _ingest(spark, warehouse_settings, topic)
    # No event in the batch: its events commit adds no file to read back.
    _send(warehouse_settings, topic, [(b"a", b"{", JSON_CT), (b"b", b"x", [("ce_id", b"b")])])

    summary = _ingest(spark, warehouse_settings, topic)

    assert _state(spark, warehouse_settings, topic) == {b"a": "a1"}
    assert summary.rejects == 2


def test_tombstone_for_unknown_key_is_harmless(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _send(warehouse_settings, topic, [(b"ghost", None, []), (b"a", b"1", binary_headers("a1"))])
    _ingest(spark, warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"a": "a1"}


def test_plain_tombstone_deletes_and_structured_no_data_updates(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _send(
        warehouse_settings,
        topic,
        [
            (b"a", b"1", binary_headers("a1")),
            (b"b", b"1", binary_headers("b1")),
            (b"a", None, []),  # plain Kafka tombstone: not a CloudEvent, still a delete
            (b"b", structured_value("b2"), JSON_CT),  # structured, no data: an update
        ],
    )
    _ingest(spark, warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"b": "b2"}


def test_null_key_records_are_counted_not_applied(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # A compacted topic refuses keyless records, so this case needs a delete-policy topic.
    create_topic(warehouse_settings, topic_name)
    topic = topic_name
    _send(
        warehouse_settings,
        topic,
        [(None, b"1", binary_headers("n1")), (b"a", b"1", binary_headers("a1"))],
    )
    summary = _ingest(spark, warehouse_settings, topic)
    assert summary.state_skipped_no_key == 1
    assert _state(spark, warehouse_settings, topic) == {b"a": "a1"}


def _changes(spark: SparkSession, settings: Settings, topic: str) -> DataFrame:
    """The state table's Change Data Feed from its first version."""
    return (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .load(str(state_path(settings, topic)))
    )


def test_change_feed_shows_deletes(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _send(warehouse_settings, topic, [(b"a", b"1", binary_headers("a1"))])
    _ingest(spark, warehouse_settings, topic)
    _send(warehouse_settings, topic, [(b"a", None, binary_headers("a2"))])
    _ingest(spark, warehouse_settings, topic)
    changes = _changes(spark, warehouse_settings, topic).where("_change_type = 'delete'")
    assert [(bytes(r.kafka_key), r.id) for r in changes.collect()] == [(b"a", "a1")]


def test_change_feed_shows_the_first_batchs_keys_as_inserts(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    # The first batch into a new state table is written, not merged: its rows are inserts.
    _send(warehouse_settings, topic, _A_KEPT_B_DELETED)
    _ingest(spark, warehouse_settings, topic)
    changes = _changes(spark, warehouse_settings, topic).collect()
    assert [(bytes(r.kafka_key), r.id, r._change_type) for r in changes] == [(b"a", "a1", "insert")]


def test_a_topics_first_rows_and_its_state_marks_are_one_commit(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    # Written, not merged, into the new table: no crash can land one without the other.
    _send(warehouse_settings, topic, [(b"a", b"1", binary_headers("a1")), (b"b", None, [])])

    summary = _ingest(spark, warehouse_settings, topic)

    path = state_path(warehouse_settings, topic)
    assert delta_operations(path) == ["CREATE TABLE", "WRITE"]
    assert read_marks(path, STATE, [topic])[1] == {(topic, 0): 2}
    assert (summary.state_upserted, summary.state_deleted) == (1, 0)


def test_a_table_found_empty_that_has_rows_by_then_keeps_them(
    spark: SparkSession, warehouse_settings: Settings, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rows another writer added after the table was found empty are not left stale.
    _send(warehouse_settings, topic, [(b"a", b"1", binary_headers("a1"))])
    _ingest(spark, warehouse_settings, topic)
    _send(warehouse_settings, topic, [(b"a", b"2", binary_headers("a2"))])
    monkeypatch.setattr(state_apply, "empty_at", lambda path: 0)  # as read before the first rows

    _ingest(spark, warehouse_settings, topic)

    assert _state(spark, warehouse_settings, topic) == {b"a": "a2"}
    # Not written as first rows beside a1's file: a1's file replaced (state_rewrite).
    path = state_path(warehouse_settings, topic)
    assert delta_operations(path) == ["CREATE TABLE", "WRITE", "WRITE"]
    assert any("remove" in action for action in delta_log.commit_actions(path, 2) or [])


def test_a_reconcile_into_a_new_state_table_writes_its_keys_with_the_marks(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    _send(warehouse_settings, topic, _A_KEPT_B_DELETED)

    report = reconcile.reconcile_state(spark, warehouse_settings, topic)

    path = state_path(warehouse_settings, topic)
    assert (report.keys_on_topic, report.inserted, report.updated, report.deleted) == (1, 1, 0, 0)
    assert _state(spark, warehouse_settings, topic) == {b"a": "a1"}
    assert delta_operations(path)[1:] == ["WRITE"]  # after CREATE TABLE: rows and marks
    assert read_marks(path, STATE, [topic])[1] == {(topic, 0): 3}


def test_crash_between_events_write_and_state_merge_recovers(
    spark: SparkSession, warehouse_settings: Settings, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _send(
        warehouse_settings,
        topic,
        [(b"a", b"1", binary_headers("a1")), (b"b", b"1", binary_headers("b1"))],
    )

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("driver died after the events append")

    monkeypatch.setattr(state_step, "apply_state", crash)
    with pytest.raises(Exception, match="driver died"):
        _ingest(spark, warehouse_settings, topic)
    assert read_table(spark, warehouse_settings, "events").count() == 2
    monkeypatch.undo()
    _ingest(spark, warehouse_settings, topic)
    assert read_table(spark, warehouse_settings, "events").count() == 2
    assert _state(spark, warehouse_settings, topic) == {b"a": "a1", b"b": "b1"}


def test_a_merge_that_loses_every_race_stops_with_a_sentence_and_the_rerun_catches_up(
    spark: SparkSession, warehouse_settings: Settings, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from delta.exceptions import ConcurrentDeleteReadException

    _send(warehouse_settings, topic, [(b"a", b"1", binary_headers("a1"))])
    _ingest(spark, warehouse_settings, topic)  # a table with rows
    _send(warehouse_settings, topic, [(b"a", b"2", binary_headers("a2"))])
    attempts: list[int] = []

    def loses(*args: object, **kwargs: object) -> None:
        # What Delta raises when OPTIMIZE rewrote the files the MERGE read.
        attempts.append(1)
        raise ConcurrentDeleteReadException("This transaction attempted to read files ...")

    monkeypatch.setattr(state_apply, "_merge_latest", loses)
    # The rewrite found the files changed each time too: the MERGE is what retries.
    monkeypatch.setattr(state_apply, "_rewrite_with_marks", lambda *args, **kwargs: None)
    with pytest.raises(retry.StateConflictError) as refused:
        _ingest(spark, warehouse_settings, topic)
    assert len(attempts) == conflicts.CONFLICT_ATTEMPTS
    assert str(refused.value).startswith(
        f"state {topic}: state/{topic} kept changing under the MERGE "
        "(ConcurrentDeleteReadException, 3 attempts); nothing of it was committed: the events "
        "landed; run ingest again"
    )
    monkeypatch.undo()
    _ingest(spark, warehouse_settings, topic)
    assert read_table(spark, warehouse_settings, "events").count() == 2
    assert _state(spark, warehouse_settings, topic) == {b"a": "a2"}


def test_replayed_batch_does_not_merge_twice(
    spark: SparkSession, warehouse_settings: Settings, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from delta.tables import DeltaTable

    _send(warehouse_settings, topic, [(b"a", b"1", binary_headers("a1"))])
    original = IngestSummary.add_batch

    def crash_after_writes(self: IngestSummary, counts: dict[str | None, int]) -> None:
        raise RuntimeError("driver died after the state MERGE, before the checkpoint commit")

    monkeypatch.setattr(IngestSummary, "add_batch", crash_after_writes)
    with pytest.raises(Exception, match="driver died"):
        _ingest(spark, warehouse_settings, topic)
    path = str(state_path(warehouse_settings, topic))
    versions_before = DeltaTable.forPath(spark, path).history().count()
    monkeypatch.setattr(IngestSummary, "add_batch", original)
    _ingest(spark, warehouse_settings, topic)
    assert DeltaTable.forPath(spark, path).history().count() == versions_before
    assert _state(spark, warehouse_settings, topic) == {b"a": "a1"}


@pytest.mark.parametrize("broadcast", [True, False], ids=["winners-broadcast", "shuffled"])
def test_latest_per_key_keeps_the_last_record_by_partition_then_offset(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, broadcast: bool
) -> None:
    if not broadcast:
        monkeypatch.setattr(state_records, "BROADCAST_WINNERS_MAX", 0)
    # (topic, key, partition, offset, id): key a's last record is in partition 1 (a higher
    # partition wins over a higher offset), the same key on another topic is its own,
    # keyless records are dropped.
    rows = [
        ("t", b"a", 0, 9, "a-p0-o9"),
        ("t", b"a", 1, 2, "a-p1-o2"),
        ("t", b"a", 1, 1, "a-p1-o1"),
        ("t", b"b", 0, 3, "b-o3"),
        ("t", b"b", 0, 5, "b-o5"),
        ("u", b"a", 0, 1, "u-a"),
        ("t", None, 0, 7, "keyless"),
    ]
    frame = spark.createDataFrame(
        rows,
        "kafka_topic string, kafka_key binary, kafka_partition int, kafka_offset long, id string",
    )
    others = [c for c in EVENT_COLUMNS if c not in frame.columns]
    records = frame.select(
        *frame.columns, *[F.lit(None).alias(c) for c in others], F.lit(False).alias("_tombstone")
    )
    latest = state_records.latest_per_key(records).collect()
    assert sorted(r.id for r in latest) == ["a-p1-o2", "b-o5", "u-a"]
    assert latest[0].asDict().keys() == {*EVENT_COLUMNS, "_tombstone"}


def test_latest_per_key_is_exact_for_coordinates_past_what_one_long_packs(
    spark: SparkSession,
) -> None:
    # Offsets of 2^40 and more and partitions of 2^23 and more do not fit the packed
    # aggregate: the exact one decides. Packed, a's offset 2^41 would read as partition 2.
    big = 1 << 40
    rows = [
        ("t", b"a", 0, 2 * big, "a-p0"),
        ("t", b"a", 1, 1, "a-p1"),
        ("t", b"b", 0, big + 5, "b-o5"),
        ("t", b"b", 0, big + 3, "b-o3"),
        ("t", b"c", 1 << 23, 1, "c-high"),
        ("t", b"c", 1, 9, "c-low"),
    ]
    frame = spark.createDataFrame(
        rows,
        "kafka_topic string, kafka_key binary, kafka_partition int, kafka_offset long, id string",
    )
    others = [c for c in EVENT_COLUMNS if c not in frame.columns]
    records = frame.select(
        *frame.columns, *[F.lit(None).alias(c) for c in others], F.lit(False).alias("_tombstone")
    )
    assert sorted(r.id for r in state_records.latest_per_key(records).collect()) == [
        "a-p1",
        "b-o5",
        "c-high",
    ]


def test_state_is_right_when_the_batch_cannot_be_read_back_from_the_tables(
    spark: SparkSession, warehouse_settings: Settings, topic: str
) -> None:
    # Column mapping renames the events files' columns: the batch is decoded again instead.
    ensure_tables(spark, warehouse_settings)
    events = warehouse_settings.table_path("events")
    spark.sql(
        f"ALTER TABLE delta.`{events}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    _send(
        warehouse_settings,
        topic,
        [(b"a", b"1", binary_headers("a1")), (b"b", b"1", binary_headers("b1")), (b"a", None, [])],
    )
    _ingest(spark, warehouse_settings, topic)
    assert _state(spark, warehouse_settings, topic) == {b"b": "b1"}


def test_records_from_tables_are_the_events_and_the_plain_tombstones(
    spark: SparkSession,
) -> None:
    position = {"kafka_topic": "t", "kafka_partition": 0, "kafka_timestamp": None}
    events = spark.createDataFrame(
        [{**position, "kafka_offset": 0, "kafka_key": b"a", "id": "a1"}], EVENTS_SCHEMA
    )
    rejects = spark.createDataFrame(
        [
            {**position, "kafka_offset": 1, "kafka_key": b"a", "reason": "plain_tombstone"},
            {**position, "kafka_offset": 2, "kafka_key": b"b", "reason": "malformed_json"},
        ],
        REJECTS_SCHEMA,
    )

    rows = state_records.records_from_tables(events, rejects).collect()

    assert [(r.kafka_offset, r.id, r.reject_reason) for r in rows] == [
        (0, "a1", None),
        (1, None, "plain_tombstone"),
    ]
