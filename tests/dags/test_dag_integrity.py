"""Every DAG file imports cleanly and every DAG carries the metadata we rely on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from airflow.dag_processing.dagbag import DagBag

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"


def _dagbag() -> DagBag:
    # safe_mode=False: import every .py file, not only those that mention "dag".
    return DagBag(dag_folder=str(DAGS_FOLDER), safe_mode=False)


def _dags() -> list[Any]:
    return sorted(_dagbag().dags.values(), key=lambda dag: dag.dag_id)


def test_every_dag_file_imports_without_errors() -> None:
    dagbag = _dagbag()
    assert dagbag.import_errors == {}
    assert {Path(f).name for f in dagbag.file_last_changed} == {
        path.name for path in DAGS_FOLDER.glob("*.py")
    }
    assert dagbag.dags


@pytest.mark.parametrize("dag", _dags(), ids=lambda dag: dag.dag_id)
def test_dag_has_tags(dag: Any) -> None:
    assert dag.tags


@pytest.mark.parametrize("dag", _dags(), ids=lambda dag: dag.dag_id)
def test_dag_retries_at_least_once(dag: Any) -> None:
    assert dag.default_args.get("retries", 0) >= 1


@pytest.mark.parametrize("dag", _dags(), ids=lambda dag: dag.dag_id)
def test_dag_has_doc_md(dag: Any) -> None:
    assert dag.doc_md and dag.doc_md.strip()


@pytest.mark.parametrize(
    "dag",
    [dag for dag in _dags() if dag.has_task("submit_unless_dry_run")],
    ids=lambda dag: dag.dag_id,
)
def test_dry_run_stop_is_the_shared_task(dag: Any) -> None:
    """Written once (eventlake.orchestration.dry_run), not a copy per DAG file."""
    gate = dag.get_task("submit_unless_dry_run")
    assert gate.python_callable.__module__ == "eventlake.orchestration.dry_run"
