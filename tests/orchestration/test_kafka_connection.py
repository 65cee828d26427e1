"""eventlake.orchestration.kafka_connection: the kafka_default connection's config dict
as eventlake's Kafka settings, and the password only in the spark-submit's environment.
The DAG run over SCRAM with the connection: tests/dags/test_kafka_connection_dag.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG
from pydantic import SecretStr

from eventlake.core.settings import Settings
from eventlake.orchestration import OrchestrationError, plan_ingest
from eventlake.orchestration.connections import task_settings
from eventlake.orchestration.dag_parts import KafkaSparkSubmitOperator, plan_task
from eventlake.orchestration.kafka_connection import (
    KafkaConnection,
    kafka_job_env,
    parse_kafka_config,
    read_kafka_connection,
    with_kafka_connection,
)

PASSWORD = "pw-" + "0123456789abcdef"
SCRAM_CONFIG = {
    "bootstrap.servers": "kafka:9094",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "app",
    "sasl.password": PASSWORD,
}
SCRAM_OPTIONS = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "app",
}


def _define_connection(
    monkeypatch: pytest.MonkeyPatch, conn_type: str = "kafka", **conn: Any
) -> None:
    """kafka_default as an AIRFLOW_CONN_ variable (JSON), as docker-compose defines it."""
    value = {"conn_type": conn_type, "extra": SCRAM_CONFIG, **conn}
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", json.dumps(value))


# -- the pure mapping -----------------------------------------------------------------------


def test_scram_config_splits_into_servers_options_and_password() -> None:
    kafka = parse_kafka_config(SCRAM_CONFIG)

    assert kafka.bootstrap_servers == "kafka:9094"
    assert kafka.options == SCRAM_OPTIONS
    assert kafka.password is not None and kafka.password.get_secret_value() == PASSWORD
    assert PASSWORD not in repr(kafka)


def test_values_become_the_strings_the_clients_read() -> None:
    kafka = parse_kafka_config(
        {
            "bootstrap.servers": " a:1,b:2 ",
            "sasl.mechanisms": "PLAIN",
            "enable.idempotence": True,
            "request.timeout.ms": 30000,
        }
    )

    assert kafka.bootstrap_servers == "a:1,b:2"
    assert kafka.options == {
        "sasl.mechanism": "PLAIN",
        "enable.idempotence": "true",
        "request.timeout.ms": "30000",
    }
    assert kafka.password is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"security.protocol": "SASL_SSL"}, 'needs "bootstrap.servers"'),
        ({"bootstrap.servers": ""}, 'needs "bootstrap.servers"'),
        ({"bootstrap.servers": "k:1", "oauth_cb": "pkg.token"}, "oauth_cb is a client callback"),
        ({"bootstrap.servers": "k:1", "ssl": {"ca": "x"}}, "option ssl is"),
        ({"bootstrap.servers": "k:1", "sasl.password": 42}, "sasl.password is not a string"),
    ],
    ids=["no-servers", "empty-servers", "callback", "nested", "password-not-text"],
)
def test_what_cannot_reach_a_spark_job_is_refused_naming_the_connection(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(OrchestrationError, match="'kafka_default'") as error:
        parse_kafka_config(config)
    assert message in str(error.value)


def test_the_connection_replaces_servers_and_options_and_its_password_wins(
    settings: Settings,
) -> None:
    worker = settings.model_copy(
        update={
            "kafka_options": {"security.protocol": "SSL", "ssl.ca.location": "/ca.pem"},
            "kafka_password": SecretStr("worker-password"),
        }
    )

    merged = with_kafka_connection(worker, parse_kafka_config(SCRAM_CONFIG))

    assert merged.bootstrap_servers == "kafka:9094"
    # One cluster's address never meets another's security options.
    assert merged.kafka_options == SCRAM_OPTIONS
    assert merged.kafka_password == SecretStr(PASSWORD)
    assert merged.warehouse == settings.warehouse


def test_without_a_password_in_the_connection_the_workers_stays(settings: Settings) -> None:
    worker = settings.model_copy(update={"kafka_password": SecretStr("worker-password")})

    merged = with_kafka_connection(worker, KafkaConnection("kafka:9094", {"sasl.username": "a"}))

    assert merged.kafka_password == SecretStr("worker-password")
    assert with_kafka_connection(worker, None) is worker


def test_job_env_gives_the_password_only_when_the_connection_has_one() -> None:
    assert kafka_job_env(parse_kafka_config(SCRAM_CONFIG)) == {
        "EVENTLAKE_BOOTSTRAP_SERVERS": "kafka:9094",
        "EVENTLAKE_KAFKA_OPTIONS": json.dumps(SCRAM_OPTIONS),
        "EVENTLAKE_KAFKA_PASSWORD": PASSWORD,
    }
    # Empty options too: the worker's own would be another cluster's.
    assert kafka_job_env(KafkaConnection("k:1")) == {
        "EVENTLAKE_BOOTSTRAP_SERVERS": "k:1",
        "EVENTLAKE_KAFKA_OPTIONS": "{}",
    }


# -- reading the connection through the Kafka provider ------------------------------------


def test_no_connection_reads_as_none_and_leaves_the_environments_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_KAFKA_DEFAULT", raising=False)
    monkeypatch.setenv("EVENTLAKE_BOOTSTRAP_SERVERS", "worker:9092")

    assert read_kafka_connection() is None
    assert task_settings().bootstrap_servers == "worker:9092"


def test_connection_from_an_airflow_conn_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    _define_connection(monkeypatch)
    monkeypatch.setenv("EVENTLAKE_BOOTSTRAP_SERVERS", "worker:9092")

    assert read_kafka_connection() == parse_kafka_config(SCRAM_CONFIG)
    settings = task_settings()
    assert (settings.bootstrap_servers, settings.kafka_options) == ("kafka:9094", SCRAM_OPTIONS)


def test_a_connection_of_another_type_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _define_connection(monkeypatch, conn_type="generic")

    with pytest.raises(OrchestrationError, match="of type 'generic'"):
        read_kafka_connection()


# -- the DAG parts: the plan (an XCom) without the password, the submit with it -------------


def test_plan_has_the_connections_servers_and_never_its_password(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _define_connection(monkeypatch)
    monkeypatch.setenv("EVENTLAKE_WAREHOUSE", str(tmp_path / "warehouse"))
    with DAG("plan_with_kafka_connection", schedule=None) as dag:
        plan_task(plan_ingest)

    plan = dag.get_task("plan").python_callable(params={"topics": ["orders"]})

    assert plan[0]["env_vars"]["EVENTLAKE_BOOTSTRAP_SERVERS"] == "kafka:9094"
    assert PASSWORD not in json.dumps(plan)


def _run_capturing_env(
    monkeypatch: pytest.MonkeyPatch, **operator_kwargs: Any
) -> tuple[dict[str, str], Any]:
    """Execute a KafkaSparkSubmitOperator with SparkSubmitOperator.execute replaced by a
    recorder: the env_vars it would hand to spark-submit; and the operator."""
    seen: dict[str, str] = {}

    def record(operator: SparkSubmitOperator, context: Any) -> None:
        seen.update(operator.env_vars or {})

    monkeypatch.setattr(SparkSubmitOperator, "execute", record)
    operator = KafkaSparkSubmitOperator(
        task_id="ingest",
        application="job.py",
        env_vars={"EVENTLAKE_WAREHOUSE": "/w"},
        **operator_kwargs,
    )
    operator.execute({})
    return seen, operator


def test_submit_gets_the_password_in_its_environment_only_while_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define_connection(monkeypatch)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )

    seen, operator = _run_capturing_env(monkeypatch)

    assert seen == {"EVENTLAKE_WAREHOUSE": "/w", **kafka_job_env(parse_kafka_config(SCRAM_CONFIG))}
    assert operator.env_vars == {"EVENTLAKE_WAREHOUSE": "/w"}


def test_submit_without_the_connection_is_spark_submits_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_KAFKA_DEFAULT", raising=False)

    seen, _ = _run_capturing_env(monkeypatch)

    assert seen == {"EVENTLAKE_WAREHOUSE": "/w"}


def test_submit_of_a_job_without_kafka_gets_no_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define_connection(monkeypatch)

    seen, _ = _run_capturing_env(monkeypatch, kafka_conn_id=None)

    assert seen == {"EVENTLAKE_WAREHOUSE": "/w"}


def test_submit_refuses_a_master_that_puts_the_environment_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define_connection(monkeypatch)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "yarn"})
    )

    with pytest.raises(OrchestrationError, match="--conf argument"):
        _run_capturing_env(monkeypatch)
