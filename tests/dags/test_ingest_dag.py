"""The ingest DAG, run end to end with dag.test(): real broker, real spark-submit."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from eventlake.broker import LocalBroker
from eventlake.kafka import create_topic, make_producer
from eventlake.settings import Settings

DAG_ID = "eventlake_ingest"
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "eventlake_ingest.py"
EVENT_COUNT = 5


@pytest.fixture
def airflow_env(monkeypatch: pytest.MonkeyPatch, warehouse_settings: Settings) -> Settings:
    """The worker environment the DAG reads: test broker, a fresh warehouse, a local
    master in spark_default, and spark-submit (from the pyspark wheel) on PATH."""
    settings = warehouse_settings
    for name, value in {
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
        "EVENTLAKE_DRIVER_MEMORY": settings.driver_memory,
        "EVENTLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }.items():
        monkeypatch.setenv(name, value)
    return settings


@pytest.fixture
def ingest_dag(airflow_env: Settings, airflow_db: None) -> Any:
    """The DAG parsed after the environment is set, as the dag-processor would."""
    from airflow.dag_processing.dagbag import DagBag

    dagbag = DagBag(dag_folder=str(DAG_FILE))
    assert dagbag.import_errors == {}
    return dagbag.dags[DAG_ID]


def _produce_binary_events(settings: Settings, topic: str, count: int) -> list[str]:
    create_topic(settings, topic)
    producer = make_producer(settings)
    ids = [f"evt-{n}" for n in range(count)]
    for event_id in ids:
        headers = [
            ("ce_specversion", b"1.0"),
            ("ce_id", event_id.encode()),
            ("ce_source", b"/tests/airflow"),
            ("ce_type", b"test.airflow.ingest"),
        ]
        producer.produce(topic, key=event_id.encode(), value=b'{"n": 1}', headers=headers)
    assert producer.flush(30) == 0
    return ids


def _states(dag_run: Any) -> dict[str, set[str]]:
    states: dict[str, set[str]] = {}
    for ti in dag_run.get_task_instances():
        states.setdefault(ti.task_id, set()).add(str(ti.state))
    return states


def test_run_lands_produced_events_in_events_table(
    broker: LocalBroker, ingest_dag: Any, airflow_env: Settings, topic_name: str
) -> None:
    ids = _produce_binary_events(airflow_env, topic_name, EVENT_COUNT)

    dag_run = ingest_dag.test(run_conf={"topics": [topic_name]})

    assert str(dag_run.state) == "success", _states(dag_run)
    events = DeltaTable(str(airflow_env.table_path("events"))).to_pyarrow_table().to_pylist()
    assert sorted((e["id"], e["kafka_topic"]) for e in events) == [(i, topic_name) for i in ids]


def test_dry_run_submits_nothing(ingest_dag: Any, airflow_env: Settings, topic_name: str) -> None:
    dag_run = ingest_dag.test(run_conf={"topics": [topic_name], "dry_run": True})

    assert _states(dag_run)["ingest"] == {"skipped"}
    assert not airflow_env.table_path("events").exists()


def test_bad_topic_param_is_refused_before_a_run_exists(ingest_dag: Any) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.sdk.exceptions import ParamValidationError

    runs_before = len(DagRun.find(dag_id=DAG_ID))
    with pytest.raises(ParamValidationError, match="topics"):
        ingest_dag.test(run_conf={"topics": ["bad topic!"]})
    assert len(DagRun.find(dag_id=DAG_ID)) == runs_before


def test_ingest_updates_events_and_rejects_assets(ingest_dag: Any, airflow_env: Settings) -> None:
    outlets = {(asset.name, asset.uri) for asset in ingest_dag.get_task("ingest").outlets}
    assert outlets == {
        ("eventlake.events", airflow_env.table_path("events").as_uri()),
        ("eventlake.rejects", airflow_env.table_path("rejects").as_uri()),
    }


@pytest.mark.parametrize(
    "conf",
    [{"topics": []}, {"ending_offsets": "earliest"}, {"dry_run": "yes"}],
    ids=["no-topics", "ending-earliest", "dry-run-not-boolean"],
)
def test_param_schema_refuses(ingest_dag: Any, conf: dict[str, Any]) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    params = copy.deepcopy(ingest_dag.params)
    with pytest.raises(ParamValidationError):
        params.update(conf)
        params.validate()
