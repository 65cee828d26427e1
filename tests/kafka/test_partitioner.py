"""Keys land on the partition the Java client's default partitioner gives.

The reference is the Java client's own code, called in Spark's JVM (kafka-clients is on
Spark's classpath): ``Utils.toPositive(Utils.murmur2(key)) % partitions``, which is
what ``BuiltInPartitioner.partitionForKey`` computes for a record with a key.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.republish import RepublishRequest, run_republish

SOURCE_PARTITIONS = 7
TARGET_PARTITIONS = 5
KEY_COUNT = 500


def _keys() -> list[bytes]:
    """Text keys, non-ASCII keys and raw binary keys of varied lengths."""
    rng = random.Random(7)
    keys = [f"customer-{n}".encode() for n in range(KEY_COUNT - 100)]
    keys += [f"clé-{n}-ü".encode() for n in range(50)]
    keys += [rng.randbytes(rng.randint(1, 24)) for _ in range(50)]
    return list(dict.fromkeys(keys))


def java_partition(spark: SparkSession, key: bytes, partitions: int) -> int:
    """The Java client's partition for a keyed record (its own murmur2, via py4j)."""
    utils = spark._jvm.org.apache.kafka.common.utils.Utils
    return int(utils.toPositive(utils.murmur2(bytearray(key)))) % partitions


def _partitions_by_key(spark: SparkSession, settings: Settings, topic: str) -> dict[bytes, int]:
    rows = (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .load()
        .select("key", "partition")
        .collect()
    )
    return {bytes(r.key): r.partition for r in rows}


@pytest.fixture(scope="module")
def source(broker: LocalBroker, settings: Settings) -> Iterator[str]:
    """A topic filled by eventlake's Python producer (librdkafka, murmur2_random)."""
    topic = "partitioner-source"
    create_topic(settings, topic, partitions=SOURCE_PARTITIONS)
    records: list[Record] = [(key, b"v", []) for key in _keys()]
    produce_all(settings, topic, records)
    yield topic


def test_java_reference_is_the_java_client_code(spark: SparkSession) -> None:
    # Known value of Kafka's murmur2 (its unit tests): "21" hashes to -973932308.
    utils = spark._jvm.org.apache.kafka.common.utils.Utils
    assert utils.murmur2(bytearray(b"21")) == -973932308


def test_python_producer_places_keys_like_the_java_client(
    spark: SparkSession, settings: Settings, source: str
) -> None:
    placed = _partitions_by_key(spark, settings, source)
    assert len(placed) == len(_keys())
    wrong = {
        key: partition
        for key, partition in placed.items()
        if partition != java_partition(spark, key, SOURCE_PARTITIONS)
    }
    assert wrong == {}


def test_librdkafka_default_partitioner_would_not(
    spark: SparkSession, settings: Settings, source: str
) -> None:
    """Why make_producer sets murmur2_random: the default (CRC32) places keys elsewhere."""
    topic = "partitioner-librdkafka-default"
    create_topic(settings, topic, partitions=SOURCE_PARTITIONS)
    from confluent_kafka import Producer

    producer = Producer(settings.kafka_client_options())
    for key in _keys()[:100]:
        producer.produce(topic, key=key, value=b"v")
    assert producer.flush(30) == 0
    placed = _partitions_by_key(spark, settings, topic)
    differing = [k for k, p in placed.items() if p != java_partition(spark, k, SOURCE_PARTITIONS)]
    assert len(differing) > 50


def test_spark_kafka_sink_places_republished_keys_like_the_java_client(
    spark: SparkSession, settings: Settings, source: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    target = "partitioner-target"
    run_settings = settings.model_copy(
        update={"warehouse": tmp_path_factory.mktemp("partitioner") / "warehouse"}
    )
    request = RepublishRequest(
        source=source, target=target, partitions=TARGET_PARTITIONS, ending_offsets="latest"
    )
    summary = run_republish(spark, run_settings, request)
    assert summary.republished == len(_keys())
    placed = _partitions_by_key(spark, settings, target)
    wrong = {
        key: partition
        for key, partition in placed.items()
        if partition != java_partition(spark, key, TARGET_PARTITIONS)
    }
    assert len(placed) == len(_keys())
    assert wrong == {}
