from pathlib import Path

import pytest

from eventlake.settings import load_settings


def test_environment_overrides_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_BOOTSTRAP_SERVERS", "kafka:9092")
    monkeypatch.setenv("EVENTLAKE_WAREHOUSE", "/data/lake")
    settings = load_settings()
    assert settings.bootstrap_servers == "kafka:9092"
    assert settings.warehouse == Path("/data/lake")


def test_a_relative_warehouse_is_made_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Executors on a cluster resolve paths in their own work dir, not the driver's.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVENTLAKE_WAREHOUSE", "lake")
    assert load_settings().warehouse == tmp_path / "lake"
    assert load_settings(warehouse=Path("other")).warehouse == tmp_path / "other"


def test_executor_settings_have_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_EXECUTOR_MEMORY", "768m")
    monkeypatch.setenv("EVENTLAKE_EXECUTOR_CORES", "2")
    monkeypatch.setenv("EVENTLAKE_CORES_MAX", "4")
    settings = load_settings()
    assert (settings.executor_memory, settings.executor_cores, settings.cores_max) == (
        "768m",
        2,
        4,
    )
    monkeypatch.delenv("EVENTLAKE_CORES_MAX")
    assert load_settings().cores_max is None


def test_explicit_override_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_BOOTSTRAP_SERVERS", "kafka:9092")
    assert load_settings(bootstrap_servers="other:1").bootstrap_servers == "other:1"


def test_kafka_options_and_password_reach_client_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "EVENTLAKE_KAFKA_OPTIONS",
        '{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", '
        '"sasl.username": "alice"}',
    )
    monkeypatch.setenv("EVENTLAKE_KAFKA_PASSWORD", "s3cret")
    settings = load_settings()
    options = settings.kafka_client_options()
    assert options["security.protocol"] == "SASL_PLAINTEXT"
    assert options["sasl.password"] == "s3cret"
    assert "s3cret" not in repr(settings)
