"""Duplicate events: the CloudEvents spec makes ``(source, id)`` unique per event, and
lets a consumer treat a repeat as a duplicate. At-least-once producers and republish's
Kafka sink do repeat events; ingest lands every record, so a repeat is a row too.

* :func:`unique_events` is the ``events_unique`` view: per ``(source, id)`` the first
  event by Kafka time (then topic, partition and offset, so that the choice is stable).
* :func:`mark_duplicates` is ingest's opt-in ``--dedup``: an event whose ``(source,
  id)`` is already in the events table within the horizon (Kafka time), or earlier in
  the same batch, becomes a reject with reason ``duplicate_event`` and the first one's
  coordinates in its detail. Every record is still accounted for exactly once.

Example:
    >>> unique_events(events).createOrReplaceTempView("events_unique")
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.sql.window import WindowSpec

from eventlake.warehouse.schemas import EVENTS_SCHEMA
from eventlake.warehouse.tables import rows_as_of

#: What makes an event unique (CloudEvents core: producers MUST keep it unique).
EVENT_IDENTITY: Final = ("source", "id")
#: Which of several events with one identity is the first.
FIRST_BY: Final = ("kafka_timestamp", "kafka_topic", "kafka_partition", "kafka_offset")
UNIQUE_VIEW: Final = "events_unique"
#: The reject reason of a repeated event under ``--dedup`` (ingest's, not the binding's).
DUPLICATE_EVENT: Final = "duplicate_event"


def identity_hash() -> Column:
    """A 64-bit hash of an event's identity, ``(source, id)``: equal identities hash
    equally (two different ones may too, rarely: compare the identities to be sure).

    Example:
        >>> events.select(identity_hash().alias("h"))
    """
    return F.xxhash64(*EVENT_IDENTITY)


def _by_identity() -> WindowSpec:
    """A window per ``(source, id)``, its rows shuffled and sorted by a hash of the
    identity first.

    Spark sorts on an 8-byte prefix of the first key, and sources share theirs (e.g.
    ``https://``): keyed on ``source`` alone, nearly every comparison fell back to
    comparing both strings (``--dedup``'s window over 2M identities: 3.5 -> 3.0 s). The
    hash changes no group: equal identities hash equally, and ``source`` and ``id``
    still tell apart two that collide.
    """
    return Window.partitionBy(identity_hash(), *EVENT_IDENTITY)


def unique_events(events: DataFrame) -> DataFrame:
    """``events`` with one row per ``(source, id)``: the first by Kafka time.

    Example:
        >>> unique_events(events).count() <= events.count()
        True
    """
    first = _by_identity().orderBy(*FIRST_BY)
    return events.withColumn("_nth", F.row_number().over(first)).where("_nth = 1").drop("_nth")


def unique_events_sql(table: str, columns: list[str]) -> str:
    """:func:`unique_events` as SQL over ``table`` (a table name as SQL) whose columns
    are ``columns``, for a session of one's own.

    Example:
        >>> unique_events_sql("events", ["id", "source", "kafka_timestamp"])
        'SELECT `id`, `source`, `kafka_timestamp` FROM (SELECT *, row_number() OVER ...'
    """
    listed = ", ".join("`" + c.replace("`", "``") + "`" for c in columns)
    identity = ", ".join(EVENT_IDENTITY)
    # Partitioned like _by_identity, for the same reason.
    return (
        f"SELECT {listed} FROM (SELECT *, row_number() OVER (PARTITION BY "
        f"xxhash64({identity}), {identity} ORDER BY {', '.join(FIRST_BY)}) AS _nth "
        f"FROM {table}) WHERE _nth = 1"
    )


def _first_of(*, ts: str, topic: str, partition: str, offset: str) -> Column:
    # Field order is the comparison order: Kafka time, then the coordinates.
    return F.struct(
        F.col(ts).alias("ts"),
        F.col(topic).alias("topic"),
        F.col(partition).alias("partition"),
        F.col(offset).alias("offset"),
    )


def landed_identities(
    spark: SparkSession, events_path: str, version: int, since: datetime
) -> DataFrame:
    """The ``(source, id)`` of every event in the events table as of ``version`` from
    ``since`` on (Kafka time), with where it landed: columns ``source``, ``id``,
    ``_landed`` (Kafka time, topic, partition, offset; compared in that order).

    Example:
        >>> landed_identities(spark, events_path, 42, datetime(2026, 11, 18)).columns
        ['source', 'id', '_landed']
    """
    narrow = StructType([EVENTS_SCHEMA[name] for name in (*EVENT_IDENTITY, *FIRST_BY)])
    # From the files with delta-rs' list: Delta's own scan of a version new to the process
    # costs Spark jobs of its own (~2 s in a fresh one).
    landed = rows_as_of(spark, events_path, version, narrow, since=("kafka_timestamp", since))
    if landed is None:
        landed = (
            spark.read.format("delta")
            .option("versionAsOf", version)
            .load(events_path)
            .where(F.col("kafka_timestamp") >= F.lit(since))
        )
    first = _first_of(
        ts="kafka_timestamp",
        topic="kafka_topic",
        partition="kafka_partition",
        offset="kafka_offset",
    )
    return landed.select(*EVENT_IDENTITY, first.alias("_landed"))


def mark_duplicates(decoded: DataFrame, landed: DataFrame | None, horizon: timedelta) -> DataFrame:
    """Decoded rows (:func:`eventlake.binding.decode.decode_records`) with every valid event
    that repeats an earlier ``(source, id)`` turned into a ``duplicate_event`` reject:
    earlier in the batch, or in ``landed`` (:func:`landed_identities`; None: nothing
    landed) when the first landed one is no more than ``horizon`` of Kafka time before
    it. The detail names the first one's coordinates. One shuffle: the batch and the
    landed identities side by side in one window per ``(source, id)``.

    Example:
        >>> landed = landed_identities(spark, path, 42, since)
        >>> marked = mark_duplicates(decoded, landed, timedelta(7))
        >>> marked.where("reject_reason = 'duplicate_event'").select("reject_detail").first()
        Row(reject_detail='duplicate of (source, id) first landed at orders/0/17 ...')
    """
    valid = F.col("reject_reason").isNull()
    own = _first_of(
        ts="kafka_timestamp",
        topic="kafka_topic",
        partition="kafka_partition",
        offset="kafka_offset",
    )
    identity = _by_identity()
    # A null of the struct's type: the batch's rows have landed nowhere.
    rows = decoded.withColumn("_landed", F.when(F.lit(False), own))
    if landed is not None:
        rows = rows.unionByName(landed, allowMissingColumns=True)
    from_batch = F.col("_landed").isNull()
    # A struct's order is its fields' (Kafka time, then the coordinates): the minimum is
    # the first, with no sort within an identity.
    marked = rows.select(
        "*",
        F.min(F.when(from_batch & valid, own)).over(identity).alias("_batch_first"),
        F.min("_landed").over(identity).alias("_landed_first"),
    ).where(from_batch)
    in_batch = F.when(valid & (F.col("_batch_first") != own), F.col("_batch_first"))
    within = F.col("_landed_first.ts") >= F.col("kafka_timestamp") - F.lit(horizon)
    first = F.coalesce(F.when(valid & within, F.col("_landed_first")), in_batch)
    duplicate = valid & first.isNotNull()
    detail = F.format_string(
        "duplicate of (source, id) first landed at %s/%d/%d (Kafka time %s)",
        first.topic,
        first.partition,
        first.offset,
        first.ts.cast("string"),
    )
    return marked.select(
        *[
            F.when(duplicate, F.lit(DUPLICATE_EVENT)).otherwise(F.col(c)).alias(c)
            if c == "reject_reason"
            else F.when(duplicate, detail).otherwise(F.col(c)).alias(c)
            if c == "reject_detail"
            else F.col(c)
            for c in decoded.columns
        ]
    )
