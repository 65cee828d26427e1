"""The warehouse's Delta tables: names, schemas, creation.

* ``events``: one row per valid CloudEvent (see :data:`eventlake.binding.EVENT_COLUMNS`).
* ``rejects``: every record read that is not a valid CloudEvent, raw, with a reason.

Schemas are derived from the decoder itself so the tables and the code cannot drift.

Example:
    >>> ensure_tables(spark, settings)
    >>> spark.read.format("delta").load(str(settings.table_path(EVENTS))).printSchema()
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from eventlake.binding import decode_records, to_events, to_rejects
from eventlake.settings import Settings

EVENTS = "events"
REJECTS = "rejects"
#: Results of the data-quality checks (written by eventlake.quality).
DQ_RESULTS = "dq_results"

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


def _nullable(schema: StructType) -> StructType:
    return StructType([StructField(f.name, f.dataType, True) for f in schema.fields])


def table_schemas(spark: SparkSession) -> dict[str, StructType]:
    """Schemas of the events and rejects tables, taken from the decoder's output."""
    decoded = decode_records(spark.createDataFrame([], KAFKA_SOURCE_SCHEMA))
    return {
        EVENTS: _nullable(to_events(decoded).schema),
        REJECTS: _nullable(to_rejects(decoded).schema),
    }


def ensure_tables(spark: SparkSession, settings: Settings) -> None:
    """Create the events and rejects tables where they do not exist yet; add the columns
    a newer eventlake introduced to tables an older one created (e.g. ``rejected_by``)."""
    from delta.tables import DeltaTable

    for name, schema in table_schemas(spark).items():
        path = str(settings.table_path(name))
        table = (
            DeltaTable.createIfNotExists(spark)
            .location(path)
            .addColumns(schema)
            .property("delta.enableChangeDataFeed", "false")
            .execute()
        )
        present = set(table.toDF().columns)
        missing = [field for field in schema.fields if field.name not in present]
        if missing:
            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
            spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({columns})")
