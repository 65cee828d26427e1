"""eventlake.orchestration.arrivals: the triggerer's watch of a topic, on the real broker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_producer
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.orchestration.arrivals import TopicArrivalTrigger, arrived, high_watermarks


def test_nothing_new_is_no_arrival() -> None:
    assert not arrived({0: 5, 1: 2}, {0: 5, 1: 2})
    assert not arrived({}, {0: 0})


def test_a_moved_or_new_partition_is_an_arrival() -> None:
    assert arrived({0: 5}, {0: 6})
    assert arrived({0: 5}, {0: 5, 1: 1})
    # A topic recreated and written again: its end is lower, records still arrived.
    assert arrived({0: 5}, {0: 2})


def _produce(settings: Settings, topic: str, count: int) -> None:
    producer = make_producer(settings)
    for n in range(count):
        producer.produce(topic, key=str(n).encode(), value=b"{}")
    assert producer.flush(30) == 0


def test_high_watermarks_of_each_partition(
    broker: LocalBroker, settings: Settings, topic_name: str
) -> None:
    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    assert high_watermarks(admin, topic_name) == {}  # no topic yet

    create_topic(settings, topic_name, partitions=2)
    producer = make_producer(settings)
    for partition, count in ((0, 3), (1, 1)):
        for _ in range(count):
            producer.produce(topic_name, value=b"{}", partition=partition)
    assert producer.flush(30) == 0

    assert high_watermarks(admin, topic_name) == {0: 3, 1: 1}


class Watch:
    """A trigger's run() in a task, its events in a queue (a timed-out read of the
    generator itself would cancel and close it)."""

    def __init__(self, trigger: TopicArrivalTrigger) -> None:
        self.events: asyncio.Queue[Any] = asyncio.Queue()
        self.task = asyncio.create_task(self._pump(trigger.run()))

    async def _pump(self, events: AsyncIterator[Any]) -> None:
        async for event in events:
            await self.events.put(event)

    async def next(self, timeout: float) -> Any:
        return await asyncio.wait_for(self.events.get(), timeout)

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def test_trigger_fires_once_per_burst_and_at_start_on_records(
    broker: LocalBroker,
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
    topic_name: str,
) -> None:
    config = {"conn_type": "kafka", "extra": {"bootstrap.servers": settings.bootstrap_servers}}
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", json.dumps(config))
    create_topic(settings, topic_name)

    async def scenario() -> None:
        watch = Watch(TopicArrivalTrigger(topic=topic_name, poll_interval=0.2))
        with pytest.raises(TimeoutError):  # an empty topic: nothing to say
            await watch.next(1.5)
        _produce(settings, topic_name, 50)
        event = await watch.next(10)
        assert event.payload == {"topic": topic_name, "watermarks": {"0": 50}}
        with pytest.raises(TimeoutError):  # the burst was one event
            await watch.next(1.5)
        await watch.stop()
        # A trigger started again (a new triggerer) fires for what the topic holds.
        restarted = Watch(TopicArrivalTrigger(topic=topic_name, poll_interval=0.2))
        assert (await restarted.next(10)).payload["watermarks"] == {"0": 50}
        await restarted.stop()

    asyncio.run(scenario())


def test_a_failing_watcher_pauses_before_it_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_KAFKA_NOWHERE", raising=False)
    trigger = TopicArrivalTrigger(topic="t", kafka_config_id="kafka_nowhere", poll_interval=0.5)

    async def first_event() -> Any:
        return await anext(trigger.run())

    started = time.monotonic()
    with pytest.raises(Exception, match="kafka_nowhere"):
        asyncio.run(first_event())
    assert time.monotonic() - started >= 0.5
