"""Maintenance: OPTIMIZE/VACUUM of every table and the compaction sweep (library), and the
eventlake_maintenance DAG run end to end with dag.test(): real broker, real spark-submit."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable as DeltaRsTable
from pyspark.sql import SparkSession

from eventlake.broker import LocalBroker
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka import Record, create_topic, produce_all
from eventlake.maintenance import (
    RETENTION_CHECK_CONF,
    MaintenanceError,
    compaction_sweep,
    optimize_and_vacuum,
)
from eventlake.orchestration import MaintenanceParams, OrchestrationError
from eventlake.settings import Settings
from eventlake.state import reconcile_state
from eventlake.tables import state_path
from tests.dags.dag_helpers import task_states
from tests.helpers import binary_headers

DAG_ID = "eventlake_maintenance"
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "eventlake_maintenance.py"
TWO_DAYS_MS = 2 * 24 * 3600 * 1000


def _append_files(spark: SparkSession, path: Path, files: int) -> None:
    """``files`` appends of one small file each: something for OPTIMIZE to compact."""
    for n in range(files):
        spark.range(n * 10, n * 10 + 10).coalesce(1).write.format("delta").mode("append").save(
            str(path)
        )


def _operations(path: Path) -> list[str]:
    """The table's commit operations, oldest first, read by an independent reader."""
    history = DeltaRsTable(str(path)).history()
    return [commit["operation"] for commit in sorted(history, key=lambda c: c["version"])]


# --- the library: eventlake.maintenance ----------------------------------------------


def test_retention_below_safety_is_refused_before_any_table_is_touched(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    events = warehouse_settings.table_path("events")
    _append_files(spark, events, 2)

    with pytest.raises(MaintenanceError, match="allow_below_safety"):
        optimize_and_vacuum(spark, warehouse_settings, retention_hours=24)
    assert _operations(events) == ["WRITE", "WRITE"]


def test_optimize_and_vacuum_reports_files_of_every_table(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    _append_files(spark, warehouse_settings.table_path("events"), 3)
    _append_files(spark, warehouse_settings.table_path("dq_results"), 2)
    _append_files(spark, state_path(warehouse_settings, "orders"), 2)
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
    _append_files(spark, events, 2)

    optimize_and_vacuum(spark, warehouse_settings, 0, allow_below_safety=True)

    assert _operations(events)[2:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"]


def test_below_safety_override_applies_only_to_the_call(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    _append_files(spark, warehouse_settings.table_path("events"), 1)
    before = spark.conf.get(RETENTION_CHECK_CONF, None)

    optimize_and_vacuum(spark, warehouse_settings, 0, allow_below_safety=True)

    assert spark.conf.get(RETENTION_CHECK_CONF, None) == before


def test_dry_run_reports_removable_files_and_changes_nothing(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    events = warehouse_settings.table_path("events")
    _append_files(spark, events, 2)
    spark.range(3).write.format("delta").mode("overwrite").save(str(events))  # 2 files unused

    results = optimize_and_vacuum(spark, warehouse_settings, 0, True, dry_run=True)

    assert [(r.table, r.files_removed, r.dry_run) for r in results] == [("events", 2, True)]
    assert _operations(events) == ["WRITE", "WRITE", "WRITE"]


def _keyed_events(keys: list[str], *, tombstones: tuple[str, ...] = ()) -> list[Record]:
    return [
        (key.encode(), None if key in tombstones else b"{}", binary_headers(f"{key}-{n}"))
        for n, key in enumerate(keys)
    ]


@pytest.fixture
def stale_state(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> Settings:
    """A compacted topic whose state table (k0, k1, k2) missed a later tombstone of k0."""
    create_topic(warehouse_settings, topic_name, config={"cleanup.policy": "compact"})
    produce_all(warehouse_settings, topic_name, _keyed_events(["k0", "k1", "k2"]))
    reconcile_state(spark, warehouse_settings, topic_name)
    produce_all(warehouse_settings, topic_name, _keyed_events(["k0"], tombstones=("k0",)))
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


# --- the DAG's params: eventlake.orchestration.MaintenanceParams ---------------------


def test_params_map_to_job_arguments() -> None:
    params = {"retention_hours": 0, "allow_below_safety": True, "topics": ["a"], "dry_run": True}

    args = MaintenanceParams.from_params(params).application_args()

    assert args == [
        "--retention-hours",
        "0",
        "--allow-below-safety",
        "--auto-reconcile",
        "--dry-run",
        "--topics",
        "a",
    ]


@pytest.mark.parametrize(
    "params",
    [
        {"retention_hours": 167.9},
        {"retention_hours": -1, "allow_below_safety": True},
        {"retention_hours": "168"},
        {"auto_reconcile": "yes"},
        {"topics": ["bad topic!"]},
    ],
    ids=["below-safety", "negative", "not-a-number", "flag-not-boolean", "bad-topic"],
)
def test_bad_params_are_refused(params: dict[str, object]) -> None:
    with pytest.raises(OrchestrationError):
        MaintenanceParams.from_params(params)


# --- the DAG: eventlake_maintenance --------------------------------------------------


@pytest.fixture
def maintenance_dag(airflow_env: Settings, airflow_db: None) -> Any:
    """The DAG parsed after the environment is set, as the dag-processor would."""
    from airflow.dag_processing.dagbag import DagBag

    dagbag = DagBag(dag_folder=str(DAG_FILE))
    assert dagbag.import_errors == {}
    return dagbag.dags[DAG_ID]


@pytest.fixture
def ingested(
    broker: LocalBroker, spark: SparkSession, airflow_env: Settings, topic_name: str
) -> Settings:
    """5 events ingested with state in 2 micro-batches: 2 small files per table."""
    settings = airflow_env.model_copy(update={"max_offsets_per_trigger": 3})
    create_topic(settings, topic_name, config={"cleanup.policy": "compact"})
    produce_all(settings, topic_name, _keyed_events([f"k{n}" for n in range(5)]))
    summary = run_ingest(spark, settings, IngestRequest(topics=(topic_name,), state=True))
    assert (summary.events, summary.batches) == (5, 2)
    return airflow_env


def test_dag_run_optimizes_and_vacuums_events_and_state_tables(
    maintenance_dag: Any, ingested: Settings, topic_name: str
) -> None:
    conf = {"retention_hours": 0, "allow_below_safety": True}

    dag_run = maintenance_dag.test(run_conf=conf)

    assert str(dag_run.state) == "success", task_states(dag_run)
    for table in (ingested.table_path("events"), state_path(ingested, topic_name)):
        assert _operations(table)[-3:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"], table
    assert DeltaRsTable(str(ingested.table_path("events"))).to_pyarrow_table().num_rows == 5


def test_dag_run_below_safety_without_override_fails_before_submitting(
    maintenance_dag: Any,
) -> None:
    dag_run = maintenance_dag.test(run_conf={"retention_hours": 24})

    assert str(dag_run.state) == "failed"
    assert task_states(dag_run) == {"validate": {"failed"}, "maintain": {"upstream_failed"}}


def test_negative_retention_is_refused_by_the_param_schema(maintenance_dag: Any) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.sdk.exceptions import ParamValidationError

    runs_before = len(DagRun.find(dag_id=DAG_ID))
    with pytest.raises(ParamValidationError, match="retention_hours"):
        maintenance_dag.test(run_conf={"retention_hours": -1})
    assert len(DagRun.find(dag_id=DAG_ID)) == runs_before
