"""Records with headers produced by confluent-kafka to the real broker come back through
Spark's Kafka source (includeHeaders) into a Delta table byte for byte."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_producer
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker

RECORDS = [
    (b"k1", b"v1", [("h", b"\x00\x01"), ("h", b"dup"), ("ce_id", b"1")]),
    (b"\xff\xfe", b"\x80binary", [("x", b"")]),
    (None, b"no key", []),
    (b"tomb", None, [("ce_id", b"2")]),
]


def test_headers_keys_and_values_survive_byte_for_byte(
    broker: LocalBroker, spark: SparkSession, settings: Settings, topic_name: str, tmp_path: Path
) -> None:
    create_topic(settings, topic_name)
    producer = make_producer(settings)
    for key, value, headers in RECORDS:
        producer.produce(topic_name, key=key, value=value, headers=headers)
    assert producer.flush(30) == 0

    path = str(tmp_path / "raw")
    (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic_name)
        .option("includeHeaders", "true")
        .load()
        .write.format("delta")
        .save(path)
    )
    rows = spark.read.format("delta").load(path).orderBy("offset").collect()
    got = [
        (
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            [(h.key, bytes(h.value)) for h in (r.headers or [])],
        )
        for r in rows
    ]
    assert got == RECORDS
