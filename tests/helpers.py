"""Small helpers shared by tests: producing CloudEvents and reading tables back."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession

from eventlake.kafka import make_producer
from eventlake.settings import Settings


def binary_headers(event_id: str, *, source: str = "/tests", type_: str = "t.test") -> list[tuple[str, bytes]]:
    return [
        ("ce_specversion", b"1.0"),
        ("ce_id", event_id.encode()),
        ("ce_source", source.encode()),
        ("ce_type", type_.encode()),
    ]


def structured_value(event_id: str, *, source: str = "/tests", data: object = None) -> bytes:
    body: dict[str, object] = {"specversion": "1.0", "id": event_id, "source": source, "type": "t.test"}
    if data is not None:
        body["data"] = data
    return json.dumps(body).encode()


def produce_events(
    settings: Settings, topic: str, count: int, *, prefix: str = "e", invalid_every: int = 0
) -> tuple[int, int]:
    """Produce ``count`` records alternating binary and structured mode; every
    ``invalid_every``-th one is a plain tombstone. Returns (valid, invalid)."""
    producer = make_producer(settings)
    valid = invalid = 0
    for n in range(count):
        key = f"k{n % 97}".encode()
        if invalid_every and n % invalid_every == 0:
            producer.produce(topic, key=key, value=None)
            invalid += 1
        elif n % 2:
            producer.produce(topic, key=key, value=b"%d" % n, headers=binary_headers(f"{prefix}{n}"))
            valid += 1
        else:
            producer.produce(
                topic,
                key=key,
                value=structured_value(f"{prefix}{n}", data={"n": n}),
                headers=[("content-type", b"application/cloudevents+json")],
            )
            valid += 1
        producer.poll(0)
    assert producer.flush(60) == 0
    return valid, invalid


def read_table(spark: SparkSession, settings: Settings, name: str) -> DataFrame:
    return spark.read.format("delta").load(str(settings.table_path(name)))
