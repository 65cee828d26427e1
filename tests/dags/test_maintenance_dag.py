"""The eventlake_maintenance DAG, run end to end with dag.test() (real broker, real
spark-submit). Its params: tests/orchestration/test_maintenance.py; the library:
tests/test_maintenance.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable as DeltaRsTable
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.warehouse.names import state_path
from tests.dags.dag_helpers import task_states
from tests.helpers import delta_operations, keyed_events

DAG_ID = "eventlake_maintenance"
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "eventlake_maintenance.py"


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
    produce_all(settings, topic_name, keyed_events([f"k{n}" for n in range(5)]))
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
        assert delta_operations(table)[-3:] == ["OPTIMIZE", "VACUUM START", "VACUUM END"], table
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
