"""The Python side of the binding: the JVM decoder registered as a Spark SQL function,
its reason codes equal to :class:`RejectReason`, and the wrapper's frame shape.

(The rules themselves: lib/jvm's JUnit tests, record by record, and on the real broker
test_binding_conformance.py and test_hostile_corpus.py.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    DECODER_FUNCTION,
    EVENT_COLUMNS,
    RejectReason,
    decode_records,
    to_events,
    to_rejects,
)
from eventlake.spark.session import session_conf
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA
from tests.ingest.test_hostile_corpus import CORPUS

VALID_HEADERS = [
    ("ce_specversion", b"1.0"),
    ("ce_id", b"e-1"),
    ("ce_source", b"/s"),
    ("ce_type", b"t"),
]


def test_reason_codes_are_the_jvm_decoders(spark: SparkSession) -> None:
    jvm_codes = spark.sparkContext._jvm.io.eventlake.cloudevents.KafkaBinding.Reason.ALL  # type: ignore[union-attr]
    assert list(jvm_codes) == [reason.value for reason in RejectReason]


def test_decoder_is_a_sql_function(spark: SparkSession) -> None:
    row = spark.sql(
        f"SELECT {DECODER_FUNCTION}(CAST(NULL AS BINARY), "
        "CAST(array() AS array<struct<key:string,value:binary>>)).reject_reason AS reason"
    ).first()
    assert row is not None
    assert row["reason"] == RejectReason.PLAIN_TOMBSTONE


def test_decoder_refuses_columns_that_are_not_kafkas(spark: SparkSession) -> None:
    with pytest.raises(AnalysisException, match="includeHeaders=true"):
        spark.sql(f"SELECT {DECODER_FUNCTION}('text', 1)").collect()


def test_one_record_splits_into_exactly_one_table(spark: SparkSession) -> None:
    rows = [
        (b"k", b"x", "t", 0, 0, datetime(2024, 1, 1), 0, VALID_HEADERS),
        (b"k", None, "t", 0, 1, datetime(2024, 1, 1), 0, []),
    ]
    decoded = decode_records(spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA))
    events = to_events(decoded).collect()
    rejects = to_rejects(decoded).collect()
    assert [e["kafka_offset"] for e in events] == [0]
    assert tuple(to_events(decoded).columns) == EVENT_COLUMNS
    assert [(r["kafka_offset"], r["reason"], r["rejected_by"]) for r in rejects] == [
        (1, RejectReason.PLAIN_TOMBSTONE.value, "ingest")
    ]


def test_a_filter_on_the_reason_does_not_run_the_decoder_twice(spark: SparkSession) -> None:
    # Spark pushes such a filter below the decoding projection, copying the decoder into
    # it, unless decode_records puts a node in between that filters do not pass.
    raw = spark.createDataFrame([], KAFKA_SOURCE_SCHEMA)
    plan = to_events(decode_records(raw))._jdf.queryExecution().executedPlan().toString()
    assert plan.count(f"{DECODER_FUNCTION}(") == 1


def _decoded_rows(spark: SparkSession, rows: list[tuple[Any, ...]]) -> list[Row]:
    decoded = decode_records(spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA))
    # Times as microseconds: Python's datetime cannot hold the corpus's year-1 edge cases.
    decoded = decoded.drop("ingested_at").withColumn("time", F.unix_micros("time"))
    return sorted(
        (_variant_as_bytes(row) for row in decoded.collect()), key=lambda row: row["kafka_offset"]
    )


def _variant_as_bytes(row: Row) -> Row:
    """``row`` with ``data_json`` as its exact (value, metadata) bytes: Python's VariantVal
    compares by identity."""
    fields = row.asDict()
    variant = fields["data_json"]
    if variant is not None:
        fields["data_json"] = (bytes(variant.value), bytes(variant.metadata))
    return Row(**fields)


def test_generated_code_decodes_as_the_interpreted_path(spark: SparkSession) -> None:
    # The decoder runs inside Spark's whole-stage generated code; with code generation
    # off, Spark calls its interpreted eval instead. Both must land every record alike.
    rows = _corpus_rows()
    raw = spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA)
    plan = decode_records(raw)._jdf.queryExecution().executedPlan().toString()
    stage_of_decoder = [line for line in plan.splitlines() if f"{DECODER_FUNCTION}(" in line]
    assert stage_of_decoder and stage_of_decoder[0].lstrip(" +-:").startswith("*(")
    generated = _decoded_rows(spark, rows)
    interpreted_conf = {
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }
    with session_conf(spark, interpreted_conf):
        interpreted = _decoded_rows(spark, rows)
    assert len(generated) == len(rows) > 40
    assert {row["reject_reason"] for row in generated} >= {None, RejectReason.MALFORMED_JSON}
    assert generated == interpreted


def _corpus_rows() -> list[tuple[Any, ...]]:
    """The hostile corpus's records of at most 64 KB as Kafka source rows."""
    small = [case for case in CORPUS if len(case.value or b"") <= 64 * 1024]
    return [
        (
            case.record_key,
            case.value,
            "t",
            0,
            offset,
            datetime(2024, 1, 1),
            0,
            [
                (k.decode("utf-8", "replace") if isinstance(k, bytes) else k, v)
                for k, v in case.headers
            ],
        )
        for offset, case in enumerate(small)
    ]


@pytest.mark.parametrize(
    ("options", "left_out"),
    [
        ({"data_json": False}, ("data_json", "data_json_invalid")),
        ({"data_json": False, "data": False}, ("data", "data_json", "data_json_invalid")),
    ],
    ids=["without-variant", "without-data"],
)
def test_a_lean_decoder_leaves_out_only_what_it_is_asked_to(
    spark: SparkSession, options: dict[str, bool], left_out: tuple[str, ...]
) -> None:
    # Republish and the rejects pass decode without the VARIANT, or without the data:
    # every other field, every record's fate above all, must be what the full decoder
    # gives, over the whole hostile corpus.
    raw = spark.createDataFrame(_corpus_rows(), KAFKA_SOURCE_SCHEMA).cache()
    full = decode_records(raw).drop("ingested_at").withColumn("time", F.unix_micros("time"))
    lean = decode_records(raw, **options).drop("ingested_at")
    lean = lean.withColumn("time", F.unix_micros("time"))
    kept = [c for c in full.columns if c not in left_out]
    assert full.select(kept).orderBy("kafka_offset").collect() == (
        lean.select(kept).orderBy("kafka_offset").collect()
    )
    leftovers = lean.where(
        " OR ".join(f"{c} IS NOT NULL" for c in left_out if c != "data_json_invalid")
        + " OR data_json_invalid"
    )
    assert leftovers.count() == 0
    # The comparison covers events with data, JSON data among them.
    assert full.where("data IS NOT NULL").count() > 10
    assert full.where("data_json IS NOT NULL").count() > 0
    raw.unpersist()


@pytest.mark.parametrize(
    ("flags", "name"), [("'yes'", "data_json"), ("true, 'yes'", "data")], ids=["data_json", "data"]
)
def test_the_decoders_flags_must_be_constant(spark: SparkSession, flags: str, name: str) -> None:
    with pytest.raises(Exception, match=f": {name} must be a constant true or false"):
        spark.sql(
            f"SELECT {DECODER_FUNCTION}(CAST(NULL AS BINARY), "
            f"CAST(array() AS array<struct<key:string,value:binary>>), {flags})"
        ).collect()
