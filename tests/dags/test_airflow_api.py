"""The ad-hoc path a user takes in the UI, through Airflow's REST API on a real deployment
(api-server, scheduler with LocalExecutor, dag-processor): unpause, trigger with a run
conf, poll until the run ends, read the result; and a conf breaking a Param's schema."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.dags.airflow_server import AirflowServer, airflow_server  # noqa: F401

DAG_ID = "eventlake_ingest"
RUN_TIMEOUT = 300.0


@pytest.fixture(scope="module")
def ingest_dag_ready(airflow_server: AirflowServer) -> AirflowServer:  # noqa: F811
    """The ingest DAG parsed and unpaused through the API (PATCH is_paused=false)."""
    airflow_server.wait_for_dag(DAG_ID)
    response = airflow_server.request("PATCH", f"/api/v2/dags/{DAG_ID}", {"is_paused": False})
    assert response.status_code == 200, response.text
    assert response.json()["is_paused"] is False
    return airflow_server


def _trigger(server: AirflowServer, conf: dict[str, Any]) -> Any:
    """The raw response: these tests look at refusals too (LocalAirflow.trigger raises)."""
    return server.request(
        "POST", f"/api/v2/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": conf}
    )


def _run_to_end(server: AirflowServer, run_id: str) -> dict[str, Any]:
    """Poll the run until it leaves queued/running; its final JSON."""
    final: dict[str, Any] = {}

    def finished() -> bool:
        response = server.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")
        final.update(response.json())
        return final.get("state") in {"success", "failed"}

    server.wait_until(f"run {run_id}", finished, RUN_TIMEOUT)
    return final


def test_triggered_dry_run_succeeds_with_the_conf_it_was_given(
    ingest_dag_ready: AirflowServer,
) -> None:
    server = ingest_dag_ready
    topic = f"api-{uuid.uuid4().hex[:8]}"
    triggered = _trigger(server, {"topics": [topic], "dry_run": True})
    assert triggered.status_code == 200, triggered.text
    run_id = triggered.json()["dag_run_id"]

    run = _run_to_end(server, run_id)

    base = f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}"
    instances = server.request("GET", f"{base}/taskInstances").json()["task_instances"]
    states = {ti["task_id"]: ti["state"] for ti in instances}
    assert run["state"] == "success", (states, server.log_tail("scheduler"))
    assert states == {
        "plan": "success",
        "plan_state_rebuilds": "success",
        "plan_topics": "success",
        "submit_unless_dry_run": "success",
        "ingest": "skipped",
        "topic": "skipped",
        "reconcile": "skipped",
    }
    plan = server.request("GET", f"{base}/taskInstances/plan/xcomEntries/return_value").json()
    assert [submit["application_args"][:2] for submit in plan["value"]] == [["--topic", topic]]


def test_conf_breaking_a_param_schema_is_refused_naming_the_param(
    ingest_dag_ready: AirflowServer,
) -> None:
    server = ingest_dag_ready
    runs_before = server.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns").json()["total_entries"]

    response = _trigger(server, {"topics": ["bad topic!"]})

    assert response.status_code == 400, response.text
    assert "topics" in response.json()["detail"]
    runs_after = server.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns").json()["total_entries"]
    assert runs_after == runs_before
