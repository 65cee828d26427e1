"""The state rules of a record: a tombstone (no value) deletes its key, the latest
record per key wins. Pure ``DataFrame -> DataFrame`` functions.

Example:
    >>> latest_per_key(applicable_records(decoded))
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    EVENT_COLUMNS,
    KAFKA_RECORD_FIELDS,
    RejectReason,
    decode_records,
    to_events,
)
from eventlake.binding.reason_counts import observed_values
from eventlake.views.duplicates import DUPLICATE_EVENT
from eventlake.warehouse.schemas import KAFKA_POSITION_COLUMNS

#: Up to this many keys in one batch, :func:`latest_per_key` sends the winning records'
#: coordinates to every task (~50 bytes each); above, both sides are shuffled by key.
BROADCAST_WINNERS_MAX = 1_000_000


@dataclass(frozen=True)
class StateChange:
    """What one application of records did to a state table."""

    upserted: int = 0
    deleted: int = 0
    skipped_no_key: int = 0


def is_tombstone() -> Column:
    """Binary event with no data, or a plain Kafka tombstone (decoded rows)."""
    binary_no_data = (
        F.col("reject_reason").isNull()
        & (F.col("content_mode") == "binary")
        # data, not kafka_value: ingest drops the raw value of valid events from its batch
        # (the events table does not keep it); in binary mode data is the value as-is.
        & F.col("data").isNull()
    )
    plain = F.col("reject_reason") == RejectReason.PLAIN_TOMBSTONE.value
    # Never NULL: a NULL here would make the MERGE skip the row silently.
    return F.coalesce(binary_no_data | plain, F.lit(False))


def applicable_records(decoded: DataFrame) -> DataFrame:
    """Decoded rows that change state: valid events and tombstones (keyed or not)."""
    return decoded.where(F.col("reject_reason").isNull() | is_tombstone()).withColumn(
        "_tombstone", is_tombstone()
    )


def records_from_tables(events: DataFrame, rejects: DataFrame | None = None) -> DataFrame:
    """A batch read back from the events and rejects tables (the rows its commits added),
    shaped as :func:`eventlake.binding.decode.decode_records` rows for :func:`apply_state`: the
    events, the plain tombstones among the rejects, and the events ``--dedup`` rejected as
    repeats, decoded again from their raw records (no other reject changes state).

    Why repeats count: a state table is the topic's latest record per key, as
    :func:`reconcile_state` reads it from the topic (which knows nothing of ``--dedup``)
    and as Kafka's compaction keeps it (which may remove the first and keep the repeat).

    Example:
        >>> records_from_tables(rows_added_by(spark, events, [42], EVENTS_SCHEMA))
    """
    valid = events.select(*EVENT_COLUMNS, F.lit(None).cast("string").alias("reject_reason"))
    if rejects is None:
        return valid
    tombstones = rejects.where(F.col("reason") == RejectReason.PLAIN_TOMBSTONE.value).select(
        *KAFKA_POSITION_COLUMNS, F.col("reason").alias("reject_reason")
    )
    repeats = to_events(
        decode_records(as_kafka_records(rejects.where(F.col("reason") == DUPLICATE_EVENT)))
    ).select(*EVENT_COLUMNS, F.lit(None).cast("string").alias("reject_reason"))
    return valid.unionByName(repeats).unionByName(tombstones, allowMissingColumns=True)


def as_kafka_records(rejects: DataFrame) -> DataFrame:
    """Rejects rows as the Kafka source's rows they were read as (the rejects table keeps
    the raw record), for :func:`eventlake.binding.decode.decode_records`.

    Example:
        >>> decode_records(as_kafka_records(rejects)).select("reject_reason").first()
    """
    return rejects.select(*(F.col(f"kafka_{c}").alias(c) for c in KAFKA_RECORD_FIELDS))


def latest_per_key(records: DataFrame) -> DataFrame:
    """The last record per (topic, key) by (partition, offset); keyless rows dropped.

    Example:
        >>> latest_per_key(applicable_records(decoded)).count()  # one row per key
    """
    keyed = records.where(F.col("kafka_key").isNotNull())
    # Which record wins is decided on four narrow columns (a cached batch is read for those
    # alone), the whole rows are then picked by a semi-join on the record's coordinates.
    # Aggregating whole rows (max_by over a struct of every column) sorted the batch. The
    # two steps keep every aggregate buffer fixed-width, so Spark hashes instead of sorting:
    # the last offset per (key, partition), then the one of the highest partition.
    last_in_partition = keyed.groupBy("kafka_topic", "kafka_key", "kafka_partition").agg(
        F.max("kafka_offset").alias("kafka_offset")
    )
    # Counted while they are held: a count after is a Spark job of its own.
    held = Observation()
    winners = (
        last_in_partition.groupBy("kafka_topic", "kafka_key")
        .agg(
            F.max("kafka_partition").alias("kafka_partition"),
            F.max_by("kafka_offset", "kafka_partition").alias("kafka_offset"),
        )
        .drop("kafka_key")
        .observe(held, F.count(F.lit(1)).alias("winners"))
        .localCheckpoint(eager=True)
    )
    if int(observed_values(held)["winners"]) <= BROADCAST_WINNERS_MAX:
        # The batch then stays where it is: no shuffle of its rows.
        winners = F.broadcast(winners)
    coordinates = ["kafka_topic", "kafka_partition", "kafka_offset"]
    return keyed.join(winners, coordinates, "left_semi").select(*EVENT_COLUMNS, "_tombstone")
