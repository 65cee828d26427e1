"""eventlake.orchestration.dag_parts: the parts every DAG file is made of. The DAGs made
of them, parsed and run: tests/dags."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG

from eventlake.core.settings import Settings
from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.dag_parts import (
    JobRefusal,
    KafkaSparkSubmitOperator,
    dag_arguments,
    job_refusal,
    job_script,
    plan_task,
    spark_submit,
    spark_submit_each,
)
from eventlake.spark.auth import SECRET_ENV
from tests.airflow_home import DAGS_FOLDER


def planner(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """Plan one submit per topic.

    Only the first paragraph is the task's doc.
    """
    assert isinstance(settings, Settings)
    return [{"application_args": ["--topic", topic]} for topic in params.get("topics", [])]


def test_dag_arguments_are_the_shared_ones_with_the_dags_retries_and_timeouts() -> None:
    args = dag_arguments("# doc", retries=2, retry_minutes=2, task_hours=0.5, run_hours=1)

    assert args == {
        "start_date": datetime(2026, 1, 1, tzinfo=UTC),
        "catchup": False,
        "max_active_runs": 1,
        "dagrun_timeout": timedelta(hours=1),
        "default_args": {
            "owner": "eventlake",
            "retries": 2,
            "retry_delay": timedelta(minutes=2),
            "execution_timeout": timedelta(minutes=30),
        },
        "tags": ["eventlake"],
        "doc_md": "# doc",
    }


def test_job_scripts_are_in_jobs_beside_dags() -> None:
    image = job_script("/opt/eventlake/dags/eventlake_ingest.py", "maintain.py")
    assert image == Path("/opt/eventlake/jobs/maintain.py")
    assert job_script(DAGS_FOLDER / "eventlake_ingest.py", "ingest_cloudevents.py").is_file()


def test_plan_task_is_not_retried_and_plans_from_the_runs_params() -> None:
    with DAG("plan_task", schedule=None) as dag:
        plan_task(planner)
        plan_task(planner, task_id="plan_one", single=True)
    plan, one = dag.get_task("plan"), dag.get_task("plan_one")

    assert (plan.retries, one.retries) == (0, 0)
    assert (plan.multiple_outputs, one.multiple_outputs) == (False, True)
    assert plan.doc_md == "Plan one submit per topic."
    assert plan.python_callable(params={"topics": ["a"]}) == [
        {"application_args": ["--topic", "a"]}
    ]
    assert plan.python_callable() == []


def test_spark_submit_pulls_each_argument_from_the_plan() -> None:
    with DAG("spark_submit", schedule=None) as dag:
        submit = plan_task(planner, single=True)
        spark_submit(Path("/jobs/check.py"), submit, task_id="check", retries=0)
    check = dag.get_task("check")

    assert isinstance(check, SparkSubmitOperator)
    assert (check.application, check.name, check.retries) == (
        "/jobs/check.py",
        "eventlake-check",
        0,
    )
    assert check.upstream_task_ids == {"plan"}
    assert (check.application_args.key, check.env_vars.key) == ("application_args", "env_vars")


def test_spark_submit_each_maps_one_at_a_time_labelled_by_the_first_argument() -> None:
    with DAG("spark_submit_each", schedule=None) as dag:
        spark_submit_each(Path("/jobs/ingest.py"), plan_task(planner), task_id="ingest")
    ingest = dag.get_task("ingest")

    assert ingest.partial_kwargs["application"] == "/jobs/ingest.py"
    assert ingest.partial_kwargs["conn_id"] == "spark_default"
    assert ingest.partial_kwargs["name"] == "eventlake-ingest"
    assert ingest.max_active_tis_per_dagrun == 1
    assert ingest.map_index_template == "{{ task.application_args[1] }}"
    assert ingest.upstream_task_ids == {"plan"}


def test_spark_submits_pass_their_openlineage_parent_but_not_the_transport() -> None:
    """The job's lineage names the task as its parent run (ids only, as spark confs);
    the transport (possibly an API key) is never put on the command line."""
    with DAG("spark_submit_lineage", schedule=None) as dag:
        spark_submit(Path("/jobs/check.py"), plan_task(planner, single=True), task_id="check")
        spark_submit_each(Path("/jobs/ingest.py"), plan_task(planner, task_id="p"), task_id="i")
    check, ingest = dag.get_task("check"), dag.get_task("i")

    assert (
        check._openlineage_inject_parent_job_info,
        check._openlineage_inject_transport_info,
    ) == (
        True,
        False,
    )
    assert ingest.partial_kwargs["openlineage_inject_parent_job_info"] is True
    assert ingest.partial_kwargs["openlineage_inject_transport_info"] is False


@pytest.mark.parametrize(
    ("connection", "on_command_line"),
    [
        ({"conn_type": "spark", "host": "yarn"}, True),
        ({"conn_type": "spark", "host": "k8s://https://kube.example:6443"}, True),
        ({"conn_type": "spark", "host": "spark://master.example", "port": 7077}, False),
        ({"conn_type": "spark", "host": "local[*]"}, False),
        ("yarn://resourcemanager.example", True),
        ("k8s://https%3A%2F%2Fkube.example:6443", True),
        ("spark://master.example:7077", False),
    ],
    ids=["host-yarn", "host-k8s", "host-spark", "host-local", "uri-yarn", "uri-k8s", "uri-spark"],
)
def test_the_guard_asks_the_providers_hook_where_env_vars_go(
    monkeypatch: pytest.MonkeyPatch, connection: object, on_command_line: bool
) -> None:
    from eventlake.orchestration.dag_parts import env_on_the_command_line

    value = json.dumps(connection) if isinstance(connection, dict) else connection
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_PROBE", value)

    assert env_on_the_command_line("spark_probe")[0] is on_command_line


SPARK_SECRET = "spark-" + "fedcba9876543210"


def _submit_on_a_cluster(monkeypatch: pytest.MonkeyPatch, connection: dict[str, Any]) -> Any:
    """Run the spark-submit operator (kafka_default absent) with the provider's execute
    replaced by a recorder of the environment and of the command line its hook builds."""
    monkeypatch.delenv("AIRFLOW_CONN_KAFKA_DEFAULT", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(connection))
    seen: dict[str, Any] = {}

    def record(operator: SparkSubmitOperator, context: Any) -> None:
        seen["env"] = dict(operator.env_vars or {})
        seen["command"] = operator._get_hook()._build_spark_submit_command("job.py")

    monkeypatch.setattr(SparkSubmitOperator, "execute", record)
    operator = KafkaSparkSubmitOperator(
        task_id="ingest", application="job.py", env_vars={"EVENTLAKE_WAREHOUSE": "/w"}
    )
    operator.execute({})
    seen["env_after"] = operator.env_vars
    return seen


def test_the_spark_connections_password_reaches_the_job_in_its_environment_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection = {"conn_type": "spark", "host": "spark://m", "port": 7077}

    seen = _submit_on_a_cluster(monkeypatch, {**connection, "password": SPARK_SECRET})

    assert seen["env"] == {"EVENTLAKE_WAREHOUSE": "/w", SECRET_ENV: SPARK_SECRET}
    assert not any(SPARK_SECRET in part for part in seen["command"])
    assert seen["env_after"] == {"EVENTLAKE_WAREHOUSE": "/w"}


def test_a_spark_connection_without_a_password_adds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _submit_on_a_cluster(monkeypatch, {"conn_type": "spark", "host": "spark://m"})

    assert seen["env"] == {"EVENTLAKE_WAREHOUSE": "/w"}


def test_the_spark_secret_is_refused_where_it_would_be_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(OrchestrationError, match="spark_default connection's password"):
        _submit_on_a_cluster(monkeypatch, {"conn_type": "spark", "host": "yarn", "password": "x"})


def _submit_failure(code: int, *output: str) -> Exception:
    """A failed spark-submit as the provider's hook reports it (the format
    tests/dags/test_ingest_dag.py meets from the real hook)."""
    tail = "\n".join(output)
    return Exception(f"Cannot execute: spark-submit job.py. Error code is: {code}.\n{tail}")


@pytest.mark.parametrize(("code", "may_pass_later"), [(2, False), (75, True)])
def test_a_jobs_refusal_is_its_sentence_and_whether_a_later_run_may_pass(
    code: int, may_pass_later: bool
) -> None:
    failure = _submit_failure(code, "Last spark-submit output:", "error: no broker", "bye")

    assert job_refusal(failure) == JobRefusal("no broker", may_pass_later)


@pytest.mark.parametrize(
    "failure",
    [_submit_failure(1, "error: a crash"), _submit_failure(2, "Usage: spark-submit")],
    ids=["exit 1", "no error line"],
)
def test_a_job_that_failed_otherwise_is_no_refusal(failure: Exception) -> None:
    assert job_refusal(failure) is None


@pytest.mark.parametrize(
    ("code", "failure", "said"),
    [(2, "AirflowFailException", "refused the run"), (75, "AirflowException", "could not run now")],
    ids=["not retried", "retried"],
)
def test_a_refused_submit_fails_with_the_jobs_sentence_retried_only_when_it_may_pass(
    monkeypatch: pytest.MonkeyPatch, code: int, failure: str, said: str
) -> None:
    from airflow.sdk.exceptions import AirflowException

    operator = KafkaSparkSubmitOperator(task_id="ingest", application="jobs/ingest.py")
    refusal = _submit_failure(code, "error: Kafka at k:9092 does not answer")

    def submit(context: Any) -> None:
        raise AirflowException(str(refusal))

    monkeypatch.setattr(operator, "_submit_with_credentials", submit)

    with pytest.raises(AirflowException) as raised:
        operator.execute({})
    # Airflow retries an AirflowException and fails an AirflowFailException at once.
    assert type(raised.value).__name__ == failure
    assert str(raised.value) == f"ingest.py {said}: Kafka at k:9092 does not answer"
