"""The arrival of records on a Kafka topic, as an Airflow event trigger: what an
:class:`~airflow.sdk.AssetWatcher` runs in the triggerer for event-driven ingest.

:class:`TopicArrivalTrigger` watches one topic's high watermarks (the offset the next
record of each partition will get) through the Kafka provider's hook on the
``kafka_default`` connection, and fires one event whenever they moved since it last
looked: a burst of any size between two looks is one event. It reads no record, joins
no consumer group and commits nothing: the ingest reads from its ledger in the tables,
never from committed group offsets, so the trigger's position is its own and only in
memory. When it starts (a new triggerer, a restart) a topic that holds records fires
once: what arrived while nobody watched is not left waiting for the next record.

Why the provider's ``AwaitMessageTrigger`` (and ``KafkaMessageQueueTrigger``, which
dispatches to it) is not used: it fires and ends once per matching record (the
triggerer starts it again, a consumer group join per record), and takes its group and
offset reset from the connection's extra, which is also what the Spark jobs get.
``KafkaSharedStreamTrigger`` fires once per record too, and needs
``enable.auto.commit=false`` in that extra (Spark refuses the option).

Example:
    >>> trigger = TopicArrivalTrigger(topic="orders", poll_interval=5)
    >>> trigger.serialize()[1]
    {'topic': 'orders', 'kafka_config_id': 'kafka_default', 'poll_interval': 5.0}
    >>> arrived({0: 10}, {0: 12, 1: 0})
    True
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from eventlake.orchestration.kafka_connection import KAFKA_CONN_ID

#: Partition -> high watermark (the offset its next record will get).
Watermarks = dict[int, int]

#: Seconds between two looks at a topic's watermarks, unless told otherwise.
DEFAULT_POLL_SECONDS: Final = 5.0
#: Seconds a metadata or offsets request may take before the look fails.
REQUEST_TIMEOUT: Final = 30.0


def arrived(seen: Mapping[int, int], now: Mapping[int, int]) -> bool:
    """Whether a partition's watermark changed since ``seen`` to a non-empty position:
    records arrived (or the topic was recreated and written again).

    Example:
        >>> arrived({0: 10}, {0: 10})
        False
        >>> arrived({}, {0: 0, 1: 3})
        True
    """
    return any(offset > 0 and offset != seen.get(partition, 0) for partition, offset in now.items())


def high_watermarks(admin: Any, topic: str) -> Watermarks:
    """The high watermark of each partition of ``topic`` (empty when it does not exist),
    with ``admin`` a confluent-kafka ``AdminClient``.

    Example:
        >>> high_watermarks(KafkaBaseHook().get_conn, "orders")
        {0: 42, 1: 7}
    """
    from confluent_kafka import (
        IsolationLevel,
        KafkaError,
        KafkaException,
        TopicCollection,
        TopicPartition,
    )
    from confluent_kafka.admin import OffsetSpec

    # describe_topics, not a metadata request for the topic: a broker that creates
    # topics on demand would create a missing one on a metadata request.
    described = admin.describe_topics(TopicCollection([topic]), request_timeout=REQUEST_TIMEOUT)
    try:
        description = described[topic].result(timeout=REQUEST_TIMEOUT)
    except KafkaException as error:
        if error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return {}
        raise
    partitions = [each.id for each in description.partitions]
    # read_uncommitted: an open transaction's records count as arrived; the run that
    # reads them waits for their commit as any read_committed reader does.
    requests = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
    futures = admin.list_offsets(
        requests,
        isolation_level=IsolationLevel.READ_UNCOMMITTED,
        request_timeout=REQUEST_TIMEOUT,
    )
    return {
        tp.partition: future.result(timeout=REQUEST_TIMEOUT).offset
        for tp, future in futures.items()
    }


class TopicArrivalTrigger(BaseEventTrigger):
    """Fires when records arrive on ``topic``: one event per look that saw its
    watermarks move, ``poll_interval`` seconds apart, and one at start when the topic
    holds records. Kafka from the Airflow connection ``kafka_config_id`` (the provider's
    type ``kafka``, read with its hook).

    Example:
        >>> watcher = AssetWatcher(name="orders", trigger=TopicArrivalTrigger(topic="orders"))
        >>> Asset(name="kafka.orders", uri="kafka://kafka:9092/orders", watchers=[watcher])
    """

    def __init__(
        self,
        *,
        topic: str,
        kafka_config_id: str = KAFKA_CONN_ID,
        poll_interval: float = DEFAULT_POLL_SECONDS,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.topic = topic
        self.kafka_config_id = kafka_config_id
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Classpath and kwargs: the triggerer imports the class from the installed package."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "topic": self.topic,
                "kafka_config_id": self.kafka_config_id,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Look at the watermarks every ``poll_interval`` seconds; yield when they moved."""
        from asgiref.sync import sync_to_async

        try:
            admin = await sync_to_async(self._admin_client)()
            look = sync_to_async(high_watermarks)
            # At start nothing counts as seen: records that arrived while no trigger ran
            # (a triggerer restart, a new deployment) fire once, as a new arrival does.
            seen: Watermarks = {}
            while True:
                now = await look(admin, self.topic)
                if arrived(seen, now):
                    # Sent after the look that saw the records: a run it queues starts
                    # later still, and reads its topics to their end from the ledger.
                    payload = {"topic": self.topic, "watermarks": _as_json(now)}
                    yield TriggerEvent(payload)  # type: ignore[no-untyped-call]
                seen = now
                await asyncio.sleep(self.poll_interval)
        except Exception:
            # The triggerer starts a failed watcher again at once: pause first, so that a
            # missing connection or an unreachable broker is retried, not spun on.
            await asyncio.sleep(self.poll_interval)
            raise

    def _admin_client(self) -> Any:
        # The provider's hook builds the client from the connection as its triggers do
        # (SASL, SSL and the managed clouds' token callbacks included).
        from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook

        return KafkaBaseHook(kafka_config_id=self.kafka_config_id).get_conn  # type: ignore[no-untyped-call]


def _as_json(watermarks: Watermarks) -> dict[str, int]:
    """Watermarks with string keys: an event's payload is stored as JSON."""
    return {str(partition): offset for partition, offset in sorted(watermarks.items())}
