"""Lineage through Airflow: the quality DAG run with dag.test() and OpenLineage's file
transport in the worker's environment. Airflow's OpenLineage listener emits the task's
events; the spark-submit task passes its identity to the job
(openlineage_inject_parent_job_info), whose own events name it as their parent run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from tests.helpers import binary_headers

DAG_ID = "eventlake_quality"
REPO = Path(__file__).resolve().parents[2]
DAG_FILE = REPO / "dags" / "eventlake_quality.py"


@pytest.fixture
def lineage_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lineage.jsonl"
    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(path))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    # Airflow's listener emits a task's events from a forked process and gives up on it
    # after [openlineage] execution_timeout (10 s): too short on a busy 2-core machine.
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__EXECUTION_TIMEOUT", "120")
    return path


def _events_of(path: Path, job: str, wanted: set[str], seconds: float = 60.0) -> list[Any]:
    """The events of ``job`` in the file, waiting (at most ``seconds``) until they hold
    every type in ``wanted``: the listener's emitting process may still be writing."""
    deadline = time.monotonic() + seconds
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        events = [e for e in map(json.loads, lines) if e["job"]["name"] == job]
        if {e["eventType"] for e in events} >= wanted or time.monotonic() > deadline:
            return events
        time.sleep(0.5)


def _dag_test_in_a_fresh_interpreter(run_conf: dict[str, Any]) -> dict[str, Any]:
    """``dag.test(run_conf)`` of the quality DAG in a new Python process with this test's
    environment; its final state and task states."""
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from tests.dags.dag_helpers import parse_dag, task_states\n"
        f"dag = parse_dag(Path({str(DAG_FILE)!r}), {DAG_ID!r})\n"
        f"run = dag.test(run_conf=json.loads({json.dumps(run_conf)!r}))\n"
        "tasks = {k: sorted(v) for k, v in task_states(run).items()}\n"
        "print('dag-test-result', json.dumps({'state': str(run.state), 'tasks': tasks}))\n"
    )
    paths = [str(REPO), str(REPO / "lib"), os.environ.get("PYTHONPATH", "")]
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Airflow logs to stdout too: the result is the line the script marked.
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("dag-test-result ")]
    result: dict[str, Any] = json.loads(line.removeprefix("dag-test-result "))
    return result


def test_the_check_job_names_its_airflow_task_as_parent(
    broker: LocalBroker,
    spark: SparkSession,
    airflow_env: Settings,
    topic_name: str,
    lineage_file: Path,
) -> None:
    settings = airflow_env
    create_topic(settings, topic_name)
    records: list[Record] = [(b"k", b"{}", binary_headers(f"e{n}")) for n in range(3)]
    produce_all(settings, topic_name, records)
    run_ingest(spark, settings, IngestRequest(topics=(topic_name,)))
    lineage_file.unlink(missing_ok=True)  # only the DAG's events from here

    # The DAG runs in an interpreter of its own, as a worker's would: Airflow's OpenLineage
    # plugin decides at its import whether to listen, and its client keeps the transport
    # it was made with, so a DAG test run earlier in this process would silence it.
    state = _dag_test_in_a_fresh_interpreter({"full": True, "topic": topic_name})
    assert state["state"] == "success", state

    events = [json.loads(line) for line in lineage_file.read_text().splitlines()]
    job_events = [e for e in events if e["job"]["name"] == f"check.events.{topic_name}"]
    assert [e["eventType"] for e in job_events] == ["START", "COMPLETE"]
    parent = job_events[0]["run"]["facets"]["parent"]
    assert parent["job"]["name"] == f"{DAG_ID}.check"
    assert parent["root"]["job"]["name"] == DAG_ID
    # Airflow's OpenLineage listener emitted the task's own events (same transport): the
    # job's parent is that task run, and its root the DAG run the task names as parent.
    # (The DAG run's own events may come after dag.test() returns: not awaited here.)
    task_events = _events_of(lineage_file, f"{DAG_ID}.check", {"START", "COMPLETE"})
    assert {e["eventType"] for e in task_events} >= {"START", "COMPLETE"}
    assert {e["run"]["runId"] for e in task_events} == {parent["run"]["runId"]}
    dag_run_ids = {e["run"]["facets"]["parent"]["run"]["runId"] for e in task_events}
    assert dag_run_ids == {parent["root"]["run"]["runId"]}
