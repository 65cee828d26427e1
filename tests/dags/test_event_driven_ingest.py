"""Event-driven ingest on a real Airflow and the real broker: with
``EVENTLAKE_INGEST_SCHEDULE=events``, records produced to a topic start a run of
eventlake_ingest that nobody triggered (an asset event from the triggerer's watch of
the topic), and the run lands them.

This module runs its own Airflow (one for the module, not the session's shared one of
tests/dags/airflow_server.py): event-driven runs need the scheduler to create runs on
its own (``use_job_schedule``, off in the shared one so that only triggered runs
happen), a triggerer, and the ingest DAG parsed with the events setting and this
module's topic.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from deltalake import DeltaTable

from eventlake.core.settings import Settings
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.airflow import LocalAirflow, free_port
from eventlake.local.broker import LocalBroker
from tests.dags.dag_helpers import parse_dag
from tests.helpers import binary_headers

DAG_ID: Final = "eventlake_ingest"
DAG_FILE: Final = Path(__file__).resolve().parents[2] / "dags" / "eventlake_ingest.py"
REPUBLISH_DAG_FILE: Final = DAG_FILE.with_name("eventlake_republish.py")
EVENT_COUNT: Final = 5
#: How long the test waits for the run that the records start.
RUN_START_TIMEOUT: Final = 180.0


@pytest.fixture(scope="module")
def watched_topic(broker: LocalBroker, settings: Settings) -> str:
    """The topic the events Airflow's ingest DAG watches, created empty."""
    topic = f"t-events-{int(time.time())}"
    create_topic(settings, topic)
    return topic


@pytest.fixture(scope="module")
def events_airflow(settings: Settings, watched_topic: str) -> Iterator[LocalAirflow]:
    """Airflow with a triggerer, the scheduler creating runs, kafka_default on the test
    broker and eventlake_ingest scheduled on arrivals on ``watched_topic`` (unpaused)."""
    home = Path(tempfile.mkdtemp(prefix="eventlake-airflow-events-"))
    # The events setting gives the deployment a triggerer and a scheduler that creates
    # runs (eventlake.local.airflow.event_driven).
    worker_settings = settings.model_copy(
        update={
            "warehouse": home / "warehouse",
            "spark_master": "local[1]",
            "ingest_schedule": "events",
            "arrival_poll_seconds": 1.0,
        }
    )
    kafka_default = {
        "conn_type": "kafka",
        "extra": json.dumps({"bootstrap.servers": settings.bootstrap_servers}),
    }
    extra = {
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(kafka_default),
        "EVENTLAKE_TOPICS": watched_topic,
        "EVENTLAKE_SPARK_UI_PORT": str(free_port()),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    server = LocalAirflow.create(worker_settings, home=home, port=free_port(), extra_env=extra)
    assert "triggerer" in server.components
    try:
        server.start()
        server.wait_for_dag(DAG_ID)
        server.unpause(DAG_ID)
        _reparse(server, DAG_ID)  # watchers are registered for unpaused DAGs only
        server.wait_until("the topic's watcher", lambda: _watchers(server, watched_topic), 120)
        yield server
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _reparse(server: LocalAirflow, dag_id: str) -> None:
    token = server.request("GET", f"/api/v2/dags/{dag_id}/details").json()["file_token"]
    response = server.request("PUT", f"/api/v2/parseDagFile/{token}")
    assert response.status_code < 300, response.text


def _watchers(server: LocalAirflow, topic: str) -> list[Any]:
    response = server.request("GET", f"/api/v2/assets?name_pattern=kafka.{topic}")
    assets = response.json()["assets"]
    return [watcher for asset in assets for watcher in asset["watchers"]]


def _runs(server: LocalAirflow) -> list[dict[str, Any]]:
    response = server.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns?order_by=run_after")
    response.raise_for_status()
    return list(response.json()["dag_runs"])


def _produce(settings: Settings, topic: str, count: int) -> list[str]:
    ids = [f"arrival-{n}" for n in range(count)]
    records = [(i.encode(), b'{"n": 1}', binary_headers(i)) for i in ids]
    assert produce_all(settings, topic, records) == count
    return ids


def test_events_schedule_watches_each_configured_topic(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings
) -> None:
    monkeypatch.setenv("EVENTLAKE_INGEST_SCHEDULE", "events")
    monkeypatch.setenv("EVENTLAKE_TOPICS", "a,b")

    dag = parse_dag(DAG_FILE, DAG_ID)

    assert sorted(asset.name for asset in dag.timetable.asset_condition.objects) == [
        "kafka.a",
        "kafka.b",
    ]


def test_both_schedule_runs_ingest_on_the_cron_or_an_arrival(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings
) -> None:
    monkeypatch.setenv("EVENTLAKE_INGEST_SCHEDULE", "both")
    monkeypatch.setenv("EVENTLAKE_TOPICS", "a")

    dag = parse_dag(DAG_FILE, DAG_ID)

    assert dag.timetable.timetable.expression == "*/10 * * * *"
    assert [asset.name for asset in dag.timetable.asset_condition.objects] == ["kafka.a"]


def test_events_schedule_of_republish_watches_the_routes_sources(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings
) -> None:
    monkeypatch.setenv("EVENTLAKE_REPUBLISH_SCHEDULE", "events")
    routes = [{"source": "orders.raw", "target": "orders"}, {"source": "pay.raw", "target": "p"}]
    monkeypatch.setenv("EVENTLAKE_REPUBLISH_ROUTES", json.dumps(routes))

    dag = parse_dag(REPUBLISH_DAG_FILE, "eventlake_republish")

    assert sorted(asset.name for asset in dag.timetable.asset_condition.objects) == [
        "kafka.orders.raw",
        "kafka.pay.raw",
    ]


def test_records_start_a_run_that_lands_them(
    events_airflow: LocalAirflow, settings: Settings, watched_topic: str
) -> None:
    assert _runs(events_airflow) == []

    produced_at = time.monotonic()
    ids = _produce(settings, watched_topic, EVENT_COUNT)

    # Nobody triggers: the run comes from the triggerer's asset event.
    events_airflow.wait_until(
        "a run started by the records", lambda: _runs(events_airflow), RUN_START_TIMEOUT
    )
    run = _runs(events_airflow)[0]
    print(f"run {run['dag_run_id']} seen {time.monotonic() - produced_at:.0f} s after the records")
    assert run["run_type"] == "asset_triggered"
    assert events_airflow.wait_for_run(DAG_ID, run["dag_run_id"]) == "success"
    table = DeltaTable(str(Path(events_airflow.env["EVENTLAKE_WAREHOUSE"]) / "events"))
    landed = [(row["id"], row["kafka_topic"]) for row in table.to_pyarrow_table().to_pylist()]
    assert sorted(landed) == [(event_id, watched_topic) for event_id in ids]
