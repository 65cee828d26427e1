"""Small helpers shared by tests: producing CloudEvents and reading tables back."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession

from eventlake.kafka import Record, produce_all
from eventlake.settings import Settings


def binary_headers(
    event_id: str, *, source: str = "/tests", type_: str = "t.test"
) -> list[tuple[str, bytes]]:
    return [
        ("ce_specversion", b"1.0"),
        ("ce_id", event_id.encode()),
        ("ce_source", source.encode()),
        ("ce_type", type_.encode()),
    ]


def structured_value(event_id: str, *, source: str = "/tests", data: object = None) -> bytes:
    body: dict[str, object] = {
        "specversion": "1.0",
        "id": event_id,
        "source": source,
        "type": "t.test",
    }
    if data is not None:
        body["data"] = data
    return json.dumps(body).encode()


def produce_events(
    settings: Settings, topic: str, count: int, *, prefix: str = "e", invalid_every: int = 0
) -> tuple[int, int]:
    """Produce ``count`` records alternating binary and structured mode; every
    ``invalid_every``-th one is a plain tombstone. Returns (valid, invalid)."""
    records: list[Record] = []
    valid = invalid = 0
    for n in range(count):
        key = f"k{n % 97}".encode()
        if invalid_every and n % invalid_every == 0:
            records.append((key, None, []))
            invalid += 1
        elif n % 2:
            records.append((key, b"%d" % n, binary_headers(f"{prefix}{n}")))
            valid += 1
        else:
            json_ct = [("content-type", b"application/cloudevents+json")]
            records.append((key, structured_value(f"{prefix}{n}", data={"n": n}), json_ct))
            valid += 1
    produce_all(settings, topic, records)
    return valid, invalid


def read_table(spark: SparkSession, settings: Settings, name: str) -> DataFrame:
    return spark.read.format("delta").load(str(settings.table_path(name)))
