"""The republish DAG, run end to end with dag.test(): a configured route re-keys a topic
on the real broker through real spark-submit; the target is read back with Spark."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from tests.dags.dag_helpers import parse_dag, task_states
from tests.helpers import binary_headers, read_topic

DAG_ID = "eventlake_republish"
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "eventlake_republish.py"


def _republish_dag(monkeypatch: pytest.MonkeyPatch, routes: list[dict[str, Any]]) -> Any:
    monkeypatch.setenv("EVENTLAKE_REPUBLISH_ROUTES", json.dumps(routes))
    return parse_dag(DAG_FILE, DAG_ID)


def _events(count: int) -> list[Record]:
    """Binary events keyed at random, each with a partitionkey of one of 3 customers."""
    return [
        (
            f"random-{n}".encode(),
            json.dumps({"n": n}).encode(),
            [*binary_headers(f"e{n}"), ("ce_partitionkey", f"customer-{n % 3}".encode())],
        )
        for n in range(count)
    ]


def test_run_rekeys_a_configured_route_by_partitionkey(
    broker: LocalBroker,
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    airflow_env: Settings,
    topic_name: str,
) -> None:
    target = f"{topic_name}.by-customer"
    dag = _republish_dag(monkeypatch, [{"source": topic_name, "target": target}])
    produced = _events(6)
    create_topic(airflow_env, topic_name, partitions=2)
    produce_all(airflow_env, topic_name, produced)

    dag_run = dag.test()

    assert str(dag_run.state) == "success", task_states(dag_run)
    rows = read_topic(spark, airflow_env, target)
    by_value = {bytes(row.value): row for row in rows}
    assert len(rows) == len(produced)
    for _, value, headers in produced:
        row = by_value[value]
        partitionkey = dict(headers)["ce_partitionkey"]
        assert bytes(row.key) == partitionkey
        ce_headers = [(h.key, bytes(h.value)) for h in row.headers if h.key.startswith("ce_")]
        assert ce_headers == [h for h in headers if h[0].startswith("ce_")]


def test_unconfigured_route_fails_before_submitting(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings
) -> None:
    dag = _republish_dag(monkeypatch, [{"source": "raw", "target": "orders"}])

    dag_run = dag.test(run_conf={"routes": ["raw>elsewhere"]})

    assert str(dag_run.state) == "failed"
    states = task_states(dag_run)
    assert states["plan"] == {"failed"}
    assert states["republish"] == {"upstream_failed"}


def test_no_configured_route_republishes_nothing(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings
) -> None:
    dag = _republish_dag(monkeypatch, [])

    dag_run = dag.test()

    assert str(dag_run.state) == "success"
    assert task_states(dag_run)["republish"] == {"skipped"}


def test_route_name_param_schema_refuses_a_bad_name(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings
) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    params = copy.deepcopy(_republish_dag(monkeypatch, []).params)
    with pytest.raises(ParamValidationError):
        params.update({"routes": ["no arrow here"]})
        params.validate()
