"""State tables against a broker that really compacts: the state equals the topic's
latest-per-key, and a reader that falls behind the tombstone retention is told so and
brought back to equality by reconcile."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from pyspark.sql import SparkSession
from typer.testing import CliRunner

import eventlake.state.compaction_risk as compaction_module
from eventlake.cli import app
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.republish import RepublishRequest, run_republish
from eventlake.state.compaction_risk import CompactionReport, check_compaction
from eventlake.state.reconcile import reconcile_state
from eventlake.warehouse.names import state_path
from tests.helpers import binary_headers, interrupted_spark_job

# Small segments and a tiny dirty ratio make the log cleaner run within seconds; the
# tombstone retention of 1 s lets it drop tombstones soon after.
FAST_COMPACTION = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "0",
}


def _on_topic(settings: Settings, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record still in partition 0, as (offset, key, value)."""
    consumer = Consumer(
        {"bootstrap.servers": settings.bootstrap_servers, "group.id": uuid.uuid4().hex}
    )
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: list[tuple[int, bytes | None, bytes | None]] = []
    while high and (not seen or seen[-1][0] < high - 1):
        batch = consumer.consume(500, timeout=5)
        if not batch:
            break
        seen += [(m.offset(), m.key(), m.value()) for m in batch if m.error() is None]
    consumer.close()
    return seen


def _until(
    settings: Settings, topic: str, condition: str, done: object, timeout: float = 90
) -> None:
    """Produce one filler record a second (rolling segments, dirtying the log) until
    ``done(records on topic)`` holds."""
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        produce_all(settings, topic, [(b"filler", b"f%d" % n, binary_headers(f"filler-{n}"))])
        n += 1
        time.sleep(1)
        if done(_on_topic(settings, topic)):  # type: ignore[operator]
            return
    raise AssertionError(f"broker never reached: {condition}")


def _state(spark: SparkSession, settings: Settings, topic: str) -> dict[bytes, str]:
    rows = spark.read.format("delta").load(str(state_path(settings, topic))).collect()
    return {bytes(r.kafka_key): r.id for r in rows}


def test_state_read_from_compacted_topic_equals_latest_per_key(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name, config=FAST_COMPACTION)
    records: list[Record] = []
    for n in range(100):
        records.append((b"k%d" % (n % 20), b"v%d" % n, binary_headers(f"e{n}")))
    for k in (3, 7, 11, 19):
        records.append((b"k%d" % k, None, binary_headers(f"delete-k{k}")))
    produce_all(warehouse_settings, topic_name, records)
    produced = len(records)
    _until(
        warehouse_settings,
        topic_name,
        "compaction removed records",
        lambda seen: len(seen) < produced // 2,
    )

    on_topic = _on_topic(warehouse_settings, topic_name)
    offsets = [o for o, _, _ in on_topic]
    assert len(offsets) < offsets[-1] + 1  # gaps: the cleaner really ran
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,), state=True))

    state = _state(spark, warehouse_settings, topic_name)
    expected_keys = {b"k%d" % k for k in range(20)} - {b"k3", b"k7", b"k11", b"k19"} | {b"filler"}
    assert set(state) == expected_keys
    assert all(state[b"k%d" % k] == f"e{80 + k}" for k in (0, 1, 2, 4, 5))


def test_falling_behind_tombstone_retention_is_reported_and_reconcile_repairs(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    settings = warehouse_settings
    create_topic(settings, topic_name, config=FAST_COMPACTION)
    produce_all(
        settings,
        topic_name,
        [
            (b"gone", b"1", binary_headers("gone-1")),
            (b"kept", b"1", binary_headers("kept-1")),
        ],
    )
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,), state=True))
    assert set(_state(spark, settings, topic_name)) == {b"gone", b"kept"}

    # The reader stops; meanwhile "gone" is deleted and the cleaner removes both its
    # record and, after delete.retention.ms, the tombstone itself.
    produce_all(settings, topic_name, [(b"gone", None, binary_headers("gone-2"))])
    _until(
        settings,
        topic_name,
        "tombstone of 'gone' compacted away",
        lambda seen: all(k != b"gone" for _, k, _ in seen),
    )

    report = check_compaction(spark, settings, topic_name)
    assert report.at_risk and "eventlake reconcile" in report.message
    summary = run_ingest(spark, settings, IngestRequest(topics=(topic_name,), state=True))
    assert summary.warnings and "reconcile" in summary.warnings[0]
    assert b"gone" in _state(spark, settings, topic_name)  # stale: the delete was never seen
    # That ingest updated the table, but the risk found stays with it until a reconcile.
    kept = check_compaction(spark, settings, topic_name)
    assert kept.at_risk and "kept with the state table" in kept.message

    result = reconcile_state(spark, settings, topic_name)
    assert result.deleted == 1
    assert set(_state(spark, settings, topic_name)) == {b"kept", b"filler"}
    assert not check_compaction(spark, settings, topic_name).at_risk


def test_fresh_state_within_retention_is_not_at_risk(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name, config={"cleanup.policy": "compact"})
    produce_all(warehouse_settings, topic_name, [(b"a", b"1", binary_headers("a1"))])
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,), state=True))
    produce_all(warehouse_settings, topic_name, [(b"a", b"2", binary_headers("a2"))])
    report = check_compaction(spark, warehouse_settings, topic_name)
    assert report.cleanup_policy == "compact" and report.delete_retention_ms == 86_400_000
    assert not report.at_risk


def test_the_state_position_ignores_what_republish_rejected(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # Republish writes its own rejects of a topic's records to the same rejects table;
    # they say nothing about how far ingest (and so the state table) has read.
    create_topic(warehouse_settings, topic_name, config={"cleanup.policy": "compact"})
    produce_all(warehouse_settings, topic_name, [(b"a", b"1", binary_headers("a1"))])
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,), state=True))
    produce_all(warehouse_settings, topic_name, [(b"b", b"not an event", [])])
    request = RepublishRequest(
        source=topic_name, target=f"{topic_name}.copy", key_mapper="partitionkey"
    )
    assert run_republish(spark, warehouse_settings, request).rejected == 1

    report = check_compaction(spark, warehouse_settings, topic_name)

    assert report.next_offsets == {0: 1}


@pytest.mark.parametrize(
    ("servers", "said", "exit_code"),
    # 2: the same run would be refused again; 75 (EX_TEMPFAIL): a later run may pass.
    [(None, "does not exist on Kafka", 2), ("127.0.0.1:9", "did not answer", 75)],
    ids=["missing topic", "no broker"],
)
def test_reconcile_refuses_a_missing_topic_or_broker_in_a_sentence(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    tmp_path: Path,
    topic_name: str,
    servers: str | None,
    said: str,
    exit_code: int,
) -> None:
    bootstrap = servers or settings.bootstrap_servers
    arguments = ["reconcile", "--topic", topic_name, "--bootstrap-servers", bootstrap]

    result = CliRunner().invoke(app, [*arguments, "--warehouse", str(tmp_path)])

    assert result.exit_code == exit_code, result.output
    assert said in result.output and "Traceback" not in result.output


def test_compaction_check_refuses_a_missing_topic_in_a_sentence(
    broker: LocalBroker, settings: Settings, tmp_path: Path, topic_name: str
) -> None:
    arguments = ["compaction-check", "--topic", topic_name, "--warehouse", str(tmp_path)]

    result = CliRunner().invoke(
        app, [*arguments, "--bootstrap-servers", settings.bootstrap_servers]
    )

    assert result.exit_code == 2, result.output
    assert f"Topic '{topic_name}' does not exist on Kafka" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("first_at_risk", "exit_code"), [(False, 0), (True, 4)])
def test_a_stopped_compaction_check_prints_what_it_checked_and_exits_by_it(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    first_at_risk: bool,
    exit_code: int,
) -> None:
    first, second = (f"stop-check-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for name in (first, second):
        create_topic(settings, name)
    checked = CompactionReport(
        first,
        "compact",
        1000,
        0,
        {0: 0},
        {0: 0},
        at_risk=first_at_risk,
        message=f"{first}: checked",
    )

    def check_then_stop(session: SparkSession, _settings: Settings, topic: str) -> object:
        # The first topic's report, then SIGINT a second into the second topic's job.
        return checked if topic == first else interrupted_spark_job(session)

    monkeypatch.setattr(compaction_module, "check_compaction", check_then_stop)
    arguments = ["compaction-check", "--topic", first, "--topic", second]

    result = CliRunner().invoke(
        app,
        [
            *arguments,
            "--warehouse",
            str(tmp_path),
            "--bootstrap-servers",
            settings.bootstrap_servers,
        ],
    )

    assert result.exit_code == exit_code, result.output
    lines = result.output.rstrip().splitlines()
    assert f"{first}: checked" in lines
    assert lines[-1] == (
        "compaction-check: stopped by SIGINT; the topics printed above were checked, the "
        "others not; run it again for them"
    )
