"""eventlake.orchestration.object_store_connection: the aws_default connection as the
warehouse's object store, and its keys only in the spark-submit's environment. The DAGs
run with it on the S3 server in the cluster tier (tests/cluster)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG

from eventlake.core.locations import Location
from eventlake.local.s3_server import LocalS3Server
from eventlake.orchestration import OrchestrationError, plan_ingest
from eventlake.orchestration.connections import task_settings
from eventlake.orchestration.dag_parts import KafkaSparkSubmitOperator, plan_task
from eventlake.orchestration.object_store_connection import (
    parse_aws_connection,
    read_object_store_connection,
)

SECRET = "secret-" + "0123456789abcdef"
EXTRA = {
    "endpoint_url": "http://object-store:9000",
    "region_name": "eu-west-1",
    "config_kwargs": {"s3": {"addressing_style": "path"}},
}


def _define_connection(
    monkeypatch: pytest.MonkeyPatch, conn_type: str = "aws", **conn: Any
) -> None:
    """aws_default as an AIRFLOW_CONN_ variable (JSON), as docker-compose defines it."""
    value = {"conn_type": conn_type, "login": "AKIAEXAMPLE", "password": SECRET, "extra": EXTRA}
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps({**value, **conn}))


# -- the pure mapping -----------------------------------------------------------------------


def test_the_connections_fields_become_the_object_store_settings() -> None:
    store = parse_aws_connection("AKIAEXAMPLE", SECRET, EXTRA)

    assert (store.s3_endpoint, store.s3_region, store.s3_path_style) == (
        "http://object-store:9000",
        "eu-west-1",
        True,
    )
    assert store.s3_access_key_id is not None and store.s3_secret_access_key is not None
    assert store.s3_secret_access_key.get_secret_value() == SECRET


def test_the_endpoint_may_be_given_per_service() -> None:
    extra = {"service_config": {"s3": {"endpoint_url": "http://s3.internal:9000"}}}

    assert parse_aws_connection(None, None, extra).s3_endpoint == "http://s3.internal:9000"


def test_without_keys_or_extra_the_aws_defaults_stay() -> None:
    store = parse_aws_connection(None, None, {})

    assert (store.s3_endpoint, store.s3_region, store.s3_path_style) == (None, "us-east-1", False)
    assert store.s3_access_key_id is None


@pytest.mark.parametrize(
    ("login", "password", "extra", "message"),
    [
        ("AKIA", None, {}, "half a key pair"),
        (None, None, {"config_kwargs": {"s3": {"addressing_style": "sideways"}}}, "sideways"),
        (None, None, {"endpoint_url": 9000}, "not a string"),
    ],
    ids=["half-a-key-pair", "addressing-style", "endpoint-not-a-string"],
)
def test_what_cannot_reach_a_job_is_refused_naming_the_connection(
    login: str | None, password: str | None, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(OrchestrationError, match="'aws_default'") as refused:
        parse_aws_connection(login, password, extra)
    assert message in str(refused.value)


def test_the_environment_it_hands_on_replaces_every_field_of_the_workers() -> None:
    env = parse_aws_connection(None, None, {}).environment()

    assert env["EVENTLAKE_S3_ENDPOINT"] == "" and env["EVENTLAKE_S3_ACCESS_KEY_ID"] == ""


# -- reading the connection, the plan and the submit ---------------------------------------


def test_no_connection_reads_as_none_and_leaves_the_workers_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_AWS_DEFAULT", raising=False)
    monkeypatch.setenv("EVENTLAKE_S3_ENDPOINT", "http://worker:9000")

    assert read_object_store_connection() is None
    assert task_settings().s3_endpoint == "http://worker:9000"


def test_a_connection_of_another_type_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _define_connection(monkeypatch, conn_type="generic")

    with pytest.raises(OrchestrationError, match="of type 'generic'"):
        read_object_store_connection()


def test_a_tasks_settings_and_its_store_take_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define_connection(monkeypatch)
    for name in parse_aws_connection(None, None, {}).environment():
        monkeypatch.setenv(name, os.environ.get(name, ""))  # restored after the test

    settings = task_settings()

    assert (settings.s3_endpoint, settings.s3_region) == ("http://object-store:9000", "eu-west-1")
    # The warehouse's store (delta-rs, boto3) in this process reads the environment.
    from eventlake.storage import s3_store

    assert s3_store.connection().s3_endpoint == "http://object-store:9000"


def _use_the_s3_server(monkeypatch: pytest.MonkeyPatch, server: LocalS3Server) -> Any:
    """aws_default naming the test S3 server, and the worker's EVENTLAKE_S3_* emptied
    (restored after the test): only the connection can reach the server."""
    store = server.connection()
    assert store.s3_access_key_id and store.s3_secret_access_key
    _define_connection(
        monkeypatch,
        login=store.s3_access_key_id.get_secret_value(),
        password=store.s3_secret_access_key.get_secret_value(),
        extra={
            "endpoint_url": store.s3_endpoint,
            "config_kwargs": {"s3": {"addressing_style": "path"}},
        },
    )
    for name in store.environment():
        monkeypatch.setenv(name, "")
    return store


def test_plan_reaches_the_warehouse_with_the_connection_and_never_holds_the_keys(
    monkeypatch: pytest.MonkeyPatch, s3_server: LocalS3Server, s3_warehouse: Location
) -> None:
    store = _use_the_s3_server(monkeypatch, s3_server)
    monkeypatch.setenv("EVENTLAKE_WAREHOUSE", str(s3_warehouse))
    with DAG("plan_with_aws_connection", schedule=None) as dag:
        plan_task(plan_ingest)

    plan = dag.get_task("plan").python_callable(params={"topics": ["orders"]})

    assert plan[0]["conf"]["spark.hadoop.fs.s3a.endpoint"] == store.s3_endpoint
    assert plan[0]["env_vars"]["EVENTLAKE_WAREHOUSE"] == str(s3_warehouse)
    assert store.s3_secret_access_key.get_secret_value() not in json.dumps(plan)
    assert store.s3_access_key_id.get_secret_value() not in json.dumps(plan)


def test_submit_gets_the_keys_in_its_environment_only_while_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define_connection(monkeypatch)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    seen: dict[str, str] = {}

    def record(operator: SparkSubmitOperator, context: Any) -> None:
        seen.update(operator.env_vars or {})

    monkeypatch.setattr(SparkSubmitOperator, "execute", record)
    operator = KafkaSparkSubmitOperator(
        task_id="ingest", application="job.py", env_vars={"EVENTLAKE_WAREHOUSE": "s3a://lake/wh"}
    )
    operator.execute({})

    assert seen["EVENTLAKE_S3_SECRET_ACCESS_KEY"] == SECRET
    assert seen["EVENTLAKE_S3_ENDPOINT"] == "http://object-store:9000"
    assert operator.env_vars == {"EVENTLAKE_WAREHOUSE": "s3a://lake/wh"}


def test_a_connection_built_from_settings_reads_back_as_those_settings() -> None:
    store = parse_aws_connection("AKIAEXAMPLE", SECRET, EXTRA)
    built = store.airflow_connection()

    assert built["conn_type"] == "aws"
    assert parse_aws_connection(built["login"], built["password"], built["extra"]) == store
