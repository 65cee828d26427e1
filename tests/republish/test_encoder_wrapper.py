"""The Python side of the sender: the JVM encoder registered as a Spark SQL function, run
once per record by a republish plan, and the wrapper's checks and shape.

(The rules themselves: lib/jvm's JUnit tests (KafkaEncoderTest), record by record, and
on the real broker test_run.py.)
"""

from __future__ import annotations

import pytest
from pyspark.sql import Observation, SparkSession

from eventlake.binding.decode import decode_records
from eventlake.binding.encode import ENCODER_FUNCTION, MAPPED_KEY, Hop, encode_as
from eventlake.binding.reason_counts import observe_reasons
from eventlake.republish.request import RepublishRequest
from eventlake.republish.routing import (
    REPUBLISH_REASONS,
    route_records,
    routed_records,
    routed_rejects,
)
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA

EVENT = (
    b"k",
    b"[1]",
    "src",
    0,
    7,
    None,
    0,
    [
        ("ce_specversion", b"1.0"),
        ("ce_id", b"e-1"),
        ("ce_source", b"/s"),
        ("ce_type", b"t"),
        ("ce_partitionkey", b"p-1"),
    ],
)


def test_a_republish_plan_runs_the_encoder_once_per_record(spark: SparkSession) -> None:
    # The encoder's struct feeds value, headers and the key (and through the key the
    # reasons): Spark must not copy it into each of them.
    raw = spark.createDataFrame([], KAFKA_SOURCE_SCHEMA)
    request = RepublishRequest(
        source="src", target="dst", key_mapper="partitionkey", to_mode="structured"
    )
    planned = observe_reasons(
        route_records(decode_records(raw), request, target_compacted=True),
        Observation(),
        "republish_reason",
        REPUBLISH_REASONS,
    )
    for frame in (routed_records(planned), routed_rejects(planned, "dst")):
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert plan.count(f"{ENCODER_FUNCTION}(") == 1


def test_encode_as_adds_the_mapped_key_only_when_asked(spark: SparkSession) -> None:
    decoded = decode_records(spark.createDataFrame([EVENT], KAFKA_SOURCE_SCHEMA))
    assert MAPPED_KEY not in decoded.transform(encode_as, "binary").columns
    row = encode_as(decoded, "keep", key_attribute="partitionkey").first()
    assert row is not None
    assert (bytes(row[MAPPED_KEY]), bytes(row.encoded_value)) == (b"p-1", b"[1]")


def test_a_kept_record_reads_the_attributes_its_key_and_hop_name(spark: SparkSession) -> None:
    # Keep mode hands the encoder only the attributes named: these must still arrive.
    decoded = decode_records(spark.createDataFrame([EVENT], KAFKA_SOURCE_SCHEMA))
    hop = Hop(attribute_headers=(("source", "x-source"),))
    row = encode_as(decoded, "keep", key_attribute="id", hop=hop).first()
    assert row is not None
    assert bytes(row[MAPPED_KEY]) == b"e-1"
    assert (row.encoded_headers[-1].key, bytes(row.encoded_headers[-1].value)) == (
        "x-source",
        b"/s",
    )


def test_encode_as_refuses_an_unknown_mode(spark: SparkSession) -> None:
    decoded = decode_records(spark.createDataFrame([], KAFKA_SOURCE_SCHEMA))
    with pytest.raises(ValueError, match="content mode"):
        encode_as(decoded, "avro")  # type: ignore[arg-type]


def test_a_trail_needs_its_target(spark: SparkSession) -> None:
    decoded = decode_records(spark.createDataFrame([], KAFKA_SOURCE_SCHEMA))
    with pytest.raises(ValueError, match="target"):
        encode_as(decoded, "keep", hop=Hop(trail_header="trail"))


def test_the_hop_reaches_the_jvm_as_written(spark: SparkSession) -> None:
    decoded = decode_records(spark.createDataFrame([EVENT], KAFKA_SOURCE_SCHEMA))
    hop = Hop(
        drop_headers=("ce_none",),
        attribute_headers=(("partitionkey", "x-key"),),
        insert_headers=(("team", "é"),),
        trail_header="trail",
        target="dst",
    )
    row = encode_as(decoded, "keep", hop=hop).first()
    assert row is not None
    headers = [(h.key, bytes(h.value)) for h in row.encoded_headers]
    assert headers[:-1] == [*EVENT[7], ("x-key", b"p-1"), ("team", "é".encode())]
    assert headers[-1][0] == "trail"
    assert headers[-1][1].startswith(b'{"topic":"src","partition":0,"offset":7,"target":"dst"')
