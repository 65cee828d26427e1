"""eventlake.maintenance.run: OPTIMIZE/VACUUM of every table, the compaction sweep, and
`eventlake maintain` running both."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from eventlake.cli import app
from eventlake.core.settings import Settings
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.maintenance.delta_upkeep import RETENTION_CHECK_CONF, optimize_and_vacuum
from eventlake.maintenance.request import MaintenanceError, MaintenanceRequest
from eventlake.maintenance.run import refresh_type_fields, run_maintenance
from eventlake.maintenance.sweep import compaction_sweep
from eventlake.state.reconcile import reconcile_state
from eventlake.views.type_fields import fields_path, load_columns, load_fields
from eventlake.warehouse.names import state_path
from tests.helpers import append_small_files, binary_headers, delta_operations, keyed_events, land

TWO_DAYS_MS = 2 * 24 * 3600 * 1000


def test_retention_below_safety_is_refused_before_any_table_is_touched(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    events = warehouse_settings.table_path("events")
    append_small_files(spark, events, 2)

    with pytest.raises(MaintenanceError, match="allow_below_safety"):
        optimize_and_vacuum(spark, warehouse_settings, retention_hours=24)
    assert delta_operations(events) == ["WRITE", "WRITE"]


def test_optimize_and_vacuum_reports_files_of_every_table(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    append_small_files(spark, warehouse_settings.table_path("events"), 3)
    append_small_files(spark, warehouse_settings.table_path("dq_results"), 2)
    append_small_files(spark, state_path(warehouse_settings, "orders"), 2)
    (warehouse_settings.warehouse / "_checkpoints" / "x").mkdir(parents=True)

    results = optimize_and_vacuum(spark, warehouse_settings, 0, allow_below_safety=True)

    assert [(r.table, r.files_compacted, r.files_written, r.files_removed) for r in results] == [
        ("dq_results", 2, 1, 2),
        ("events", 3, 1, 3),
        ("state/orders", 2, 1, 2),
    ]


def test_optimize_and_vacuum_logs_optimize_and_vacuum_commits(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    events = warehouse_settings.table_path("events")
    append_small_files(spark, events, 2)

    optimize_and_vacuum(spark, warehouse_settings, 0, allow_below_safety=True)

    assert delta_operations(events)[2:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"]


def test_below_safety_override_applies_only_to_the_call(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    append_small_files(spark, warehouse_settings.table_path("events"), 1)
    before = spark.conf.get(RETENTION_CHECK_CONF, None)

    optimize_and_vacuum(spark, warehouse_settings, 0, allow_below_safety=True)

    assert spark.conf.get(RETENTION_CHECK_CONF, None) == before


def test_dry_run_reports_removable_files_and_changes_nothing(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    events = warehouse_settings.table_path("events")
    append_small_files(spark, events, 2)
    spark.range(3).write.format("delta").mode("overwrite").save(str(events))  # 2 files unused

    results = optimize_and_vacuum(spark, warehouse_settings, 0, True, dry_run=True)

    assert [(r.table, r.files_removed, r.dry_run) for r in results] == [("events", 2, True)]
    assert delta_operations(events) == ["WRITE", "WRITE", "WRITE"]


def _unreferenced_file(table: Path, name: str, age_hours: float) -> Path:
    """A data file in the table's folder that no version of the table names (a failed
    writer's leftover), last modified ``age_hours`` ago: VACUUM's to delete once older
    than the retention."""
    path = table / name
    path.write_bytes(b"PAR1")
    then = time.time() - age_hours * 3600
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize(
    ("retention_hours", "age_hours", "kept"),
    [(720.0, 200.0, True), (24.0, 100.0, False)],
    ids=["month", "day"],
)
def test_vacuum_keeps_the_retention_asked_for_not_deltas_default(
    spark: SparkSession,
    warehouse_settings: Settings,
    retention_hours: float,
    age_hours: float,
    kept: bool,
) -> None:
    # Delta 4 ignores a retention other than 0 h unless told not to, and keeps 168 h:
    # a 100-hour-old leftover would stay under a day's retention; a 200-hour-old one go
    # under a month's.
    events = warehouse_settings.table_path("events")
    append_small_files(spark, events, 1)
    leftover = _unreferenced_file(events, "part-00000-leftover.parquet", age_hours)

    (result,) = optimize_and_vacuum(
        spark, warehouse_settings, retention_hours, allow_below_safety=True
    )

    assert leftover.exists() is kept
    assert result.files_removed == (0 if kept else 1)


@pytest.fixture
def stale_state(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> Settings:
    """A compacted topic whose state table (k0, k1, k2) missed a later tombstone of k0."""
    create_topic(warehouse_settings, topic_name, config={"cleanup.policy": "compact"})
    produce_all(warehouse_settings, topic_name, keyed_events(["k0", "k1", "k2"]))
    reconcile_state(spark, warehouse_settings, topic_name)
    produce_all(warehouse_settings, topic_name, keyed_events(["k0"], tombstones=("k0",)))
    return warehouse_settings


def _state_keys(spark: SparkSession, settings: Settings, topic: str) -> list[str]:
    rows = spark.read.format("delta").load(str(state_path(settings, topic))).collect()
    return sorted(bytes(row["kafka_key"]).decode() for row in rows)


def test_compaction_sweep_reconciles_a_state_table_at_risk(
    spark: SparkSession, stale_state: Settings, topic_name: str
) -> None:
    later = int(time.time() * 1000) + TWO_DAYS_MS  # beyond delete.retention.ms (24 h)

    [result] = compaction_sweep(spark, stale_state, [topic_name], True, now_ms=later)

    assert result.at_risk and result.reconciled is not None
    assert result.reconciled.deleted == 1
    assert _state_keys(spark, stale_state, topic_name) == ["k1", "k2"]


def test_compaction_sweep_without_auto_reconcile_only_warns(
    spark: SparkSession, stale_state: Settings, topic_name: str
) -> None:
    later = int(time.time() * 1000) + TWO_DAYS_MS

    [result] = compaction_sweep(spark, stale_state, [topic_name], False, now_ms=later)

    assert result.at_risk and result.reconciled is None
    assert f"eventlake reconcile --topic {topic_name}" in result.message
    assert _state_keys(spark, stale_state, topic_name) == ["k0", "k1", "k2"]


def test_a_request_below_the_safety_retention_is_refused() -> None:
    with pytest.raises(MaintenanceError, match="allow_below_safety"):
        MaintenanceRequest(retention_hours=24)


@pytest.mark.parametrize("hours", [float("nan"), float("inf")])
def test_a_retention_that_is_not_a_finite_number_of_hours_is_refused(hours: float) -> None:
    with pytest.raises(MaintenanceError, match="finite number of hours"):
        MaintenanceRequest(retention_hours=hours, allow_below_safety=True)


def test_a_request_for_a_name_that_is_not_a_topic_is_refused() -> None:
    with pytest.raises(MaintenanceError, match=r"Invalid topic 'bad topic!': use 1-249 characters"):
        MaintenanceRequest(topics=("bad topic!",))


def test_run_maintenance_optimizes_every_table_and_sums_up(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    append_small_files(spark, warehouse_settings.table_path("events"), 3)
    lines: list[str] = []

    summary = run_maintenance(
        spark,
        warehouse_settings,
        MaintenanceRequest(retention_hours=0, allow_below_safety=True),
        report=lines.append,
    )

    assert lines == [
        *[r.line() for r in summary.tables],
        "types: the events table has no data_json column yet (the next ingest adds it)",
    ]
    assert summary.line().startswith(
        "maintenance: tables=1 compacted=3 removed=3 state_topics=0 at_risk=0 reconciled=0"
    )


def test_run_maintenance_goes_on_with_the_tables_when_the_sweep_fails(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # A state table whose topic is gone: the compaction check cannot read its configs.
    append_small_files(spark, warehouse_settings.table_path("events"), 2)
    append_small_files(spark, state_path(warehouse_settings, topic_name), 1)
    lines: list[str] = []

    summary = run_maintenance(
        spark,
        warehouse_settings,
        MaintenanceRequest(retention_hours=0, allow_below_safety=True),
        report=lines.append,
    )

    assert summary.sweep_failed
    assert lines[0].startswith(f"{topic_name}: not checked: the topic does not exist on Kafka")
    assert f"state/{topic_name} is left as it is" in lines[0]
    assert not any("Traceback" in line for line in lines)
    assert [r.table for r in summary.tables] == ["events", f"state/{topic_name}"]


def test_compaction_sweep_checks_the_other_topics_when_one_is_gone(
    spark: SparkSession, stale_state: Settings, topic_name: str
) -> None:
    later = int(time.time() * 1000) + TWO_DAYS_MS

    gone, checked = compaction_sweep(
        spark, stale_state, [f"{topic_name}-gone", topic_name], False, now_ms=later
    )

    assert not gone.checked and "not checked" in gone.message
    # No state table of that name either: a misspelt --topic, not a topic gone.
    assert f"no state/{topic_name}-gone table: check the name" in gone.message
    assert checked.checked and checked.at_risk


def test_run_maintenance_keeps_the_typed_views_columns_of_every_type(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    paid = json.dumps({"amount": 12.5, "order": "o-1"}).encode()
    headers = [*binary_headers("p1", type_="order.paid"), ("content-type", b"application/json")]
    land(spark, warehouse_settings, topic_name, [(b"o-1", paid, headers)])
    lines: list[str] = []

    run_maintenance(spark, warehouse_settings, MaintenanceRequest(), report=lines.append)

    assert lines[-1] == "types: the columns of 1 event types inferred (typed views)"
    assert load_fields(fields_path(warehouse_settings.warehouse)) == {
        "order.paid": {"amount": "DECIMAL(38,1)", "order": "STRING"}
    }


def test_refreshing_the_typed_views_columns_says_which_came_from_a_dataschema(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    schema = tmp_path / "paid.json"
    schema.write_text(json.dumps({"properties": {"amount": {"type": "number"}}}))
    records: list[Record] = []
    for event_id, event_type, dataschema in (
        ("p1", "order.paid", schema.as_uri()),
        ("r1", "order.refunded", "urn:example:refund"),
        ("s1", "order.shipped", None),
    ):
        headers = [
            *binary_headers(event_id, type_=event_type),
            ("content-type", b"application/json"),
        ]
        if dataschema is not None:
            headers.append(("ce_dataschema", dataschema.encode()))
        records.append((event_id.encode(), b'{"amount": 1.5}', headers))
    land(spark, warehouse_settings, topic_name, records)

    line = refresh_type_fields(spark, warehouse_settings)

    assert line == (
        "types: the columns of 3 event types inferred (typed views), 1 from its dataschema, "
        "1 dataschema not read (eventlake types)"
    )
    kept = load_columns(fields_path(warehouse_settings.warehouse))
    assert kept["order.paid"].fields == {"amount": "DOUBLE"}
    assert kept["order.refunded"].fields == {"amount": "DECIMAL(38,1)"}
    assert kept["order.refunded"].unread == "the scheme urn: is not read"


def test_maintain_command_refuses_a_low_retention_before_starting_spark() -> None:
    result = CliRunner().invoke(app, ["maintain", "--retention-hours", "1"])

    assert result.exit_code == 2
    assert "allow_below_safety" in result.output


def test_maintain_command_dry_run_prints_each_table_and_a_summary(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    append_small_files(spark, warehouse_settings.table_path("events"), 2)
    args = ["maintain", "--dry-run", "--warehouse", str(warehouse_settings.warehouse)]

    result = CliRunner().invoke(app, args)

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("events: dry run, nothing changed")
    assert result.output.splitlines()[-1].startswith("maintenance (dry run): tables=1")
    assert delta_operations(warehouse_settings.table_path("events")) == ["WRITE", "WRITE"]


def test_maintain_command_on_a_warehouse_without_tables_names_the_folder_it_looked_in(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    args = ["maintain", "--dry-run", "--warehouse", str(warehouse_settings.warehouse)]

    result = CliRunner().invoke(app, args)

    assert result.exit_code == 0, result.output
    assert f"maintenance: no Delta tables under {warehouse_settings.warehouse}" in result.output
