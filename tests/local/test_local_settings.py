"""The local platform's settings: the same EVENTLAKE_* names as before they left the job
settings, and the job settings no longer carry them."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlake.local.settings import LocalSettings, load_local_settings
from eventlake.settings import PROJECT_ROOT, Settings, load_settings

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
