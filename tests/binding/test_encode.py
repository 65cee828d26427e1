"""The mode conversion on its own (no broker): how a structured event's data is typed
once it is a binary record. The exact conversions of the corpus, byte for byte through
Kafka, are checked with the republish runs in test_run.py."""

from __future__ import annotations

from pyspark.sql import SparkSession

from eventlake.binding.decode import decode_records
from eventlake.binding.encode import encode_as

#: name -> (structured value, content-type expected on the binary record or None).
UNTYPED_DATA = {
    "json-object": (
        b'{"specversion":"1.0","id":"u1","source":"/u","type":"t","data":{"a":1}}',
        b"application/json",
    ),
    "json-string": (
        b'{"specversion":"1.0","id":"u2","source":"/u","type":"t","data":"hi"}',
        b"application/json",
    ),
    "json-beside-null-base64": (
        b'{"specversion":"1.0","id":"u3","source":"/u","type":"t","data_base64":null,"data":[1]}',
        b"application/json",
    ),
    # The base64 of {"a":1}: bytes that look like JSON, but are not the JSON data member.
    "base64": (
        b'{"specversion":"1.0","id":"u4","source":"/u","type":"t","data_base64":"eyJhIjoxfQ=="}',
        None,
    ),
    "base64-escaped-name": (
        b'{"specversion":"1.0","id":"u5","source":"/u","type":"t",'
        b'"data_b\\u0061se64":"eyJhIjoxfQ=="}',
        None,
    ),
    "data-null": (b'{"specversion":"1.0","id":"u6","source":"/u","type":"t","data":null}', None),
    "no-data": (b'{"specversion":"1.0","id":"u7","source":"/u","type":"t"}', None),
    "typed": (
        b'{"specversion":"1.0","id":"u8","source":"/u","type":"t",'
        b'"datacontenttype":"text/plain","data":"hi"}',
        b"text/plain",
    ),
}


def test_to_binary_types_untyped_json_data_as_application_json(spark: SparkSession) -> None:
    """JSON format 3.1.2: JSON data without datacontenttype is application/json, so the
    binary record says so; data from data_base64 (or no data) gets no content-type."""
    records = spark.createDataFrame(
        [
            (
                name.encode(),
                value,
                "untyped",
                0,
                offset,
                None,
                0,
                [("content-type", b"application/cloudevents+json")],
            )
            for offset, (name, (value, _)) in enumerate(UNTYPED_DATA.items())
        ],
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>",
    )

    rows = decode_records(records).transform(encode_as, "binary").collect()

    assert {bytes(r.kafka_key).decode(): r.reject_reason for r in rows} == dict.fromkeys(
        UNTYPED_DATA
    )
    content_types = {
        bytes(r.kafka_key).decode(): [
            bytes(h.value) for h in r.encoded_headers if h.key == "content-type"
        ]
        for r in rows
    }
    assert content_types == {
        name: [] if expected is None else [expected] for name, (_, expected) in UNTYPED_DATA.items()
    }
