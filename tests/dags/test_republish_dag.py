"""The republish DAG, run end to end with dag.test(): its configured routes re-key a
topic on the real broker through one real spark-submit; the targets are read back with
Spark."""

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


def test_a_run_sends_its_routes_in_one_application_and_fails_a_refused_route_alone(
    broker: LocalBroker,
    spark: SparkSession,
    monkeypatch: pytest.MonkeyPatch,
    airflow_env: Settings,
    topic_name: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    by_customer, missing, copied = (
        f"{topic_name}.by-customer",
        f"{topic_name}-typo",
        f"{topic_name}.copy",
    )
    routes = [
        {"source": topic_name, "target": by_customer},
        {"source": missing, "target": f"{missing}.out"},
        {"source": topic_name, "target": copied, "key_mapper": "keep"},
    ]
    dag = _republish_dag(monkeypatch, routes)
    produced = _events(6)
    create_topic(airflow_env, topic_name, partitions=2)
    produce_all(airflow_env, topic_name, produced)

    dag_run = dag.test()

    tis = dag_run.get_task_instances()
    (republish,) = [ti for ti in tis if ti.task_id == "republish"]  # one spark-submit
    assert str(republish.state) == "success"
    per_route = {ti.rendered_map_index: str(ti.state) for ti in tis if ti.task_id == "route"}
    assert per_route == {
        f"{topic_name}>{by_customer}": "success",
        f"{missing}>{missing}.out": "failed",
        f"{topic_name}>{copied}": "success",
    }
    assert str(dag_run.state) == "failed"
    assert f"Topic '{missing}' does not exist" in "".join(capfd.readouterr())
    rows = read_topic(spark, airflow_env, by_customer)
    by_value = {bytes(row.value): row for row in rows}
    assert len(rows) == len(produced)
    for _, value, headers in produced:
        row = by_value[value]
        partitionkey = dict(headers)["ce_partitionkey"]
        assert bytes(row.key) == partitionkey
        ce_headers = [(h.key, bytes(h.value)) for h in row.headers if h.key.startswith("ce_")]
        assert ce_headers == [h for h in headers if h[0].startswith("ce_")]
    copies = read_topic(spark, airflow_env, copied)
    assert sorted(bytes(r.key) for r in copies) == sorted(key for key, _, _ in produced)


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
