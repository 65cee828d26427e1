"""Kafka credentials from the Airflow connection kafka_default, on a real deployment
(tests/dags/airflow_server.py): the ingest DAG lands a topic's events over the test
broker's SASL/SCRAM listener with the workers' EVENTLAKE_* environment holding no
password, and the password appears in no process command line seen while the job runs,
no file of the Airflow logs, and not in the driver's Spark UI environment page."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx
import psutil
import pytest
from deltalake import DeltaTable

from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import LocalSettings
from tests.dags.airflow_server import AirflowServer, airflow_server  # noqa: F401
from tests.helpers import binary_headers

DAG_ID: Final = "eventlake_ingest"
#: Not the user of tests/test_security.py, which may run at the same time on another worker.
USER: Final = "eventlake-airflow"
EVENT_COUNT: Final = 3
SPARK_SUBMIT_CLASS: Final = "org.apache.spark.deploy.SparkSubmit"


@pytest.fixture(scope="module")
def password(broker: LocalBroker) -> str:
    """The SCRAM user's password, provisioned on the test broker's SASL listener."""
    secret = "pw-" + secrets.token_hex(12)
    broker.provision_scram_user(USER, secret)
    return secret


@pytest.fixture
def kafka_default(
    airflow_server: AirflowServer,  # noqa: F811
    settings: LocalSettings,
    password: str,
) -> Iterator[str]:
    """kafka_default created through the REST API, as a user does in the UI (type kafka,
    the client config in its extra); deleted afterwards. Its bootstrap address."""
    assert settings.broker_sasl_port is not None
    address = f"127.0.0.1:{settings.broker_sasl_port}"
    config = {
        "bootstrap.servers": address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": USER,
        "sasl.password": password,
    }
    body = {"connection_id": "kafka_default", "conn_type": "kafka", "extra": json.dumps(config)}
    response = airflow_server.request("POST", "/api/v2/connections", body)
    assert response.status_code == 201, response.text
    yield address
    airflow_server.request("DELETE", "/api/v2/connections/kafka_default")


@dataclass
class Watch:
    """What a watcher thread saw while the run went on."""

    password: str
    topic: str
    ui_port: int
    submits_seen: int = 0
    leaked_command_lines: list[str] = field(default_factory=list)
    environment_pages: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Every 0.2 s: every process's command line (the job's spark-submit JVM among
        them), and the driver's environment page once its UI answers."""
        apps_fetched: set[str] = set()
        while not self.stop.wait(0.2):
            for process in psutil.process_iter(["cmdline"]):
                command = " ".join(process.info["cmdline"] or [])
                if self.password in command:
                    self.leaked_command_lines.append(command)
                if SPARK_SUBMIT_CLASS in command and self.topic in command:
                    self.submits_seen += 1
            self._fetch_environment(apps_fetched)

    def _fetch_environment(self, apps_fetched: set[str]) -> None:
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        try:
            apps = httpx.get(base, timeout=2).json()
            for app in apps:
                if app["id"] not in apps_fetched:
                    page = httpx.get(f"{base}/{app['id']}/environment", timeout=5)
                    page.raise_for_status()
                    self.environment_pages.append(page.text)
                    apps_fetched.add(app["id"])
        except (httpx.HTTPError, ValueError):
            pass  # no driver yet, or it is going away


def _files_holding(folder: Path, text: str) -> list[str]:
    return [
        str(path)
        for path in folder.rglob("*")
        if path.is_file() and text in path.read_text(errors="replace")
    ]


def test_ingest_over_scram_with_the_password_from_the_connection_only(
    airflow_server: AirflowServer,  # noqa: F811
    kafka_default: str,
    settings: LocalSettings,
    password: str,
    topic_name: str,
) -> None:
    server = airflow_server
    assert not {"EVENTLAKE_KAFKA_PASSWORD", "EVENTLAKE_KAFKA_OPTIONS"} & set(server.env)
    assert server.env["EVENTLAKE_BOOTSTRAP_SERVERS"] != kafka_default
    create_topic(settings, topic_name)
    ids = [f"conn-{n}" for n in range(EVENT_COUNT)]
    produce_all(settings, topic_name, [(i.encode(), b"{}", binary_headers(i)) for i in ids])
    server.wait_for_dag(DAG_ID)
    server.unpause(DAG_ID)
    watch = Watch(password, topic_name, int(server.env["EVENTLAKE_SPARK_UI_PORT"]))
    watcher = threading.Thread(target=watch.run, daemon=True)
    watcher.start()
    try:
        run_id = server.trigger(DAG_ID, {"topics": [topic_name]})
        state = server.wait_for_run(DAG_ID, run_id, timeout=600)
    finally:
        watch.stop.set()
        watcher.join()

    base = f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}"
    instances = server.request("GET", f"{base}/taskInstances").json()["task_instances"]
    states = {(ti["task_id"], ti["map_index"]): ti["state"] for ti in instances}
    assert state == "success", (states, server.log_tail("scheduler"))
    assert states[("ingest", 0)] == "success"
    # The credentials reached the job: it read the topic over the SCRAM listener.
    events = DeltaTable(server.env["EVENTLAKE_WAREHOUSE"] + "/events").to_pyarrow_table()
    landed = [e["id"] for e in events.to_pylist() if e["kafka_topic"] == topic_name]
    assert sorted(landed) == ids
    plan = server.request("GET", f"{base}/taskInstances/plan/xcomEntries/return_value").json()
    assert plan["value"][0]["env_vars"]["EVENTLAKE_BOOTSTRAP_SERVERS"] == kafka_default

    # Not vacuous: the job's spark-submit was seen running, its driver's page was read.
    assert watch.submits_seen > 0
    assert len(watch.environment_pages) == 1
    environment = json.loads(watch.environment_pages[0])
    assert ["spark.app.name", "eventlake-ingest"] in environment["sparkProperties"]
    # Not on any command line, not on the environment page (Spark, system and Hadoop
    # properties, class path), not in the plan (an XCom) or the rendered task fields.
    assert watch.leaked_command_lines == []
    assert password not in watch.environment_pages[0]
    assert password not in json.dumps(plan)
    rendered = server.request("GET", f"{base}/taskInstances/ingest/0").json()["rendered_fields"]
    assert password not in json.dumps(rendered)
    # Not in any log file of the deployment, task logs first among them.
    logs = server.home / "logs"
    ingest_logs = [p for p in logs.rglob("*") if p.is_file() and "task_id=ingest" in str(p)]
    assert ingest_logs, sorted(str(p) for p in logs.rglob("*"))
    # The log holds spark-submit's command line and the job's output, where a leak would be.
    ingest_log = "\n".join(p.read_text(errors="replace") for p in ingest_logs)
    assert "Spark-Submit cmd" in ingest_log and f"events={EVENT_COUNT}" in ingest_log
    assert _files_holding(logs, password) == []
    assert [
        p.name for p in server.home.glob("*.log") if password in p.read_text(errors="replace")
    ] == []
