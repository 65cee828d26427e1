from pathlib import Path

import pytest

from eventlake.core.settings import InvalidSettingError, load_settings


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


def test_a_variable_the_settings_cannot_take_is_named_with_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTLAKE_DEDUP_HORIZON_HOURS", "a week")

    with pytest.raises(InvalidSettingError) as refused:
        load_settings()

    assert str(refused.value).startswith("EVENTLAKE_DEDUP_HORIZON_HOURS: Input should be a valid")
    assert "a week" not in str(refused.value)


def test_json_that_does_not_parse_is_named_without_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTLAKE_KAFKA_OPTIONS", '{"sasl.password": "hunter2"')

    with pytest.raises(
        InvalidSettingError, match=r"^EVENTLAKE_KAFKA_OPTIONS: not valid JSON"
    ) as refused:
        load_settings()

    assert "hunter2" not in str(refused.value)


def test_a_refused_part_of_a_structured_variable_is_named_by_its_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "EVENTLAKE_REPUBLISH_ROUTES", '[{"source": "a", "target": "b", "partitions": 0}]'
    )

    with pytest.raises(
        InvalidSettingError, match=r"^EVENTLAKE_REPUBLISH_ROUTES\[0\]\.partitions: "
    ):
        load_settings()


def test_a_refused_override_is_named_as_a_setting() -> None:
    with pytest.raises(InvalidSettingError, match=r"^setting shuffle_partitions: "):
        load_settings(shuffle_partitions=0)


def test_the_dags_topics_default_to_the_demos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVENTLAKE_TOPICS", raising=False)

    assert load_settings().topics == ["demo.orders"]


def test_the_dags_topics_are_comma_separated_trimmed_and_kept_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTLAKE_TOPICS", " a, b.c ,a,")

    assert load_settings().topics == ["a", "b.c"]


@pytest.mark.parametrize("raw", ["bad topic!", " , ", "..", "x" * 250])
def test_topics_with_no_or_illegal_names_are_refused_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("EVENTLAKE_TOPICS", raw)

    with pytest.raises(InvalidSettingError, match=r"^EVENTLAKE_TOPICS: "):
        load_settings()


def test_settings_as_environment_load_back_the_same_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = load_settings(
        topics="a,b.c",
        state_topics=["a"],
        kafka_options={"security.protocol": "SASL_SSL"},
        kafka_password="s3cret",
        dedup=True,
    )
    for name, value in settings.as_environment().items():
        monkeypatch.setenv(name, value)

    assert load_settings() == settings
