"""The local platform's settings: the same EVENTLAKE_* names as before they left the job
settings, and the job settings no longer carry them."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlake.core.settings import PROJECT_ROOT, Settings, load_settings
from eventlake.local.settings import LocalSettings, load_local_settings

LOCAL_FIELDS = (
    "kafka_jars_dir",
    "broker_dir",
    "broker_port",
    "controller_port",
    "broker_sasl_port",
    "airflow_home",
    "airflow_port",
    "broker_heap",
)


def test_environment_names_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_BROKER_PORT", "19792")
    monkeypatch.setenv("EVENTLAKE_CONTROLLER_PORT", "19793")
    monkeypatch.setenv("EVENTLAKE_BROKER_SASL_PORT", "19794")
    monkeypatch.setenv("EVENTLAKE_BROKER_DIR", "/tmp/el-broker")
    monkeypatch.setenv("EVENTLAKE_KAFKA_JARS_DIR", "/opt/kafka-jars")
    monkeypatch.setenv("EVENTLAKE_AIRFLOW_HOME", "/tmp/el-airflow")
    monkeypatch.setenv("EVENTLAKE_AIRFLOW_PORT", "18780")
    monkeypatch.setenv("EVENTLAKE_BROKER_HEAP", "256m")
    monkeypatch.setenv("EVENTLAKE_BOOTSTRAP_SERVERS", "127.0.0.1:19792")
    local = load_local_settings()
    assert (local.broker_port, local.controller_port, local.broker_sasl_port) == (
        19792,
        19793,
        19794,
    )
    assert local.broker_dir == Path("/tmp/el-broker")
    assert local.kafka_jars_dir == Path("/opt/kafka-jars")
    assert (local.airflow_home, local.airflow_port) == (Path("/tmp/el-airflow"), 18780)
    assert local.broker_heap == "256m"
    # The job settings come along: the broker and the demo need them too.
    assert local.bootstrap_servers == "127.0.0.1:19792"


def test_defaults_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    for field in LOCAL_FIELDS:
        monkeypatch.delenv(f"EVENTLAKE_{field.upper()}", raising=False)
    local = LocalSettings()
    assert (local.broker_port, local.controller_port, local.broker_sasl_port) == (
        9092,
        9093,
        None,
    )
    assert local.broker_dir == PROJECT_ROOT / "var" / "broker"
    assert local.kafka_jars_dir == PROJECT_ROOT / "infra" / "jars" / "kafka"
    assert (local.airflow_home, local.airflow_port) == (PROJECT_ROOT / "var" / "airflow", 8080)
    assert local.broker_heap == "512m"


def test_explicit_override_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_AIRFLOW_PORT", "18780")
    assert load_local_settings(airflow_port=18781).airflow_port == 18781
    assert load_local_settings(airflow_port=None).airflow_port == 18780


def test_job_settings_carry_no_local_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_BROKER_PORT", "19792")
    settings = load_settings()
    assert not set(LOCAL_FIELDS) & set(Settings.model_fields)
    assert not hasattr(settings, "broker_port")
    assert isinstance(load_local_settings(), Settings)


def test_cluster_fields_have_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "CLUSTER_DIR": "/tmp/el-cluster",
        "SPARK_MASTER_PORT": "17077",
        "SPARK_MASTER_UI_PORT": "18081",
        "SPARK_WORKERS": "3",
        "SPARK_WORKER_UI_PORT": "18082",
        "SPARK_WORKER_CORES": "2",
        "SPARK_WORKER_MEMORY": "3g",
        "POSTGRES_PORT": "15433",
        "POSTGRES_BIN_DIR": "/opt/pg/bin",
        "CLUSTER_AIRFLOW_PORT": "18088",
    }
    for name, value in values.items():
        monkeypatch.setenv(f"EVENTLAKE_{name}", value)
    local = load_local_settings()
    assert local.cluster_dir == Path("/tmp/el-cluster")
    assert (local.spark_master_port, local.spark_master_ui_port) == (17077, 18081)
    assert (local.spark_workers, local.spark_worker_ui_port) == (3, 18082)
    assert (local.spark_worker_cores, local.spark_worker_memory) == (2, "3g")
    assert (local.postgres_port, local.postgres_bin_dir) == (15433, Path("/opt/pg/bin"))
    assert local.cluster_airflow_port == 18088


def test_cluster_defaults_keep_off_the_demos_ports() -> None:
    local = LocalSettings()
    assert local.cluster_dir == PROJECT_ROOT / "var" / "cluster"
    assert local.spark_master_port == 7077
    fixed = [
        local.broker_port,
        local.controller_port,
        local.airflow_port,
        local.spark_master_port,
        local.spark_master_ui_port,
        local.spark_worker_ui_port,
        local.spark_worker_ui_port + 1,
        local.postgres_port,
        local.cluster_airflow_port,
    ]
    assert len(set(fixed)) == len(fixed)
    assert local.postgres_port != 5432  # a system PostgreSQL may hold the default
