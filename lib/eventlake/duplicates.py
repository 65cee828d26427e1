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

#: What makes an event unique (CloudEvents core: producers MUST keep it unique).
EVENT_IDENTITY: Final = ("source", "id")
#: Which of several events with one identity is the first.
FIRST_BY: Final = ("kafka_timestamp", "kafka_topic", "kafka_partition", "kafka_offset")
UNIQUE_VIEW: Final = "events_unique"
#: The reject reason of a repeated event under ``--dedup`` (ingest's, not the binding's).
DUPLICATE_EVENT: Final = "duplicate_event"


def unique_events(events: DataFrame) -> DataFrame:
    """``events`` with one row per ``(source, id)``: the first by Kafka time.

    Example:
        >>> unique_events(events).count() <= events.count()
        True
    """
    first = Window.partitionBy(*EVENT_IDENTITY).orderBy(*FIRST_BY)
    return events.withColumn("_nth", F.row_number().over(first)).where("_nth = 1").drop("_nth")


def unique_events_sql(table: str, columns: list[str]) -> str:
    """:func:`unique_events` as SQL over ``table`` (a table name as SQL) whose columns
    are ``columns``, for a session of one's own.

    Example:
        >>> unique_events_sql("events", ["id", "source", "kafka_timestamp"])
        'SELECT `id`, `source`, `kafka_timestamp` FROM (SELECT *, row_number() OVER ...'
    """
    listed = ", ".join("`" + c.replace("`", "``") + "`" for c in columns)
    return (
        f"SELECT {listed} FROM (SELECT *, row_number() OVER (PARTITION BY "
        f"{', '.join(EVENT_IDENTITY)} ORDER BY {', '.join(FIRST_BY)}) AS _nth FROM {table})"
        " WHERE _nth = 1"
    )


def _first_of(*, ts: str, topic: str, partition: str, offset: str) -> Column:
    # Field order is the comparison order: Kafka time, then the coordinates.
    return F.struct(
        F.col(ts).alias("ts"),
        F.col(topic).alias("topic"),
        F.col(partition).alias("partition"),
        F.col(offset).alias("offset"),
    )


def earliest_landed(
    spark: SparkSession, events_path: str, version: int, since: datetime
) -> DataFrame:
    """Per ``(source, id)`` in the events table as of ``version``, its first event from
    ``since`` on (Kafka time): columns ``source``, ``id``, ``_landed_first``.

    Example:
        >>> earliest_landed(spark, events_path, 42, datetime(2026, 11, 18))
    """
    table = spark.read.format("delta").option("versionAsOf", version).load(events_path)
    first = _first_of(
        ts="kafka_timestamp",
        topic="kafka_topic",
        partition="kafka_partition",
        offset="kafka_offset",
    )
    return (
        table.where(F.col("kafka_timestamp") >= F.lit(since))
        .groupBy(*EVENT_IDENTITY)
        .agg(F.min(first).alias("_landed_first"))
    )


def mark_duplicates(decoded: DataFrame, landed: DataFrame | None, horizon: timedelta) -> DataFrame:
    """Decoded rows (:func:`eventlake.binding.decode_records`) with every valid event
    that repeats an earlier ``(source, id)`` turned into a ``duplicate_event`` reject:
    earlier in the batch, or in ``landed`` (:func:`earliest_landed`; None: nothing
    landed) no more than ``horizon`` of Kafka time before it. The detail names the
    first one's coordinates. One pass over the batch (a window), no self-join.

    Example:
        >>> marked = mark_duplicates(decoded, earliest_landed(spark, path, 42, since), timedelta(7))
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
    in_batch = Window.partitionBy(*EVENT_IDENTITY).orderBy(*FIRST_BY)
    marked = decoded.withColumn("_batch_first", F.when(valid, F.first(own).over(in_batch)))
    first = F.when(F.col("_batch_first") != own, F.col("_batch_first"))
    if landed is not None:
        marked = marked.join(landed, list(EVENT_IDENTITY), "left")
        within = F.col("_landed_first.ts") >= F.col("kafka_timestamp") - F.lit(horizon)
        first = F.coalesce(F.when(within, F.col("_landed_first")), first)
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
