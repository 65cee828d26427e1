"""The quality DAG, run end to end with dag.test(): events ingested from the real broker,
the check submitted with real spark-submit, results read back from dq_results."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from tests.dags.dag_helpers import parse_dag, task_states
from tests.helpers import binary_headers

DAG_ID = "eventlake_quality"
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "eventlake_quality.py"
GOOD_SOURCE = "/tests/quality-dag"
#: Not a URI reference: the source_uri_reference check (severity error) fails.
BAD_SOURCE = "not a uri"


@pytest.fixture
def quality_dag(airflow_env: Settings, airflow_db: None) -> Any:
    return parse_dag(DAG_FILE, DAG_ID)


def _ingest(spark: SparkSession, settings: Settings, topic: str, *, source: str) -> None:
    """Four valid binary CloudEvents of one source."""
    records: list[Record] = [
        (f"k{n}".encode(), b"{}", binary_headers(f"e{n}", source=source)) for n in range(4)
    ]
    create_topic(settings, topic)
    produce_all(settings, topic, records)
    run_ingest(spark, settings, IngestRequest(topics=(topic,)))


def _results(settings: Settings, topic: str) -> dict[str, bool]:
    """check name -> success, of the dq_results rows of one topic."""
    rows = DeltaTable(str(settings.table_path("dq_results"))).to_pyarrow_table().to_pylist()
    return {row["check"]: row["success"] for row in rows if row["topic"] == topic}


def test_run_on_conforming_events_succeeds_and_records_results(
    broker: LocalBroker,
    spark: SparkSession,
    quality_dag: Any,
    airflow_env: Settings,
    topic_name: str,
) -> None:
    _ingest(spark, airflow_env, topic_name, source=GOOD_SOURCE)

    dag_run = quality_dag.test(run_conf={"full": True, "topic": topic_name})

    assert str(dag_run.state) == "success", task_states(dag_run)
    results = _results(airflow_env, topic_name)
    assert results["source_uri_reference"] is True
    assert all(results.values()), results


def test_failed_error_check_fails_the_run(
    broker: LocalBroker,
    spark: SparkSession,
    quality_dag: Any,
    airflow_env: Settings,
    topic_name: str,
) -> None:
    _ingest(spark, airflow_env, topic_name, source=BAD_SOURCE)

    dag_run = quality_dag.test(run_conf={"topic": topic_name})

    assert str(dag_run.state) == "failed"
    assert task_states(dag_run)["check"] == {"failed"}
    assert _results(airflow_env, topic_name)["source_uri_reference"] is False


def test_dry_run_checks_nothing(quality_dag: Any, airflow_env: Settings) -> None:
    dag_run = quality_dag.test(run_conf={"dry_run": True})

    assert task_states(dag_run)["check"] == {"skipped"}
    assert not airflow_env.table_path("dq_results").exists()


def test_runs_when_ingest_updates_events_and_rejects(
    quality_dag: Any, airflow_env: Settings
) -> None:
    from airflow.sdk import AssetAll

    condition = quality_dag.timetable.asset_condition
    scheduled_on = {(asset.name, asset.uri) for asset in condition.objects}

    assert isinstance(condition, AssetAll)  # both tables updated: a finished ingest run
    assert scheduled_on == {
        ("eventlake.events", airflow_env.table_path("events").as_uri()),
        ("eventlake.rejects", airflow_env.table_path("rejects").as_uri()),
    }


def test_bad_topic_param_is_refused(quality_dag: Any) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    params = copy.deepcopy(quality_dag.params)
    with pytest.raises(ParamValidationError):
        params.update({"topic": "bad topic!"})
        params.validate()
