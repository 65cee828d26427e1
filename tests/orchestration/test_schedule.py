"""eventlake.orchestration.schedule: a Kafka DAG's schedule from the settings."""

from __future__ import annotations

import pytest
from airflow.sdk import AssetAny, AssetOrTimeSchedule

from eventlake.core.settings import Settings, load_settings
from eventlake.orchestration.arrivals import TopicArrivalTrigger
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.schedule import dag_schedule, topic_asset, topic_of

CRON = "*/10 * * * *"


def test_schedule_mode_is_the_cron(settings: Settings) -> None:
    assert dag_schedule("schedule", CRON, ["orders"], settings) == CRON


def test_events_mode_runs_on_any_topic_asset(settings: Settings) -> None:
    schedule = dag_schedule("events", CRON, ["a", "b", "a"], settings)

    assert isinstance(schedule, AssetAny)
    assert [asset.name for asset in schedule.objects] == ["kafka.a", "kafka.b"]


def test_both_mode_runs_on_the_cron_or_an_asset(settings: Settings) -> None:
    schedule = dag_schedule("both", CRON, ["a"], settings)

    assert isinstance(schedule, AssetOrTimeSchedule)
    assert schedule.timetable.expression == CRON
    assert [asset.name for asset in schedule.asset_condition.objects] == ["kafka.a"]


@pytest.mark.parametrize("mode", ["events", "both"])
def test_events_without_a_topic_are_refused(settings: Settings, mode: str) -> None:
    with pytest.raises(OrchestrationError, match="at least one topic"):
        dag_schedule(mode, CRON, [], settings)  # type: ignore[arg-type]


def test_topic_asset_names_the_first_server_and_the_topic() -> None:
    settings = load_settings(bootstrap_servers="k1:9092, k2:9092", arrival_poll_seconds=2)

    asset = topic_asset(settings, "orders")

    assert (asset.name, asset.uri) == ("kafka.orders", "kafka://k1:9092/orders")
    (watcher,) = asset.watchers
    assert isinstance(watcher.trigger, TopicArrivalTrigger)
    assert watcher.trigger.serialize()[1] == {
        "topic": "orders",
        "kafka_config_id": "kafka_default",
        "poll_interval": 2.0,
    }


def test_two_dags_watching_a_topic_declare_the_same_watcher(settings: Settings) -> None:
    # Same name and trigger kwargs: the triggerer runs one trigger for both DAGs.
    first, second = topic_asset(settings, "a"), topic_asset(settings, "a")
    assert first.watchers[0].name == second.watchers[0].name
    assert first.watchers[0].trigger.serialize() == second.watchers[0].trigger.serialize()


def test_topic_of_reads_topic_asset_names_only() -> None:
    assert topic_of("kafka.demo.orders") == "demo.orders"
    assert topic_of("eventlake.events") is None


def test_settings_default_to_the_cron() -> None:
    settings = load_settings()
    assert (settings.ingest_schedule, settings.republish_schedule) == ("schedule", "schedule")


def test_settings_refuse_an_unknown_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_INGEST_SCHEDULE", "hourly")
    with pytest.raises(ValueError, match=r"EVENTLAKE_INGEST_SCHEDULE: Input should be .schedule."):
        load_settings()
