"""The ingest DAG, run end to end with dag.test(): real broker, real spark-submit."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_producer
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from tests.dags.dag_helpers import parse_dag, task_states

DAG_ID = "eventlake_ingest"
DAG_FILE = Path(__file__).resolve().parents[2] / "dags" / "eventlake_ingest.py"
EVENT_COUNT = 5


@pytest.fixture
def ingest_dag(airflow_env: Settings, airflow_db: None) -> Any:
    """The DAG parsed after the environment is set, as the dag-processor would."""
    return parse_dag(DAG_FILE, DAG_ID)


def _headers(event_id: str) -> list[tuple[str, bytes]]:
    return [
        ("ce_specversion", b"1.0"),
        ("ce_id", event_id.encode()),
        ("ce_source", b"/tests/airflow"),
        ("ce_type", b"test.airflow.ingest"),
    ]


def _produce_binary_events(settings: Settings, topic: str, count: int) -> list[str]:
    create_topic(settings, topic)
    producer = make_producer(settings)
    ids = [f"evt-{n}" for n in range(count)]
    for event_id in ids:
        headers = _headers(event_id)
        producer.produce(topic, key=event_id.encode(), value=b'{"n": 1}', headers=headers)
    assert producer.flush(30) == 0
    return ids


def test_run_lands_produced_events_in_events_table(
    broker: LocalBroker, ingest_dag: Any, airflow_env: Settings, topic_name: str
) -> None:
    ids = _produce_binary_events(airflow_env, topic_name, EVENT_COUNT)

    dag_run = ingest_dag.test(run_conf={"topics": [topic_name]})

    assert str(dag_run.state) == "success", task_states(dag_run)
    events = DeltaTable(str(airflow_env.table_path("events"))).to_pyarrow_table().to_pylist()
    assert sorted((e["id"], e["kafka_topic"]) for e in events) == [(i, topic_name) for i in ids]


def test_a_run_of_three_topics_lands_two_in_one_application_and_fails_the_third_alone(
    broker: LocalBroker,
    ingest_dag: Any,
    airflow_env: Settings,
    topic_name: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    first, missing, second = f"{topic_name}-a", f"{topic_name}-typo", f"{topic_name}-b"
    ids = {t: _produce_binary_events(airflow_env, t, EVENT_COUNT) for t in (first, second)}

    dag_run = ingest_dag.test(run_conf={"topics": [first, missing, second]})

    tis = dag_run.get_task_instances()
    (ingest,) = [ti for ti in tis if ti.task_id == "ingest"]  # one spark-submit
    assert str(ingest.state) == "success"
    per_topic = {ti.rendered_map_index: str(ti.state) for ti in tis if ti.task_id == "topic"}
    assert per_topic == {first: "success", missing: "failed", second: "success"}
    assert str(dag_run.state) == "failed"
    output = "".join(capfd.readouterr())
    assert f"ingest[{missing}]: refused: Topic '{missing}' does not exist" in output
    assert f"ingest[{first}]: events={EVENT_COUNT} rejects=0" in output
    events = DeltaTable(str(airflow_env.table_path("events"))).to_pyarrow_table().to_pylist()
    landed = sorted((e["kafka_topic"], e["id"]) for e in events)
    assert landed == sorted((topic, i) for topic, each in ids.items() for i in each)


def test_dry_run_submits_nothing(ingest_dag: Any, airflow_env: Settings, topic_name: str) -> None:
    dag_run = ingest_dag.test(run_conf={"topics": [topic_name], "dry_run": True})

    assert task_states(dag_run)["ingest"] == {"skipped"}
    assert not airflow_env.table_path("events").exists()


def test_bad_topic_param_is_refused_before_a_run_exists(ingest_dag: Any) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.sdk.exceptions import ParamValidationError

    runs_before = len(DagRun.find(dag_id=DAG_ID))
    with pytest.raises(ParamValidationError, match="topics"):
        ingest_dag.test(run_conf={"topics": ["bad topic!"]})
    assert len(DagRun.find(dag_id=DAG_ID)) == runs_before


def test_a_run_the_job_refuses_fails_once_with_the_jobs_reason(
    broker: LocalBroker,
    ingest_dag: Any,
    topic_name: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # The topic is never created: the job refuses the run (exit 2) before Spark reads.
    dag_run = ingest_dag.test(run_conf={"topics": [topic_name]})

    (ingest,) = [ti for ti in dag_run.get_task_instances() if ti.task_id == "ingest"]
    # Failed on its first try, not retried (the DAG retries other failures twice).
    assert (str(ingest.state), ingest.try_number) == ("failed", 1)
    # The task's failure is the job's sentence (the Airflow task log, here on stdout).
    output = "".join(capfd.readouterr())
    assert f"ingest_cloudevents.py refused the run: Topic '{topic_name}' does not exist" in output


def test_ingest_updates_events_rejects_and_state_assets(
    monkeypatch: pytest.MonkeyPatch, airflow_env: Settings, airflow_db: None
) -> None:
    monkeypatch.setenv("EVENTLAKE_STATE_TOPICS", '["customers"]')
    dag = parse_dag(DAG_FILE, DAG_ID)

    outlets = {(asset.name, asset.uri) for asset in dag.get_task("ingest").outlets}

    assert outlets == {
        ("eventlake.events", airflow_env.table_path("events").as_uri()),
        ("eventlake.rejects", airflow_env.table_path("rejects").as_uri()),
        ("eventlake.state.customers", (airflow_env.warehouse / "state/customers").as_uri()),
    }


def test_state_topic_run_keeps_state_and_deletes_on_tombstone(
    broker: LocalBroker,
    monkeypatch: pytest.MonkeyPatch,
    airflow_env: Settings,
    airflow_db: None,
    topic_name: str,
) -> None:
    monkeypatch.setenv("EVENTLAKE_STATE_TOPICS", json.dumps([topic_name]))
    dag = parse_dag(DAG_FILE, DAG_ID)
    create_topic(airflow_env, topic_name, config={"cleanup.policy": "compact"})
    producer = make_producer(airflow_env)
    for key, event_id in (("a", "e1"), ("b", "e2"), ("a", "e3")):
        producer.produce(topic_name, key=key.encode(), value=b"{}", headers=_headers(event_id))
    producer.produce(topic_name, key=b"b", value=None, headers=_headers("e4"))
    assert producer.flush(30) == 0

    dag_run = dag.test(run_conf={"topics": [topic_name]})

    assert str(dag_run.state) == "success", task_states(dag_run)
    state = DeltaTable(str(airflow_env.warehouse / "state" / topic_name)).to_pyarrow_table()
    rows = state.select(["kafka_key", "id"]).to_pylist()
    assert rows == [{"kafka_key": b"a", "id": "e3"}]


@pytest.mark.parametrize(
    "conf",
    [{"topics": []}, {"ending_offsets": "earliest"}, {"dry_run": "yes"}],
    ids=["no-topics", "ending-earliest", "dry-run-not-boolean"],
)
def test_param_schema_refuses(ingest_dag: Any, conf: dict[str, Any]) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    params = copy.deepcopy(ingest_dag.params)
    with pytest.raises(ParamValidationError):
        params.update(conf)
        params.validate()
