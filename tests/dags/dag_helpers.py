"""Helpers of the DAG tests: parse a DAG file, read a run's task states."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def parse_dag(dag_file: Path, dag_id: str) -> Any:
    """A DAG file parsed as the dag-processor would (after the test set the environment)."""
    from airflow.dag_processing.dagbag import DagBag

    dagbag = DagBag(dag_folder=str(dag_file))
    assert dagbag.import_errors == {}
    return dagbag.dags[dag_id]


def task_states(dag_run: Any) -> dict[str, set[str]]:
    """Task id -> the states of its instances (several for a mapped task)."""
    states: dict[str, set[str]] = {}
    for ti in dag_run.get_task_instances():
        states.setdefault(ti.task_id, set()).add(str(ti.state))
    return states
