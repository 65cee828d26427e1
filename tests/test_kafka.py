"""eventlake.kafka: the options of Spark's Kafka source."""

from __future__ import annotations

import pytest

from eventlake.kafka import kafka_source_options
from eventlake.settings import load_settings


def test_a_source_read_waits_at_a_partitions_end_as_long_as_the_settings_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTLAKE_KAFKA_FETCH_WAIT_MS", "35")

    options = kafka_source_options(
        load_settings(), {"subscribe": "orders"}, starting_offsets="earliest"
    )

    assert options["kafka.fetch.max.wait.ms"] == "35"


def test_a_source_read_does_not_wait_kafkas_default_half_second() -> None:
    options = kafka_source_options(
        load_settings(), {"subscribe": "orders"}, starting_offsets="earliest"
    )

    assert int(options["kafka.fetch.max.wait.ms"]) < 500
