"""Ingest runs on the real broker: exactly once, checkpoint guards, stream == batch."""

from __future__ import annotations

import json
import signal
from datetime import datetime
from functools import partial

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import RejectReason, decode_records
from eventlake.core.settings import Settings
from eventlake.ingest import BatchResult, IngestError, IngestRequest, land_batch, run_ingest
from eventlake.ingest import run as ingest_run
from eventlake.kafka.clients import make_admin
from eventlake.kafka.topics import TopicPatternError, UnknownTopicError, create_topic
from eventlake.ledger.checkpoint import CheckpointMismatchError
from eventlake.ledger.commits import Ledger
from eventlake.ledger.marks import INGEST, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.warehouse.names import EVENTS, REJECTS
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA
from eventlake.warehouse.tables import ensure_tables
from tests.helpers import (
    COORDINATES,
    binary_headers,
    interrupted_spark_job,
    produce_events,
    read_table,
)


def test_every_record_lands_in_exactly_one_table(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name, partitions=2)
    valid, invalid = produce_events(warehouse_settings, topic_name, 60, invalid_every=10)
    summary = run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    events = read_table(spark, warehouse_settings, "events")
    rejects = read_table(spark, warehouse_settings, "rejects")
    assert (summary.events, summary.rejects, summary.records_read) == (valid, invalid, 60)
    assert (events.count(), rejects.count()) == (valid, invalid)
    assert events.select(COORDINATES).intersect(rejects.select(COORDINATES)).count() == 0


def test_second_run_adds_nothing_then_picks_up_new_records(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,))
    produce_events(warehouse_settings, topic_name, 20, prefix="a")
    run_ingest(spark, warehouse_settings, request)
    again = run_ingest(spark, warehouse_settings, request)
    assert again.records_read == 0
    produce_events(warehouse_settings, topic_name, 5, prefix="b")
    run_ingest(spark, warehouse_settings, request)
    events = read_table(spark, warehouse_settings, "events")
    assert events.count() == 25
    assert events.select(COORDINATES).distinct().count() == 25


def test_available_now_and_bounded_batch_give_identical_tables(
    broker: LocalBroker, spark: SparkSession, settings: Settings, topic_name: str, tmp_path: object
) -> None:
    from pathlib import Path

    base = Path(str(tmp_path))
    create_topic(settings, topic_name, partitions=2)
    produce_events(settings, topic_name, 40, invalid_every=7)
    streamed = settings.model_copy(update={"warehouse": base / "streamed"})
    batched = settings.model_copy(update={"warehouse": base / "batched"})
    run_ingest(spark, streamed, IngestRequest(topics=(topic_name,)))
    run_ingest(spark, batched, IngestRequest(topics=(topic_name,), ending_offsets="latest"))
    for name in ("events", "rejects"):
        a = _comparable(read_table(spark, streamed, name))
        b = _comparable(read_table(spark, batched, name))
        assert a.count() > 0
        assert a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0


def _comparable(frame: DataFrame) -> DataFrame:
    """Drop the ingestion time and make map and VARIANT columns comparable (set operations
    refuse both)."""
    frame = frame.drop("ingested_at")
    if "data_json" in frame.columns:
        frame = frame.withColumn("data_json", F.to_json("data_json"))
    if "extensions" in frame.columns:
        frame = frame.withColumn("extensions", F.to_json(F.array_sort(F.map_entries("extensions"))))
    return frame


def test_bounded_replay_of_same_range_adds_nothing(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 10)
    ending = json.dumps({topic_name: {"0": 6}})
    request = IngestRequest(topics=(topic_name,), ending_offsets=ending)
    run_ingest(spark, warehouse_settings, request)
    run_ingest(spark, warehouse_settings, request)
    offsets = sorted(
        r.kafka_offset for r in read_table(spark, warehouse_settings, "events").collect()
    )
    assert offsets == [0, 1, 2, 3, 4, 5]


def test_a_bounded_run_stopped_by_a_signal_commits_nothing_and_the_schedule_lands_all_once(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 10)
    request = IngestRequest(topics=(topic_name,), ending_offsets="latest")
    handler = signal.getsignal(signal.SIGINT)
    with monkeypatch.context() as patched:
        patched.setattr(ingest_run, "land_batch", partial(interrupted_spark_job, spark))
        stopped = run_ingest(spark, warehouse_settings, request)

    assert (stopped.stopped_by, stopped.records_read) == ("SIGINT", 0)
    assert "stopped_by=SIGINT" in stopped.line()
    assert signal.getsignal(signal.SIGINT) is handler
    assert read_marks(warehouse_settings.table_path(EVENTS), INGEST, [topic_name])[1] == {}
    # The next scheduled run (a stream, not the backfill again) lands all, once.
    scheduled = run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    assert (scheduled.stopped_by, scheduled.events) == (None, 10)
    assert run_ingest(spark, warehouse_settings, request).events == 0
    events = read_table(spark, warehouse_settings, "events")
    assert events.count() == events.select(COORDINATES).distinct().count() == 10


def test_ingest_and_republish_each_account_for_their_reads_of_a_bad_record(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    from eventlake.republish import RepublishRequest, run_republish

    create_topic(warehouse_settings, topic_name)
    _, invalid = produce_events(warehouse_settings, topic_name, 6, invalid_every=3)
    target = f"{topic_name}.keyed"
    republish = RepublishRequest(
        source=topic_name, target=target, key_mapper="partitionkey", ending_offsets="latest"
    )
    run_republish(spark, warehouse_settings, republish)
    replay = IngestRequest(topics=(topic_name,), ending_offsets="latest")
    run_ingest(spark, warehouse_settings, replay)
    run_ingest(spark, warehouse_settings, replay)  # a replay adds no reject twice

    rejects = read_table(spark, warehouse_settings, "rejects")
    by_job = {r.rejected_by: r["count"] for r in rejects.groupBy("rejected_by").count().collect()}
    assert by_job == {"ingest": invalid, f"republish:{target}": invalid}


def test_checkpoint_reused_for_another_topic_is_refused(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    other = topic_name + "-other"
    for name in (topic_name, other):
        create_topic(warehouse_settings, name)
    run_ingest(
        spark, warehouse_settings, IngestRequest(topics=(topic_name,), checkpoint_name="shared")
    )
    with pytest.raises(CheckpointMismatchError, match="belongs to source"):
        run_ingest(
            spark, warehouse_settings, IngestRequest(topics=(other,), checkpoint_name="shared")
        )


def test_a_misspelt_topic_is_refused_and_not_created(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    with pytest.raises(UnknownTopicError, match=f"'{topic_name}' does not exist"):
        run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    assert topic_name not in make_admin(warehouse_settings).list_topics(timeout=10).topics
    assert not warehouse_settings.table_path(EVENTS).exists()


def test_a_topic_pattern_java_cannot_compile_is_refused_before_any_table(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings
) -> None:
    with pytest.raises(TopicPatternError, match=r"--topic-pattern '\[' is not a Java regular"):
        run_ingest(spark, warehouse_settings, IngestRequest(topic_pattern="["))

    assert not warehouse_settings.table_path(EVENTS).exists()


def test_resume_from_suggested_offsets_adds_only_new_records(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 8, prefix="x")
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,), checkpoint_name="c1"))
    produce_events(warehouse_settings, topic_name, 3, prefix="y")
    resume = json.dumps({topic_name: {"0": 8}})
    run_ingest(
        spark,
        warehouse_settings,
        IngestRequest(topics=(topic_name,), checkpoint_name="c2", starting_offsets=resume),
    )
    assert read_table(spark, warehouse_settings, "events").count() == 11


def test_a_request_with_offsets_spark_refuses_is_refused_with_the_accepted_forms() -> None:
    with pytest.raises(IngestError, match="--starting-offsets 'garbage' is not 'earliest'"):
        IngestRequest(topics=("orders",), starting_offsets="garbage")


def test_request_needs_topics_or_pattern() -> None:
    with pytest.raises(IngestError, match="--topic"):
        IngestRequest()


def test_a_topic_name_kafka_refuses_is_refused_before_any_spark_or_kafka() -> None:
    with pytest.raises(IngestError, match=r"Invalid --topic 'bad!topic': use 1-249 characters"):
        IngestRequest(topics=("orders", "bad!topic"))


def test_unknown_trigger_is_refused_with_the_accepted_forms() -> None:
    with pytest.raises(IngestError, match="available-now"):
        IngestRequest(topics=("t",), trigger="once")


def _kafka_rows(spark: SparkSession) -> DataFrame:
    """Three Kafka source rows: two valid events and a plain tombstone."""
    rows = [
        (b"k", b"{}", "t", 0, offset, datetime(2024, 1, 1), 0, binary_headers(f"e{offset}"))
        for offset in (0, 1)
    ] + [(b"k", None, "t", 0, 2, datetime(2024, 1, 1), 0, [])]
    return spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA)


ENDS = {("t", 0): 3}


def _land(spark: SparkSession, settings: Settings, records: DataFrame | None = None) -> BatchResult:
    """One batch of the three rows (offsets 0-2 of partition 0 of "t"), by a new process."""
    return land_batch(
        spark,
        _kafka_rows(spark) if records is None else records,
        ledger=Ledger(spark),
        ends=ENDS,
        events_path=str(settings.table_path(EVENTS)),
        rejects_path=str(settings.table_path(REJECTS)),
        note="test",
    )


def _versions(spark: SparkSession, settings: Settings) -> dict[str, int]:
    from deltalake import DeltaTable

    paths = (str(settings.table_path(name)) for name in (EVENTS, REJECTS))
    return {path: DeltaTable(path).version() for path in paths}


def test_a_replayed_batch_is_written_once(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)
    first, replay = _land(spark, warehouse_settings), _land(spark, warehouse_settings)
    assert first.counts == {None: 2, RejectReason.PLAIN_TOMBSTONE.value: 1}
    assert replay.counts == {}
    assert read_table(spark, warehouse_settings, "events").count() == 2
    assert read_table(spark, warehouse_settings, "rejects").count() == 1


def test_a_batch_whose_rejects_were_committed_before_a_crash_writes_only_its_events(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    from eventlake.binding.decode import to_rejects

    ensure_tables(spark, warehouse_settings)
    rejects_path = str(warehouse_settings.table_path(REJECTS))
    # The crash came after the rejects commit of the batch, before its events commit.
    crashed = Ledger(spark)
    crashed.marks(rejects_path, INGEST, ["t"])
    rows = to_rejects(decode_records(_kafka_rows(spark)))
    crashed.commit(rejects_path, crashed.write(rejects_path, rows), INGEST, ENDS, note="crashed")

    _land(spark, warehouse_settings)

    assert read_table(spark, warehouse_settings, "events").count() == 2
    assert read_table(spark, warehouse_settings, "rejects").count() == 1
    events_path = warehouse_settings.table_path(EVENTS)
    assert read_marks(events_path, INGEST, ["t"])[1] == ENDS


def test_a_batch_with_nothing_new_commits_nothing(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)
    _land(spark, warehouse_settings)
    before = _versions(spark, warehouse_settings)

    result = _land(spark, warehouse_settings, _kafka_rows(spark).limit(0))

    assert result.counts == {}
    assert _versions(spark, warehouse_settings) == before


def test_a_landed_batch_names_the_commits_that_hold_its_rows(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)

    result = _land(spark, warehouse_settings)

    assert result.located == _versions(spark, warehouse_settings)
