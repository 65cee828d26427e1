"""The warehouse's Delta tables: names, schemas, creation.

* ``events``: one row per valid CloudEvent (see :data:`eventlake.binding.EVENT_COLUMNS`).
* ``rejects``: every record read that is not a valid CloudEvent, raw, with a reason.

Schemas are derived from the decoder itself so the tables and the code cannot drift.

Writers that can lose a commit race to another writer (two ingests creating the tables
at once, a state MERGE against OPTIMIZE) go through :func:`retry_conflicts`.

Example:
    >>> ensure_tables(spark, settings)
    >>> spark.read.format("delta").load(str(settings.table_path(EVENTS))).printSchema()
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Final, TypeVar

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
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

from eventlake.binding import INGEST_JOB, decode_records, to_events, to_rejects
from eventlake.settings import Settings

T = TypeVar("T")

#: How many times in all a Delta write that lost a commit race is tried.
CONFLICT_ATTEMPTS: Final = 3
#: Pause before the n-th retry: n times this many seconds.
CONFLICT_BACKOFF_SECONDS: Final = 1.0

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


#: The schemas below, worked out once per process: planning the decoder takes a second.
_DECODER_SCHEMAS: dict[str, StructType] = {}


def table_schemas(spark: SparkSession) -> dict[str, StructType]:
    """Schemas of the events and rejects tables, taken from the decoder's output.

    Example:
        >>> table_schemas(spark)[EVENTS].fieldNames()[:3]
        ['id', 'source', 'specversion']
    """
    if not _DECODER_SCHEMAS:
        decoded = decode_records(spark.createDataFrame([], KAFKA_SOURCE_SCHEMA))
        _DECODER_SCHEMAS[EVENTS] = _nullable(to_events(decoded).schema)
        _DECODER_SCHEMAS[REJECTS] = _nullable(to_rejects(decoded).schema)
    return dict(_DECODER_SCHEMAS)


def retry_conflicts(
    action: Callable[[], T],
    *,
    what: str,
    retryable: tuple[type[BaseException], ...],
    attempts: int = CONFLICT_ATTEMPTS,
    backoff_seconds: float = CONFLICT_BACKOFF_SECONDS,
) -> T:
    """Run ``action``; when Delta refuses its commit because another writer committed
    first (one of the ``retryable`` conflicts), print one line, pause a little longer
    each time and run it again, on the table's new snapshot, at most ``attempts`` times
    in all. Only for actions that are safe to repeat; each caller says why.

    Example:
        >>> from delta.exceptions import ConcurrentDeleteReadException
        >>> retry_conflicts(merge, what="state orders", retryable=(ConcurrentDeleteReadException,))
        state orders: lost a commit race to a concurrent writer (ConcurrentDeleteReadException: ...
    """
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except retryable as error:
            if attempt == attempts:
                raise
            first_line = str(error).splitlines()[0][:200] if str(error) else ""
            print(
                f"{what}: lost a commit race to a concurrent writer ({type(error).__name__}: "
                f"{first_line}); retrying, attempt {attempt + 1} of {attempts}",
                flush=True,
            )
            time.sleep(backoff_seconds * attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


#: What Delta says when another writer is creating the same table: its log folder
#: exists, its first commit not yet.
_CREATION_RACE_CONDITIONS: Final = frozenset(
    {"DELTA_TABLE_NOT_FOUND", "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"}
)


class TableCreationRaceError(RuntimeError):
    """Creating a table found its location half-created, most likely by another writer
    creating it at the same moment; the message is Delta's."""


def merge_source(rows: DataFrame) -> DataFrame:
    """``rows`` computed once and held (memory, then disk) as the source of a MERGE.

    Delta plans a MERGE source again on its own, without Spark's cache, so a source
    derived from the (cached) decoded batch would run the decoder once more, with the
    filters pushed down into it: Spark inlines the decoder's shared sub-expressions at
    every use and compiles a huge expression tree (minutes for ten records). A
    checkpointed source is read as it is.

    Example:
        >>> source = merge_source(to_events(decoded))
        >>> DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "...")
    """
    return rows.localCheckpoint(eager=True)


def ensure_tables(spark: SparkSession, settings: Settings) -> set[str]:
    """Create the events and rejects tables where they do not exist yet; add the columns
    a newer eventlake introduced to tables an older one created (e.g. ``rejected_by``).

    Returns the names of the tables that had no Delta log before: those are empty, which
    spares callers a first read of them (seconds in a fresh process).

    Example:
        >>> ensure_tables(spark, settings)
        {'events', 'rejects'}
    """
    from delta.exceptions import MetadataChangedException, ProtocolChangedException
    from delta.tables import DeltaTable

    def ensure(name: str, schema: StructType) -> None:
        path = str(settings.table_path(name))
        try:
            table = (
                DeltaTable.createIfNotExists(spark)
                .location(path)
                .addColumns(schema)
                .property("delta.enableChangeDataFeed", "false")
                .execute()
            )
        except AnalysisException as error:
            if error.getCondition() not in _CREATION_RACE_CONDITIONS:
                raise
            raise TableCreationRaceError(str(error)) from error
        present = set(table.toDF().columns)
        missing = [field for field in schema.fields if field.name not in present]
        if missing:
            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
            spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({columns})")

    new = {
        name
        for name in (EVENTS, REJECTS)
        if not (settings.table_path(name) / "_delta_log").exists()
    }
    for name, schema in table_schemas(spark).items():
        # Two runs starting on a fresh warehouse (e.g. the ingest DAG's mapped tasks, one
        # per topic) both create version 0: the loser gets ProtocolChanged/MetadataChanged,
        # or finds the other's log folder before its first commit (TableCreationRace).
        # Repeating is safe: once the table exists createIfNotExists leaves it as it is,
        # and columns already added are not added again.
        retry_conflicts(
            partial(ensure, name, schema),
            what=f"create table {name}",
            retryable=(
                ProtocolChangedException,
                MetadataChangedException,
                TableCreationRaceError,
            ),
            attempts=5,
        )
    return new


def rejected_by_ingest() -> Column:
    """The rows of ``rejects`` that ingest wrote (republish writes its own rejects of the
    same records there too). Rows from before ``rejected_by`` existed were ingest's.

    Example:
        >>> rejects.where(rejected_by_ingest()).count()
        3
    """
    return F.coalesce(F.col("rejected_by"), F.lit(INGEST_JOB)) == INGEST_JOB


def ingested_next_offsets(
    spark: SparkSession, settings: Settings, topic: str | None = None
) -> dict[str, dict[int, int]]:
    """Per topic (only ``topic`` when given) and partition, the offset after the last
    record ingest landed, in events or (its own) rejects.

    Example:
        >>> ingested_next_offsets(spark, settings, "orders")
        {'orders': {0: 1200, 1: 1187}}
    """
    frames = []
    for name in (EVENTS, REJECTS):
        path = settings.table_path(name)
        if not (path / "_delta_log").is_dir():
            continue
        frame = spark.read.format("delta").load(str(path))
        if name == REJECTS:
            frame = frame.where(rejected_by_ingest())
        if topic is not None:
            frame = frame.where(F.col("kafka_topic") == topic)
        frames.append(frame.select("kafka_topic", "kafka_partition", "kafka_offset"))
    if not frames:
        return {}
    union = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    rows = (
        union.groupBy("kafka_topic", "kafka_partition")
        .agg(F.max("kafka_offset").alias("last"))
        .collect()
    )
    offsets: dict[str, dict[int, int]] = {}
    for row in rows:
        offsets.setdefault(row["kafka_topic"], {})[int(row["kafka_partition"])] = row["last"] + 1
    return offsets
