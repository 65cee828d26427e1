"""The schema of every warehouse table, and of the rows Spark's Kafka source gives:
one declaration each, which creation, the writers and the tests share.

Example:
    >>> EVENTS_SCHEMA.fieldNames()[:3]
    ['id', 'source', 'specversion']
"""

from __future__ import annotations

from typing import Final

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from eventlake.warehouse.names import EVENTS, REJECTS

#: The row shape of Spark's Kafka source with ``includeHeaders=true``.
KAFKA_SOURCE_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(
                StructType([StructField("key", StringType()), StructField("value", BinaryType())])
            ),
        ),
    ]
)


def _columns(*columns: tuple[str, DataType]) -> StructType:
    # Every column nullable: Delta keeps the nullability it is given at creation and
    # would refuse later rows with a null there.
    return StructType([StructField(name, data_type, True) for name, data_type in columns])


#: Kafka record headers as Spark's Kafka source gives them: key string, value binary.
KAFKA_HEADERS_TYPE: Final = KAFKA_SOURCE_SCHEMA["headers"].dataType


_KAFKA_POSITION: Final = (
    ("kafka_topic", StringType()),
    ("kafka_partition", IntegerType()),
    ("kafka_offset", LongType()),
    ("kafka_timestamp", TimestampType()),
    ("kafka_key", BinaryType()),
)


#: Where a record was in Kafka: columns both the events and the rejects table have.
KAFKA_POSITION_COLUMNS: Final = tuple(name for name, _ in _KAFKA_POSITION)


#: One row per valid CloudEvent: the context attributes, data (bytes as received), the
#: data as a VARIANT when it is JSON (``data_json``: datacontenttype ``application/json``,
#: ``text/json`` or ``+json``, or none in structured mode; null when it does not parse),
#: extensions (as strings), the content mode and where the record was in Kafka.
EVENTS_SCHEMA: Final = _columns(
    ("id", StringType()),
    ("source", StringType()),
    ("specversion", StringType()),
    ("type", StringType()),
    ("datacontenttype", StringType()),
    ("dataschema", StringType()),
    ("subject", StringType()),
    ("time", TimestampType()),
    ("data", BinaryType()),
    ("data_json", VariantType()),
    ("extensions", MapType(StringType(), StringType(), True)),
    ("content_mode", StringType()),
    *_KAFKA_POSITION,
    ("ingested_at", TimestampType()),
)


#: One row per record read that is not a valid CloudEvent: the record raw, the reason
#: (:class:`eventlake.binding.decode.RejectReason` or republish's), its detail, and which job
#: read it.
REJECTS_SCHEMA: Final = _columns(
    *_KAFKA_POSITION,
    ("kafka_value", BinaryType()),
    ("kafka_headers", KAFKA_HEADERS_TYPE),
    ("reason", StringType()),
    ("detail", StringType()),
    ("rejected_by", StringType()),
    ("ingested_at", TimestampType()),
)


_SAMPLE_TYPE: Final = ArrayType(
    _columns(
        ("kafka_topic", StringType()),
        ("kafka_partition", IntegerType()),
        ("kafka_offset", LongType()),
    )
)


#: One row per check and topic of a data-quality run.
DQ_RESULTS_SCHEMA: Final = _columns(
    ("run_id", StringType()),
    ("run_time", TimestampType()),
    ("table", StringType()),
    ("slice", StringType()),
    ("topic", StringType()),
    ("check", StringType()),
    ("expectation", StringType()),
    ("severity", StringType()),
    ("success", BooleanType()),
    ("observed_value", StringType()),
    ("unexpected_count", LongType()),
    ("unexpected_sample", _SAMPLE_TYPE),
    # The run's --topic (null: all topics) and the versions it read up to: the state
    # from which the next incremental run starts.
    ("topic_filter", StringType()),
    ("table_version", LongType()),
    ("rejects_version", LongType()),
)


#: Columns (Parquet paths) written without Parquet's dictionary encoding, where a table
#: has them: an entity key repeats across a topic but has ~100,000 values, so Parquet
#: keeps growing a dictionary per row group (its lookups for these two columns were 10%
#: of an ingest's task time at 1M records, a JFR profile), where plain bytes and Snappy
#: cost less. An ingest of 1M mixed events: 21.1 s against 21.75 s by medians of seven
#: alternating processes (docs/benchmarks.md).
PLAIN_ENCODED_COLUMNS: Final = ("kafka_key", "extensions.key_value.value")


def parquet_column_paths(schema: StructType) -> set[str]:
    """The Parquet paths of ``schema``'s leaf columns, as Parquet's per-column settings
    name them (a map's values: ``<column>.key_value.value``).

    Example:
        >>> sorted(parquet_column_paths(_columns(("m", MapType(StringType(), StringType())))))
        ['m.key_value.key', 'm.key_value.value']
    """
    paths: set[str] = set()

    def walk(prefix: str, data_type: DataType) -> None:
        if isinstance(data_type, StructType):
            for child in data_type.fields:
                walk(f"{prefix}.{child.name}" if prefix else child.name, child.dataType)
        elif isinstance(data_type, MapType):
            walk(f"{prefix}.key_value.key", data_type.keyType)
            walk(f"{prefix}.key_value.value", data_type.valueType)
        else:
            paths.add(prefix)

    walk("", schema)
    return paths


#: The warehouse tables that ingest creates, by name.
INGEST_TABLES: Final = {EVENTS: EVENTS_SCHEMA, REJECTS: REJECTS_SCHEMA}
