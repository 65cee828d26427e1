"""eventlake.orchestration.dry_run: the DAGs' shared "log the commands; a dry run stops
here" task. Its runs in the DAGs: tests/dags (test_ingest_dag, test_quality_dag)."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.providers.standard.operators.python import ShortCircuitOperator
from airflow.sdk import DAG, task

from eventlake.orchestration.dry_run import TASK_ID, log_commands, submit_unless_dry_run

SUBMIT = {"application_args": ["--topic", "a"], "env_vars": {"E": "1"}}


def test_log_commands_says_what_will_run_and_lets_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert log_commands("job.py", [SUBMIT, SUBMIT], dry_run=False) is True
    assert (
        capsys.readouterr().out.splitlines() == ["will run: E=1 spark-submit job.py --topic a"] * 2
    )


def test_log_commands_of_a_dry_run_stop_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert log_commands("job.py", [SUBMIT], dry_run=True) is False
    assert capsys.readouterr().out == "dry run, would run: E=1 spark-submit job.py --topic a\n"


def _gate_after(plan_output: Any) -> Any:
    with DAG("dry_run_gate", schedule=None) as dag:

        @task
        def plan() -> Any:
            return plan_output

        submit_unless_dry_run("job.py", plan())
    return dag.get_task(TASK_ID)


def test_the_task_short_circuits_after_the_plan() -> None:
    gate = _gate_after([SUBMIT])
    assert isinstance(gate, ShortCircuitOperator)
    assert gate.task_id == "submit_unless_dry_run"
    assert gate.upstream_task_ids == {"plan"}


@pytest.mark.parametrize("plan", [[SUBMIT], SUBMIT], ids=["list-of-submits", "one-submit"])
def test_the_task_reads_dry_run_from_the_params(
    plan: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = _gate_after(plan)

    assert gate.python_callable(plan, params={"dry_run": True}) is False
    assert gate.python_callable(plan, params={}) is True
    assert gate.python_callable(plan) is True
    assert capsys.readouterr().out.splitlines() == [
        "dry run, would run: E=1 spark-submit job.py --topic a",
        "will run: E=1 spark-submit job.py --topic a",
        "will run: E=1 spark-submit job.py --topic a",
    ]
