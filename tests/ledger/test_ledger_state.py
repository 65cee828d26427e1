"""The ledger and the state tables on the real broker: a reconcile beside a running state
stream, and the compaction-risk clock (when the state table last caught up with the log)
that maintenance commits and a lagging stream's batches do not move."""

from __future__ import annotations

import time

from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic, topic_offsets
from eventlake.ledger.marks import STATE, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.maintenance.delta_upkeep import optimize_and_vacuum
from eventlake.state.compaction_risk import check_compaction
from eventlake.state.reconcile import reconcile_state
from eventlake.warehouse.names import state_path
from tests.helpers import binary_headers, keyed_events, read_topic, state_stream
from tests.state.test_compaction_risk import FAST_COMPACTION, _state, _until


def _latest_per_key(spark: SparkSession, settings: Settings, topic: str) -> dict[bytes, str]:
    """The topic's latest record per key, read independently of eventlake: key -> ce_id,
    keys whose latest record has no value (a tombstone) left out."""
    latest: dict[bytes, tuple[bytes | None, str]] = {}
    for record in read_topic(spark, settings, topic):
        headers = {h.key: bytes(h.value) for h in record.headers or []}
        latest[bytes(record.key)] = (record.value, headers["ce_id"].decode())
    return {key: ce_id for key, (value, ce_id) in latest.items() if value is not None}


def _caught_up(settings: Settings, topic: str, timeout: float = 90) -> None:
    """Wait until the state table's marks reach the end of the topic."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, head = topic_offsets(settings, topic)
        _, marks = read_marks(state_path(settings, topic), STATE, [topic])
        if all(marks.get((topic, p), -1) >= end for p, end in head.items()):
            return
        time.sleep(0.5)
    raise AssertionError(f"the state stream never caught up with {topic}")


def test_reconcile_beside_a_running_state_stream_leaves_the_latest_per_key(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = warehouse_settings
    create_topic(settings, topic_name, partitions=2, config={"cleanup.policy": "compact"})
    keys = [f"k{n}" for n in range(40)]
    with state_stream(spark, settings, topic_name) as failures:
        for round_ in range(4):
            # Updates of every key, then deletes of some and re-creations of others.
            produce_all(settings, topic_name, keyed_events(keys))
            gone = tuple(keys[round_::4])
            produce_all(settings, topic_name, keyed_events(list(gone), tombstones=gone))
            reports = reconcile_state(spark, settings, topic_name)
            assert reports.records_read > 0
        _caught_up(settings, topic_name)
    assert not failures, failures
    assert _state(spark, settings, topic_name) == _latest_per_key(spark, settings, topic_name)


def test_maintenance_commits_do_not_reset_the_compaction_clock(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = warehouse_settings
    # A retention longer than maintenance takes: its commits land within the window.
    create_topic(settings, topic_name, config=FAST_COMPACTION | {"delete.retention.ms": "10000"})
    produce_all(settings, topic_name, keyed_events(["gone", "kept"]))
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,), state=True))
    # The state ingest stops running; "gone" is deleted and the cleaner removes the
    # tombstone, while the maintenance keeps committing to the state table.
    produce_all(settings, topic_name, [(b"gone", None, binary_headers("gone-2"))])
    _until(
        settings,
        topic_name,
        "tombstone of 'gone' compacted away",
        lambda seen: all(k != b"gone" for _, k, _ in seen),
    )
    optimize_and_vacuum(spark, settings)

    report = check_compaction(spark, settings, topic_name)

    assert report.at_risk, report.message
    assert "last caught up with the log" in report.message


def test_a_state_stream_lagging_beyond_the_retention_is_flagged(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    retention = {"cleanup.policy": "compact", "delete.retention.ms": "4000"}
    settings = warehouse_settings.model_copy(update={"max_offsets_per_trigger": 20})
    create_topic(settings, topic_name, config=retention)
    produce_all(settings, topic_name, keyed_events([f"a{n}" for n in range(10)]))
    with state_stream(spark, settings, topic_name) as failures:
        _caught_up(settings, topic_name)
        produce_all(settings, topic_name, keyed_events([f"b{n}" for n in range(600)]))
        time.sleep(6)  # beyond delete.retention.ms, 20 records a batch behind 600
        report = check_compaction(spark, settings, topic_name)
        _, head = topic_offsets(settings, topic_name)
        _, marks = read_marks(state_path(settings, topic_name), STATE, [topic_name])
    assert not failures, failures
    assert marks[(topic_name, 0)] < head[0], "the stream caught up: it did not lag"
    assert report.at_risk, report.message


def test_a_new_record_after_an_idle_spell_longer_than_the_retention_is_no_risk(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = warehouse_settings
    create_topic(
        settings, topic_name, config={"cleanup.policy": "compact", "delete.retention.ms": "3000"}
    )
    produce_all(settings, topic_name, keyed_events(["a"]))
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,), state=True))
    time.sleep(4)  # idle beyond delete.retention.ms: the clock is old, nothing is unread
    produce_all(settings, topic_name, keyed_events(["b"]))

    report = check_compaction(spark, settings, topic_name)

    assert not report.at_risk, report.message
