"""A realistic sample stream of CloudEvents for the demo and for load: both content
modes, several types, extensions, entity keys with updates and tombstones, and a few
invalid records, from a fixed random seed.

Example:
    >>> produced = produce_samples(settings, topic="demo.orders", count=200)
    >>> produced.valid, produced.invalid
    (190, 10)
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from eventlake.core.settings import Settings
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic

Header = tuple[str, bytes]

EVENT_TYPES = ("com.example.order.created", "com.example.order.paid", "com.example.order.shipped")
SOURCES = ("/shop/eu", "/shop/us")
#: The share of invalid records: below the quality check's default limit on the rejects
#: rate (5%), so that a check of the sample stream passes by default.
INVALID_SHARE = 0.02


@dataclass(frozen=True)
class SampleRecord:
    """One Kafka record to produce: key, value (None = no value) and ordered headers."""

    key: bytes | None
    value: bytes | None
    headers: list[Header]
    valid: bool


@dataclass(frozen=True)
class ProducedSamples:
    topic: str
    valid: int
    invalid: int


def binary_record(
    attributes: dict[str, str], data: bytes | None, key: bytes | None
) -> SampleRecord:
    """A binary-mode record: ce_ headers, content-type for datacontenttype, data as value."""
    headers: list[Header] = []
    for name, value in attributes.items():
        header = "content-type" if name == "datacontenttype" else f"ce_{name}"
        headers.append((header, value.encode()))
    return SampleRecord(key=key, value=data, headers=headers, valid=True)


def structured_record(
    attributes: dict[str, str], data: object | None, key: bytes | None
) -> SampleRecord:
    """A structured-mode record in the JSON event format."""
    body: dict[str, object] = dict(attributes)
    if data is not None:
        body["data"] = data
    return SampleRecord(
        key=key,
        value=json.dumps(body).encode(),
        headers=[("content-type", b"application/cloudevents+json; charset=UTF-8")],
        valid=True,
    )


def sample_records(
    count: int, *, seed: int | None = 7, entities: int = 50
) -> Iterator[SampleRecord]:
    """``count`` records: ~2% invalid (under the quality check's default limit on the
    rejects rate, 5%), ~13% binary tombstones, the rest valid events. The same ``seed``
    gives the same records; None gives new ones (new event ids) each call.

    Example:
        >>> sum(r.valid for r in sample_records(100)), len(list(sample_records(100)))
        (98, 100)
    """
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(count):
        entity = f"order-{rng.randrange(entities):04d}"
        key = entity.encode()
        roll = rng.random()
        if roll < INVALID_SHARE:
            yield _invalid_record(rng, key)
            continue
        attributes = {
            "specversion": "1.0",
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "source": rng.choice(SOURCES),
            "type": rng.choice(EVENT_TYPES),
            "time": (start + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "subject": entity,
            "partitionkey": entity,
        }
        if roll < 0.15:
            # Binary mode with no data: a deletion of this entity on a compacted topic.
            yield binary_record(attributes, None, key)
            continue
        payload = {"order": entity, "amount": rng.randrange(1, 10_000) / 100, "n": n}
        if rng.random() < 0.5:
            attributes["datacontenttype"] = "application/json"
            yield binary_record(attributes, json.dumps(payload).encode(), key)
        else:
            attributes["datacontenttype"] = "application/json"
            yield structured_record(attributes, payload, key)


def _invalid_record(rng: random.Random, key: bytes) -> SampleRecord:
    choice = rng.randrange(4)
    if choice == 0:
        return SampleRecord(key, b"not an event", [("content-type", b"text/plain")], False)
    if choice == 1:
        return SampleRecord(
            key, b"{broken json", [("content-type", b"application/cloudevents+json")], False
        )
    if choice == 2:
        headers = [("ce_specversion", b"1.0"), ("ce_source", b"/shop/eu"), ("ce_type", b"x")]
        return SampleRecord(key, b"{}", headers, False)  # no ce_id
    return SampleRecord(key, None, [], False)  # a plain tombstone, no CloudEvent


def produce_samples(
    settings: Settings, *, topic: str, count: int, partitions: int = 3, seed: int | None = 7
) -> ProducedSamples:
    """Create the topic (compacted) if needed and produce ``count`` sample records
    (``seed``: see :func:`sample_records`)."""
    create_topic(settings, topic, partitions=partitions, config={"cleanup.policy": "compact"})
    records = list(sample_records(count, seed=seed))
    produce_all(settings, topic, [(r.key, r.value, r.headers) for r in records])
    valid = sum(r.valid for r in records)
    return ProducedSamples(topic=topic, valid=valid, invalid=len(records) - valid)
