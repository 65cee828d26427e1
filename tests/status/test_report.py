"""eventlake.status.report: what each checkpoint has written, against Kafka's latest offsets."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import make_admin
from eventlake.kafka.topics import create_topic, delete_topics
from eventlake.ledger.checkpoint import hold_checkpoint
from eventlake.local.broker import LocalBroker
from eventlake.spark.rows import local_rows
from eventlake.state.table import record_compaction_risk
from eventlake.status.checkpoints import CheckpointStatus, checkpoint_statuses, streams_reading
from eventlake.status.report import WarehouseStatus, absent_topic_line, warehouse_status
from eventlake.warehouse.names import DQ_RESULTS, state_path
from eventlake.warehouse.schemas import DQ_RESULTS_SCHEMA
from tests.helpers import produce_events


def _ingested(spark: SparkSession, settings: Settings, topic: str, count: int) -> str:
    """Ingest ``count`` records of a new 2-partition topic; the checkpoint's name."""
    create_topic(settings, topic, partitions=2)
    produce_events(settings, topic, count)
    request = IngestRequest(topics=(topic,))
    run_ingest(spark, settings, request)
    return request.default_checkpoint_name()


def test_status_gives_written_latest_and_lag_per_partition(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    name = _ingested(spark, warehouse_settings, topic_name, 30)
    produce_events(warehouse_settings, topic_name, 6, prefix="late")

    (status,) = warehouse_status(warehouse_settings).checkpoints

    assert status.name == name and status.job == "ingest" and status.holder is None
    assert status.last_batch is not None and status.last_batch_at is not None
    assert {p.partition for p in status.positions} == {0, 1}
    assert sum(p.current_offset or 0 for p in status.positions) == 30
    assert sum(p.log_end_offset or 0 for p in status.positions) == 36
    assert sum(p.lag or 0 for p in status.positions) == 6


def test_status_names_the_stream_holding_a_checkpoint(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    name = _ingested(spark, warehouse_settings, topic_name, 4)
    checkpoint = warehouse_settings.checkpoints / name

    with hold_checkpoint(checkpoint, job="ingest", trigger="processing-time=1 second"):
        streams = streams_reading(warehouse_settings, topic_name)
        rendered = warehouse_status(warehouse_settings).render()

    assert [s.name for s in streams] == [name]
    assert "stream (processing-time=1 second) held by pid" in rendered
    assert streams_reading(warehouse_settings, topic_name) == []


def test_an_available_now_run_holding_a_checkpoint_is_not_a_stream(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    name = _ingested(spark, warehouse_settings, topic_name, 4)

    with hold_checkpoint(
        warehouse_settings.checkpoints / name, job="ingest", trigger="available-now"
    ):
        assert streams_reading(warehouse_settings, topic_name) == []


def test_a_pattern_source_reads_topics_it_fully_matches() -> None:
    status = CheckpointStatus("c", r"pattern:demo\.stream\..*", None, None, None)

    assert status.reads("demo.stream.clicks")
    assert not status.reads("x.demo.stream.clicks")
    assert not CheckpointStatus("c", "topics:a,b", None, None, None).reads("ab")


def test_status_reports_a_recorded_compaction_risk(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = str(state_path(warehouse_settings, "customers"))
    spark.range(1).write.format("delta").save(path)
    record_compaction_risk(spark, path, {"found_at": "2026-11-24T05:00:00+00:00"})

    report = warehouse_status(warehouse_settings, ask_kafka=False)

    assert report.compaction_risks == {"customers": {"found_at": "2026-11-24T05:00:00+00:00"}}
    assert "eventlake reconcile --topic customers" in report.render()


def test_status_without_kafka_still_shows_what_was_written(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    _ingested(spark, warehouse_settings, topic_name, 8)
    unreachable = warehouse_settings.model_copy(update={"bootstrap_servers": "127.0.0.1:9"})

    report = warehouse_status(unreachable, kafka_timeout=2.0)

    assert report.kafka_error
    assert sum(p.current_offset or 0 for p in report.checkpoints[0].positions) == 8
    assert "log end offsets unknown" in report.render()


def test_the_status_command_prints_json(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    name = _ingested(spark, warehouse_settings, topic_name, 5)
    env = {
        "PATH": "/usr/bin:/bin",
        "EVENTLAKE_BOOTSTRAP_SERVERS": warehouse_settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(warehouse_settings.warehouse),
    }

    done = subprocess.run(
        [sys.executable, "-m", "eventlake.cli", "status", "--json", "--topic", topic_name],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    (checkpoint,) = json.loads(done.stdout)["checkpoints"]
    assert checkpoint["name"] == name
    assert sum(p["lag"] for p in checkpoint["partitions"]) == 0


def test_status_gives_where_a_state_table_stands(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 5)
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,), state=True))
    produce_events(warehouse_settings, topic_name, 2, prefix="late")

    (status,) = warehouse_status(warehouse_settings).checkpoints

    (position,) = status.positions
    assert (position.current_offset, position.state_offset, position.lag) == (5, 5, 2)
    assert "state-offset" in warehouse_status(warehouse_settings).render()


def _checkpoint(settings: Settings, name: str, identity: str) -> Path:
    folder = settings.checkpoints / name
    folder.mkdir(parents=True)
    (folder / "eventlake-identity.json").write_text(identity)
    return folder


def test_a_checkpoint_with_a_broken_identity_is_reported_and_the_others_still_are(
    warehouse_settings: Settings,
) -> None:
    _checkpoint(warehouse_settings, "broken", '{"source": "topics:a", "tar')
    good = '{"source": "topics:a", "targets": ["/wh/events"], "app_id": "x"}'
    _checkpoint(warehouse_settings, "good", good)

    report = warehouse_status(warehouse_settings, ask_kafka=False)

    assert [(s.name, s.problem is None) for s in report.checkpoints] == [
        ("broken", False),
        ("good", True),
    ]
    assert "problem: eventlake-identity.json cannot be read" in report.render()
    assert [s.name for s in streams_reading(warehouse_settings, "a")] == []


def test_a_java_only_pattern_reads_the_topics_its_stream_read(
    warehouse_settings: Settings,
) -> None:
    identity = '{"source": "pattern:orders\\\\p{Alnum}+", "targets": [], "app_id": "x"}'
    folder = _checkpoint(warehouse_settings, "java", identity)
    spark_folder = folder / "spark"
    (spark_folder / "offsets").mkdir(parents=True)
    (spark_folder / "commits").mkdir()
    (spark_folder / "offsets" / "0").write_text('v1\n{}\n{"ordersEU":{"0":3}}')
    (spark_folder / "commits" / "0").write_text("v1\n{}")

    (status,) = warehouse_status(warehouse_settings, ask_kafka=False).checkpoints

    assert status.reads("ordersEU") and not status.reads("ordersUS")
    assert status.problem is not None and "Java-only" in status.problem
    assert [s.name for s in checkpoint_statuses(warehouse_settings, ("ordersEU",))] == ["java"]


def _dq_rows(
    spark: SparkSession, settings: Settings, run_id: str, at: str, *checks: tuple[str, str, bool]
) -> None:
    """dq_results rows of one run as `eventlake check` writes them: (topic, severity, ok)."""
    moment = datetime.fromisoformat(at)
    rows = [
        {"run_id": run_id, "run_time": moment, "table": "events", "topic": topic}
        | {"check": "c", "severity": severity, "success": ok, "unexpected_sample": []}
        for topic, severity, ok in checks
    ]
    local_rows(spark, rows, DQ_RESULTS_SCHEMA).write.format("delta").mode("append").save(
        str(settings.table_path(DQ_RESULTS))
    )


def test_status_gives_each_topics_last_quality_verdict(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    _dq_rows(spark, warehouse_settings, "old", "2026-11-24T05:00:00+00:00", ("a", "error", False))
    _dq_rows(
        spark,
        warehouse_settings,
        "new",
        "2026-11-25T05:00:00+00:00",
        ("a", "error", True),
        ("a", "warning", False),
        ("b", "error", False),
    )

    report = warehouse_status(warehouse_settings, ask_kafka=False)

    quality = report.to_json()["quality"]
    assert {t: (v["run_id"], v["verdict"], v["checks"]) for t, v in quality.items()} == {
        "a": ("new", "warning", 2),
        "b": ("new", "failed", 1),
    }
    assert quality["a"]["run_time"] == "2026-11-25T05:00:00+00:00"
    assert "quality of b: failed (1 checks, 1 failed, 1 of them errors)" in report.render()
    assert list(warehouse_status(warehouse_settings, topics=("b",), ask_kafka=False).quality) == [
        "b"
    ]


def test_status_beside_a_stream_creating_its_state_table_reports_no_risk_for_it(
    warehouse_settings: Settings,
) -> None:
    # What a reader sees while Delta writes a new table's first commit: the log folder,
    # nothing in it yet (delta-rs: "No files in log segment").
    (state_path(warehouse_settings, "customers") / "_delta_log").mkdir(parents=True)

    report = warehouse_status(warehouse_settings, ask_kafka=False)

    assert report.compaction_risks == {}


def test_status_beside_a_first_quality_run_creating_its_results_reports_no_verdict(
    warehouse_settings: Settings,
) -> None:
    (warehouse_settings.table_path(DQ_RESULTS) / "_delta_log").mkdir(parents=True)

    report = warehouse_status(warehouse_settings, ask_kafka=False)

    assert report.quality == {}


def test_a_topic_landed_by_bounded_runs_alone_is_reported_where_it_stands(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name, partitions=2)
    produce_events(warehouse_settings, topic_name, 7)
    # A backfill into a fresh warehouse: no checkpoint is made.
    run_ingest(spark, warehouse_settings, IngestRequest((topic_name,), ending_offsets="latest"))

    report = warehouse_status(warehouse_settings, topics=(topic_name,))

    (entry,) = report.checkpoints
    assert entry.without_checkpoint and entry.job == "ingest"
    assert sum(p.current_offset or 0 for p in entry.positions) == 7
    assert sum(p.lag or 0 for p in entry.positions) == 0
    assert report.render().startswith(
        f"runs without a checkpoint [ingest, topics:{topic_name}]: no "
    )


def test_a_report_narrowed_to_a_topic_no_checkpoint_reads_says_so() -> None:
    narrowed = WarehouseStatus(topics=("ordres",)).render()
    everything = WarehouseStatus().render()

    assert narrowed.startswith("no checkpoint reads ordres: check the name")
    assert everything.startswith("no checkpoints: nothing has been ingested")


def test_status_says_when_a_topic_it_landed_is_no_longer_on_kafka(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    _ingested(spark, warehouse_settings, topic_name, 4)
    delete_topics(warehouse_settings, [topic_name])
    deadline = time.monotonic() + 30
    while topic_name in make_admin(warehouse_settings).list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "the broker kept the deleted topic"
        time.sleep(0.2)

    report = warehouse_status(warehouse_settings)

    assert report.kafka_error is None and report.absent_topics == (topic_name,)
    assert sum(p.current_offset or 0 for p in report.checkpoints[0].positions) == 4
    assert f"  {absent_topic_line(topic_name)}" in report.render().splitlines()


def test_status_without_checkpoints_names_the_warehouse_it_looked_in(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    result = CliRunner().invoke(app, ["status", "--warehouse", str(tmp_path / "lake")])

    assert "no checkpoints: nothing has been ingested" in result.output
    assert f"(warehouse {tmp_path / 'lake'}: EVENTLAKE_WAREHOUSE or --warehouse)" in result.output
