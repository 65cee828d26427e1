"""``--dedup`` on the real broker, Spark and Delta: a repeated (source, id) lands in
rejects as duplicate_event, every record still exactly once, also on a replay."""

from __future__ import annotations

import time
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.ledger.commits import Ledger
from eventlake.local.broker import LocalBroker
from eventlake.state.reconcile import reconcile_state
from eventlake.views.duplicates import DUPLICATE_EVENT
from eventlake.warehouse.names import EVENTS, REJECTS, state_path
from tests.helpers import COORDINATES, binary_headers, read_table


def _event(event_id: str, *, source: str = "/tests") -> Record:
    return (event_id.encode(), b"{}", binary_headers(event_id, source=source))


def _landed(
    spark: SparkSession, settings: Settings
) -> tuple[list[str], dict[int, tuple[str, str]]]:
    """(event ids in events, sorted; per offset in rejects, (reason, detail))."""
    events = sorted(r["id"] for r in read_table(spark, settings, EVENTS).collect())
    rejects = {
        r["kafka_offset"]: (r["reason"], r["detail"])
        for r in read_table(spark, settings, REJECTS).collect()
    }
    return events, rejects


def _every_record_once(spark: SparkSession, settings: Settings, produced: int) -> None:
    both = (
        read_table(spark, settings, EVENTS)
        .select(COORDINATES)
        .unionByName(read_table(spark, settings, REJECTS).select(COORDINATES))
    )
    assert both.count() == both.distinct().count() == produced


def test_a_repeat_in_the_batch_or_in_the_table_lands_as_a_duplicate_reject(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,), dedup=True)
    produce_all(
        warehouse_settings,
        topic_name,
        [_event("a"), _event("b"), _event("a"), _event("a", source="/other")],
    )
    first = run_ingest(spark, warehouse_settings, request)
    produce_all(warehouse_settings, topic_name, [_event("b"), _event("c")])

    second = run_ingest(spark, warehouse_settings, request)

    events, rejects = _landed(spark, warehouse_settings)
    assert events == ["a", "a", "b", "c"]  # ("/other", "a") is another event
    assert sorted(rejects) == [2, 4]
    assert rejects[2] == (DUPLICATE_EVENT, rejects[2][1])
    assert f"first landed at {topic_name}/0/0 " in rejects[2][1]
    assert f"first landed at {topic_name}/0/1 " in rejects[4][1]
    assert first.rejects_by_reason == {DUPLICATE_EVENT: 1}
    assert second.rejects_by_reason == {DUPLICATE_EVENT: 1}
    _every_record_once(spark, warehouse_settings, 6)


def test_a_reject_earlier_in_the_batch_makes_no_duplicate_of_a_valid_event(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    bad_time = (b"a", b"{}", [*binary_headers("a"), ("ce_time", b"yesterday")])
    produce_all(warehouse_settings, topic_name, [bad_time, _event("a"), _event("a")])

    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,), dedup=True))

    events, rejects = _landed(spark, warehouse_settings)
    assert events == ["a"]  # the first valid one: the reject never landed as an event
    assert {offset: reason for offset, (reason, _) in rejects.items()} == {
        0: "invalid_time",
        2: DUPLICATE_EVENT,
    }
    assert f"first landed at {topic_name}/0/1 " in rejects[2][1]


def test_with_state_a_repeat_is_the_keys_latest_record_as_reconcile_reads_the_topic(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,), dedup=True, state=True)
    produce_all(warehouse_settings, topic_name, [(b"k", b'{"v": 1}', binary_headers("a"))])
    run_ingest(spark, warehouse_settings, request)
    # The key deleted, then the same event again (same source and id): on the topic (and
    # after its compaction) the key's latest record is the repeat.
    produce_all(
        warehouse_settings,
        topic_name,
        [(b"k", None, []), (b"k", b'{"v": 1}', binary_headers("a"))],
    )

    summary = run_ingest(spark, warehouse_settings, request)

    state = spark.read.format("delta").load(str(state_path(warehouse_settings, topic_name)))
    assert [(r["kafka_offset"], bytes(r["data"])) for r in state.collect()] == [(2, b'{"v": 1}')]
    assert summary.rejects_by_reason == {"plain_tombstone": 1, DUPLICATE_EVENT: 1}
    reconciled = reconcile_state(spark, warehouse_settings, topic_name)
    assert (reconciled.inserted, reconciled.updated, reconciled.deleted) == (0, 0, 0)


def _in_pieces_of_two(settings: Settings, topic: str) -> Settings:
    """``settings`` with --dedup batches of 2 records, and ``topic`` holding six events
    whose ids are a, b, c, a, d, b (offsets 0-5)."""
    settings = settings.model_copy(update={"dedup_batch_records": 2})
    create_topic(settings, topic)
    produce_all(settings, topic, [_event(i) for i in ("a", "b", "c", "a", "d", "b")])
    return settings


def test_a_bounded_run_lands_in_pieces_and_finds_a_repeat_across_them(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = _in_pieces_of_two(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,), dedup=True, ending_offsets="latest")

    summary = run_ingest(spark, settings, request)

    events, rejects = _landed(spark, settings)
    assert events == ["a", "b", "c", "d"]
    assert {offset: reason for offset, (reason, _) in rejects.items()} == {
        3: DUPLICATE_EVENT,
        5: DUPLICATE_EVENT,
    }
    assert summary.rejects_by_reason == {DUPLICATE_EVENT: 2}
    history = DeltaTable.forPath(spark, str(settings.table_path(EVENTS))).history()
    assert history.where("operation = 'WRITE'").count() == 3  # three pieces of two records


def test_a_backfill_in_pieces_then_the_scheduled_run_land_each_record_once(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = _in_pieces_of_two(warehouse_settings, topic_name)
    backfill = IngestRequest(
        topics=(topic_name,), dedup=True, ending_offsets=f'{{"{topic_name}": {{"0": 4}}}}'
    )

    run_ingest(spark, settings, backfill)
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,), dedup=True))

    events, rejects = _landed(spark, settings)
    assert events == ["a", "b", "c", "d"]
    assert sorted(rejects) == [3, 5]
    _every_record_once(spark, settings, 6)


def test_a_dedup_stream_reads_at_most_dedup_batch_records_per_batch(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = warehouse_settings.model_copy(update={"dedup_batch_records": 2})
    create_topic(settings, topic_name)
    produce_all(settings, topic_name, [_event(i) for i in ("a", "b", "c", "a", "d")])

    summary = run_ingest(spark, settings, IngestRequest(topics=(topic_name,), dedup=True))

    assert summary.batches == 3
    assert _landed(spark, settings)[0] == ["a", "b", "c", "d"]


def test_without_dedup_repeats_land_as_events(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_all(warehouse_settings, topic_name, [_event("a"), _event("a")])

    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    assert _landed(spark, warehouse_settings) == (["a", "a"], {})


def test_an_earlier_event_beyond_the_horizon_is_no_duplicate(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = warehouse_settings.model_copy(update={"dedup_horizon_hours": 1 / 3600})
    create_topic(settings, topic_name)
    request = IngestRequest(topics=(topic_name,), dedup=True)
    produce_all(settings, topic_name, [_event("a")])
    run_ingest(spark, settings, request)
    time.sleep(1.5)  # more than the one-second horizon of Kafka time
    produce_all(settings, topic_name, [_event("a")])

    run_ingest(spark, settings, request)

    assert _landed(spark, settings) == (["a", "a"], {})


class _Crash(RuntimeError):
    pass


def _crash_before_the_events_commit(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run ``request`` so that its batch stops after the rejects commit, before the events
    commit (the crash window between the two), then put the commit back."""
    events_path = str(settings.table_path(EVENTS))
    commit = Ledger.commit

    def crash_on_events(self: Ledger, path: str, *args: Any, **kwargs: Any) -> int:
        if path == events_path:
            raise _Crash("between the rejects and the events commit")
        return commit(self, path, *args, **kwargs)

    monkeypatch.setattr(Ledger, "commit", crash_on_events)
    with pytest.raises(Exception, match="between the rejects and the events commit"):
        run_ingest(spark, settings, request)
    monkeypatch.setattr(Ledger, "commit", commit)


def test_a_replay_after_a_crash_between_the_commits_keeps_each_records_first_fate(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rejects commit (duplicates in it) lands, the events commit does not (a crash);
    the run again without --dedup must neither land the duplicates as events too nor
    drop the events."""
    create_topic(warehouse_settings, topic_name)
    produce_all(warehouse_settings, topic_name, [_event("a"), _event("a"), _event("b")])
    _crash_before_the_events_commit(
        spark, warehouse_settings, IngestRequest(topics=(topic_name,), dedup=True), monkeypatch
    )

    again = run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    events, rejects = _landed(spark, warehouse_settings)
    assert events == ["a", "b"]
    assert [reason for reason, _ in rejects.values()] == [DUPLICATE_EVENT]
    assert again.rejects_by_reason == {DUPLICATE_EVENT: 1}
    _every_record_once(spark, warehouse_settings, 3)


def test_a_first_batch_stopped_between_its_commits_lands_its_events_on_the_next_run(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without --dedup too: the topic's rejects marks landed, its events marks did not.
    The next run must not take the tables for a warehouse from before the ledger."""
    create_topic(warehouse_settings, topic_name)
    produce_all(
        warehouse_settings, topic_name, [_event("a"), (b"k", None, []), _event("b"), _event("c")]
    )
    _crash_before_the_events_commit(
        spark, warehouse_settings, IngestRequest(topics=(topic_name,)), monkeypatch
    )

    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    events, rejects = _landed(spark, warehouse_settings)
    assert events == ["a", "b", "c"]
    assert [reason for reason, _ in rejects.values()] == ["plain_tombstone"]
    _every_record_once(spark, warehouse_settings, 4)
