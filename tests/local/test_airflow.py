"""eventlake.local.airflow: stopping a local Airflow that another process started."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from eventlake.core.settings import load_settings
from eventlake.local import processes
from eventlake.local.airflow import (
    ALL_COMPONENTS,
    COMPONENTS,
    PIDS_FILE,
    LocalAirflow,
    airflow_environment,
    stop_local_airflow,
)


def test_stop_local_airflow_ends_the_recorded_process_groups(tmp_path: Path) -> None:
    # Stand-ins for the components: process groups that another process started.
    components = {
        name: subprocess.Popen(["bash", "-c", "sleep 60 & wait"], start_new_session=True)
        for name in ("api-server", "scheduler")
    }
    processes.write_records(
        tmp_path / PIDS_FILE,
        {n: processes.Recorded.of(p.pid) for n, p in components.items()},
    )

    assert stop_local_airflow(tmp_path)

    for process in components.values():
        process.wait(timeout=5)
        assert not processes.alive(process.pid, group=True)
    assert not (tmp_path / PIDS_FILE).exists()


def test_stop_local_airflow_says_when_none_was_running(tmp_path: Path) -> None:
    assert not stop_local_airflow(tmp_path)


def test_the_default_database_is_sqlite_in_the_home(tmp_path: Path) -> None:
    env = airflow_environment(tmp_path, 18080, load_settings())
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path / 'airflow.db'}"


def test_the_tasks_spark_resolves_its_address_on_loopback(tmp_path: Path) -> None:
    # Without it spark-submit picks the host's first other interface, and says so.
    assert airflow_environment(tmp_path, 18080, load_settings())["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_a_database_url_and_the_master_reach_every_component(tmp_path: Path) -> None:
    url = "postgresql+psycopg2://airflow:pw@127.0.0.1:15433/airflow"
    settings = load_settings(spark_master="spark://127.0.0.1:7077", executor_memory="768m")

    env = airflow_environment(tmp_path, 18080, settings, database_url=url)

    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == url
    # spark_default and the settings the plan task reads name the same master.
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])["host"] == "spark://127.0.0.1:7077"
    assert env["EVENTLAKE_SPARK_MASTER"] == "spark://127.0.0.1:7077"
    assert env["EVENTLAKE_EXECUTOR_MEMORY"] == "768m"


def test_components_default_to_the_demos_and_may_add_the_triggerer(tmp_path: Path) -> None:
    settings = load_settings()
    assert LocalAirflow.create(settings, home=tmp_path, port=18080).components == COMPONENTS
    every = LocalAirflow.create(settings, home=tmp_path, port=18080, components=ALL_COMPONENTS)
    assert "triggerer" in every.components
    with pytest.raises(ValueError, match="api-server"):
        LocalAirflow.create(settings, home=tmp_path, port=18080, components=("scheduler",))


@pytest.mark.parametrize(
    "schedules",
    [{"ingest_schedule": "events"}, {"republish_schedule": "both"}],
    ids=["ingest-events", "republish-both"],
)
def test_an_event_driven_dag_adds_the_triggerer_and_scheduled_runs(
    tmp_path: Path, schedules: dict[str, str]
) -> None:
    settings = load_settings(**schedules)

    airflow = LocalAirflow.create(settings, home=tmp_path, port=18080)

    assert airflow.components == (*COMPONENTS, "triggerer")
    assert airflow.env["AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE"] == "True"
    assert airflow.env["EVENTLAKE_INGEST_SCHEDULE"] == settings.ingest_schedule


def test_only_triggered_runs_on_the_cron_schedule(tmp_path: Path) -> None:
    env = airflow_environment(tmp_path, 18080, load_settings())
    assert env["AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE"] == "False"


def test_stop_local_airflow_leaves_a_process_that_reused_a_recorded_pid(tmp_path: Path) -> None:
    # A pid file left by a crash, whose pid now belongs to an unrelated program.
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        stale = processes.Recorded(stranger.pid, started=1)
        processes.write_records(tmp_path / PIDS_FILE, {"scheduler": stale})

        assert not stop_local_airflow(tmp_path)

        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_the_spark_connection_carries_the_clusters_secret_as_its_password(tmp_path: Path) -> None:
    settings = load_settings(spark_master="spark://127.0.0.1:7077", spark_auth_secret="s3")

    env = airflow_environment(tmp_path, 18080, settings)

    connection = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert (connection["host"], connection["password"]) == ("spark://127.0.0.1:7077", "s3")
