"""Kafka clients of confluent-kafka: their options from the settings, a producer
(murmur2, as Java clients partition), an admin client, producing a list of records.

Example:
    >>> produce_all(settings, "demo.orders", [(b"key", b"value", [])])
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from eventlake.core.errors import EventlakeError
from eventlake.core.settings import Settings

#: Where librdkafka's own log lines go: Python's logging, served when a client polls
#: (an admin client never does), not raw ``%3|...|FAIL|...`` lines on the terminal of a
#: command that already says in a sentence what went wrong (``eventlake status`` with
#: the broker down printed one per reconnect). Outside the ``eventlake`` logger on
#: purpose: the commands show eventlake's progress lines (:mod:`eventlake.core.progress`),
#: not librdkafka's.
CLIENT_LOG: Final = logging.getLogger("librdkafka")


def client_options(settings: Settings, **options: Any) -> dict[str, Any]:
    """librdkafka options for a confluent-kafka client: the settings' (credentials
    included), the client's log lines into :data:`CLIENT_LOG`, then ``options``.

    Example:
        >>> client_options(load_settings(), **{"group.id": "g"})["group.id"]
        'g'
    """
    return settings.kafka_client_options() | {"logger": CLIENT_LOG} | options


#: librdkafka's name for the Java client's default partitioner (murmur2, random if no key).
JAVA_COMPATIBLE_PARTITIONER = "murmur2_random"


def make_producer(settings: Settings, **options: Any) -> Producer:
    """A confluent-kafka producer that partitions keys like the Java client."""
    java_like = {"partitioner": JAVA_COMPATIBLE_PARTITIONER, "linger.ms": 20}
    return Producer(client_options(settings) | java_like | options)


Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


class DeliveryError(EventlakeError, RuntimeError):
    """The broker refused records; the message names the first error."""


def produce_all(
    settings: Settings, topic: str, records: Iterable[Record], timeout: float = 60.0
) -> int:
    """Produce (key, value, headers) records and wait for every delivery report.

    ``flush`` alone only says the queue drained; a refused record (e.g. a keyless
    record on a compacted topic) shows up only in its delivery report.

    Example:
        >>> produce_all(settings, "orders", [(b"k", b"v", [("ce_id", b"1")])])
        1
    """
    producer = make_producer(settings)
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            errors.append(str(error))

    count = 0
    for key, value, headers in records:
        typed_headers: list[tuple[str, str | bytes | None]] = list(headers)
        producer.produce(
            topic, key=key, value=value, headers=typed_headers, on_delivery=on_delivery
        )
        producer.poll(0)
        count += 1
    if producer.flush(timeout):
        raise DeliveryError(f"records to {topic} still queued after {timeout}s")
    if errors:
        raise DeliveryError(f"{len(errors)} of {count} records to {topic} failed: {errors[0]}")
    return count


def make_admin(settings: Settings) -> AdminClient:
    """An admin client on the configured cluster."""
    return AdminClient(client_options(settings))


#: Spark's default list of sources that DataFrameWriter sends through the V1 API.
_V1_SOURCES_KEY: Final = "spark.sql.sources.useV1SourceList"
