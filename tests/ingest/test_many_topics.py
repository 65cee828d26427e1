"""A run of several topics in one Spark application, on the real broker: every topic
lands exactly once with counts of its own, a topic Kafka does not have is refused
alone while the others land, and runs of several beside a stream of one of their topics
and backfills of them all keep every record once."""

from __future__ import annotations

import threading
import time

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import make_admin
from eventlake.kafka.topics import create_topic
from eventlake.ledger.checkpoint import LOCK_SUFFIX
from eventlake.ledger.marks import INGEST, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.status.report import warehouse_status
from eventlake.storage.store import names
from eventlake.warehouse.names import EVENTS, REJECTS
from tests.helpers import landed_records, produce_events, read_table, typed_once


def _per_topic(spark: SparkSession, settings: Settings, table: str) -> dict[str, int]:
    rows = read_table(spark, settings, table).groupBy("kafka_topic").count().collect()
    return {row["kafka_topic"]: row["count"] for row in rows}


@pytest.mark.parametrize("ending_offsets", [None, "latest"], ids=["available-now", "bounded"])
def test_each_topic_of_a_run_lands_once_counted_alone_and_a_missing_one_is_refused_alone(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    ending_offsets: str | None,
) -> None:
    first, second, missing = f"{topic_name}-a", f"{topic_name}-b", f"{topic_name}-typo"
    create_topic(warehouse_settings, first, partitions=2)
    create_topic(warehouse_settings, second)
    produce_events(warehouse_settings, first, 20, invalid_every=10)  # 18 events, 2 rejects
    produce_events(warehouse_settings, second, 7, prefix="b")
    request = IngestRequest(topics=(first, missing, second), ending_offsets=ending_offsets)

    summary = run_ingest(spark, warehouse_settings, request)

    assert summary.by_topic == {first: [18, 2], second: [7, 0]}
    assert list(summary.refused) == [missing]
    assert f"Topic '{missing}' does not exist" in summary.refused[missing]
    assert missing not in make_admin(warehouse_settings).list_topics(timeout=10).topics
    assert _per_topic(spark, warehouse_settings, EVENTS) == {first: 18, second: 7}
    assert _per_topic(spark, warehouse_settings, REJECTS) == {first: 2}
    again = run_ingest(spark, warehouse_settings, request)
    assert again.by_topic == {first: [0, 0], second: [0, 0]}
    assert read_table(spark, warehouse_settings, EVENTS).count() == 25


def test_a_run_of_several_after_runs_of_one_topic_each_lands_only_what_they_did_not(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # The DAG's runs before this one landed each topic on a checkpoint of its own; the run
    # of both starts a new checkpoint, where the ledger stands.
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    for topic in (first, second):
        create_topic(warehouse_settings, topic)
        produce_events(warehouse_settings, topic, 6, prefix="old")
        run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic,)))
    produce_events(warehouse_settings, first, 4, prefix="new")

    summary = run_ingest(spark, warehouse_settings, IngestRequest(topics=(first, second)))

    assert summary.by_topic == {first: [4, 0], second: [0, 0]}
    events = read_table(spark, warehouse_settings, EVENTS)
    assert _per_topic(spark, warehouse_settings, EVENTS) == {first: 10, second: 6}
    assert events.select("kafka_topic", "kafka_partition", "kafka_offset").distinct().count() == 16


def test_runs_of_several_beside_a_stream_of_one_of_them_and_backfills_land_each_record_once(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # The scheduled run of both topics, a backfill of both and a stream of the first share
    # its leases and its typed tables (stepped after every batch of the stream).
    settings = warehouse_settings.model_copy(
        update={"typed_tables": True, "typed_interval_seconds": 0.0}
    )
    streamed, other = f"{topic_name}-s", f"{topic_name}-o"
    create_topic(settings, streamed, partitions=2)
    create_topic(settings, other)
    stream = IngestRequest(
        topics=(streamed,), trigger="processing-time=1 second", checkpoint_name="stream"
    )
    runner = threading.Thread(target=run_ingest, args=(spark, settings, stream))
    runner.start()
    try:
        for round_ in range(3):
            produce_events(settings, streamed, 50, prefix=f"s{round_}", invalid_every=10)
            produce_events(settings, other, 30, prefix=f"o{round_}")
            run_ingest(spark, settings, IngestRequest(topics=(streamed, other)))
            run_ingest(
                spark, settings, IngestRequest(topics=(streamed, other), ending_offsets="latest")
            )
        deadline = time.monotonic() + 60
        while sum(read_marks(settings.table_path(EVENTS), INGEST, [streamed])[1].values()) < 150:
            assert time.monotonic() < deadline, "the stream did not catch up in 60 s"
            time.sleep(0.5)
    finally:
        for query in spark.streams.active:
            query.stop()
        runner.join(timeout=60)
    assert landed_records(spark, settings) == (240, 240)
    assert _per_topic(spark, settings, EVENTS) == {streamed: 135, other: 90}
    assert _per_topic(spark, settings, REJECTS) == {streamed: 15}
    assert typed_once(spark, settings) == {"t.test": 225}


def test_a_run_of_several_topics_leaves_no_checkpoint_and_the_next_lands_only_what_is_new(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # The scheduled runs of the topics due: a set that changes from run to run.
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    for topic in (first, second):
        create_topic(warehouse_settings, topic)
        produce_events(warehouse_settings, topic, 5, prefix=topic[-1])
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(first, second)))
    produce_events(warehouse_settings, first, 3, prefix="again")

    summary = run_ingest(spark, warehouse_settings, IngestRequest(topics=(first, second)))

    assert summary.by_topic == {first: [3, 0], second: [0, 0]}
    assert landed_records(spark, warehouse_settings) == (13, 13)
    # Only the lock beside it stays: a lock taken by two processes at once would need it.
    assert [n for n in names(warehouse_settings.checkpoints) if not n.endswith(LOCK_SUFFIX)] == []
    (entry,) = warehouse_status(warehouse_settings).checkpoints
    assert entry.without_checkpoint and entry.listed_topics() == [first, second]


def test_runs_of_topic_sets_whose_names_begin_alike_each_keep_a_checkpoint_of_their_own(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # Names too long for a checkpoint name whole: the run of all three, then of the two due.
    topics = [f"{topic_name}-{'x' * 60}-{n}" for n in range(3)]
    for topic in topics:
        create_topic(warehouse_settings, topic)
        produce_events(warehouse_settings, topic, 4, prefix=topic[-1])
    run_ingest(spark, warehouse_settings, IngestRequest(topics=tuple(topics)))
    for topic in topics[:2]:
        produce_events(warehouse_settings, topic, 3, prefix=f"again{topic[-1]}")

    summary = run_ingest(spark, warehouse_settings, IngestRequest(topics=tuple(topics[:2])))

    assert summary.by_topic == {topics[0]: [3, 0], topics[1]: [3, 0]}
    assert _per_topic(spark, warehouse_settings, EVENTS) == dict(
        zip(topics, [7, 7, 4], strict=True)
    )


def test_a_run_of_topics_kafka_has_none_of_is_refused_whole(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    from eventlake.kafka.topics import UnknownTopicError

    request = IngestRequest(topics=(f"{topic_name}-a", f"{topic_name}-b"))
    with pytest.raises(UnknownTopicError, match=f"{topic_name}-a"):
        run_ingest(spark, warehouse_settings, request)
    assert not warehouse_settings.table_path(EVENTS).exists()


def test_a_run_of_several_topics_says_one_line_per_topic_and_one_alone_none() -> None:
    summary = IngestSummary(by_topic={"b": [7, 0], "a": [18, 2]}, refused={"c": "no such topic"})
    assert summary.topic_lines() == [
        "ingest[a]: events=18 rejects=2",
        "ingest[b]: events=7 rejects=0",
        "ingest[c]: refused: no such topic",
    ]
    assert IngestSummary(by_topic={"a": [3, 0]}).topic_lines() == []
