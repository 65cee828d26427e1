"""A stream's state step, every ``state_interval_seconds`` rather than every batch: the
batches landed since the last one wait in a backlog, and one state step applies them
all, read back from the files their commits added.

Why: a state step costs about the same whatever the batch holds (its rewrite of the
state table's files, a Delta commit, the driver's planning): at 20,000 records/s one per
1-second batch was most of each batch's seconds, and the events table waited for it.

Why it stays exactly once: the state table's own marks (:mod:`eventlake.ledger.marks`, job
``state``) say what it holds, and they move only with a state step's commit. A stream
that stops with a backlog applies it first; one that crashes leaves the marks behind the
events marks, and its next run starts from the lower of the two
(:func:`eventlake.ingest.run` ``_position``) and replays the rest from Kafka. Another
process that lands the same partitions between two batches (a backfill, a reconcile) is
seen: the backlog's commits then no longer hold every record from the marks on, and the
step reads that range from the tables instead.

Example:
    >>> backlog = StateBacklog(interval_seconds=5.0)
    >>> backlog.add(result, ends={("customers", 0): 1200}, caught_up_ms=None, batch_id=7)
    >>> backlog.due()
    False
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import decode_records
from eventlake.ingest.batch import BatchResult
from eventlake.ledger.commits import unlanded
from eventlake.ledger.marks import Marks, PartitionOffsets
from eventlake.state.records import records_from_tables
from eventlake.warehouse.schemas import EVENTS_SCHEMA, REJECTS_SCHEMA
from eventlake.warehouse.tables import rejected_by_ingest, rows_added_by


@dataclass(frozen=True)
class LandedBatch:
    """One landed batch whose records the state tables may not hold yet: how it landed,
    the offsets it landed up to, and when (epoch ms) those were the head of the log."""

    result: BatchResult
    ends: PartitionOffsets
    caught_up_ms: int | None = None
    batch_id: int | None = None


@dataclass
class StateBacklog:
    """The landed batches a stream's next state step applies, and when it is due: once
    ``interval_seconds`` have passed since the last one (0: every batch).

    Example:
        >>> backlog = StateBacklog(interval_seconds=0.0)
        >>> backlog.add(result, ends={("customers", 0): 1200})
        >>> backlog.due()
        True
    """

    interval_seconds: float
    clock: Callable[[], float] = time.monotonic
    batches: list[LandedBatch] = field(default_factory=list)
    applied_at: float = field(default=0.0)
    #: Held by a batch and by a state step between batches: never both at once.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.applied_at = self.clock()

    def add(
        self,
        result: BatchResult,
        ends: PartitionOffsets,
        caught_up_ms: int | None = None,
        batch_id: int | None = None,
    ) -> None:
        """Keep a landed batch for the next state step."""
        self.batches.append(LandedBatch(result, dict(ends), caught_up_ms, batch_id))

    def due(self) -> bool:
        """Whether the next state step is due now (there is something to apply)."""
        return bool(self.batches) and self.clock() - self.applied_at >= self.interval_seconds

    def ends(self) -> PartitionOffsets:
        """The offsets the backlog landed up to, per partition."""
        merged: PartitionOffsets = {}
        for landed in self.batches:
            for key, end in landed.ends.items():
                merged[key] = max(merged.get(key, 0), end)
        return merged

    def caught_up_ms(self) -> int | None:
        """The latest time the log's head was reached by a batch of the backlog: a state
        step through all of it has then read everything written before that time."""
        times = [b.caught_up_ms for b in self.batches if b.caught_up_ms is not None]
        return max(times) if times else None

    def topics(self) -> list[str]:
        """The topics the backlog's batches read."""
        return sorted({topic for landed in self.batches for topic, _ in landed.ends})

    def applied(self) -> None:
        """The state step applied the backlog: start the next one."""
        self.batches.clear()
        self.applied_at = self.clock()


def read_back(
    spark: SparkSession,
    landed: Sequence[LandedBatch],
    batch: DataFrame | None,
    events_path: str,
    rejects_path: str,
    state_marks: Marks,
    ends: PartitionOffsets,
) -> tuple[DataFrame, bool]:
    """The records of batches ``landed`` (in the order they landed) at or above
    ``state_marks``, as decoded rows for :func:`eventlake.state.apply.apply_state`, and
    whether they are a plain read of table files.

    From the files these batches' commits added when those hold every record from the
    marks on (:func:`eventlake.warehouse.tables.rows_added_by`); else decoded again from ``batch``
    (the Kafka rows of the one batch landed, a replay); else read from the events and
    rejects tables by offset range, up to ``ends``.

    Example:
        >>> result = land_batch(spark, batch, ledger=ledger, ends=ends, ...)
        >>> landed = [LandedBatch(result, ends)]
        >>> rows, from_files = read_back(spark, landed, batch, e, r, marks, ends)
        >>> apply_state(spark, settings, rows, topics=["orders"], read_back=from_files)
    """
    added = _added_rows(spark, landed, events_path, rejects_path, state_marks, ends)
    if added is not None:
        return added.where(unlanded(state_marks)), True
    if batch is not None and len(landed) == 1 and _reaches(landed[0].ends, ends):
        return decode_records(batch).where(unlanded(state_marks)), False
    return landed_between(spark, events_path, rejects_path, state_marks, ends), True


def _added_rows(
    spark: SparkSession,
    landed: Sequence[LandedBatch],
    events_path: str,
    rejects_path: str,
    state_marks: Marks,
    ends: PartitionOffsets,
) -> DataFrame | None:
    """The rows the batches' commits added, when they hold every record from the marks
    on up to ``ends``: each batch landed from where the marks and the batches before it
    stood, and the last reached ``ends`` (another process may have landed more since)."""
    covered = dict(state_marks)

    def covers(landed_from: PartitionOffsets) -> bool:
        return all(covered.get(k, 0) >= m for k, m in landed_from.items())

    events_versions: list[int] = []
    rejects_versions: list[int] = []
    for batch in landed:
        result = batch.result
        if events_path not in result.located:
            # Nothing landed: every record of it was there before (a replay). Its records
            # are in no commit of the backlog, so the marks must hold them already.
            if covers(batch.ends):
                continue
            return None
        if not covers(result.events_marks):
            return None
        has_rejects = any(reason is not None for reason in result.counts)
        if has_rejects and (rejects_path not in result.located or not covers(result.rejects_marks)):
            return None
        events_versions.append(result.located[events_path])
        if has_rejects:
            rejects_versions.append(result.located[rejects_path])
        for key, end in batch.ends.items():
            covered[key] = max(covered.get(key, 0), end)
    if not _reaches(covered, ends):
        return None
    events = rows_added_by(spark, events_path, events_versions, EVENTS_SCHEMA)
    rejects = (
        rows_added_by(spark, rejects_path, rejects_versions, REJECTS_SCHEMA)
        if rejects_versions
        else None
    )
    if events is None or (rejects_versions and rejects is None):
        return None
    return records_from_tables(events, rejects)


def _reaches(covered: PartitionOffsets, ends: PartitionOffsets) -> bool:
    """Whether ``covered`` holds every partition of ``ends`` up to its end."""
    return all(covered.get(key, 0) >= end for key, end in ends.items())


def landed_between(
    spark: SparkSession,
    events_path: str,
    rejects_path: str,
    starts: PartitionOffsets,
    ends: PartitionOffsets,
) -> DataFrame:
    """The records of ``starts`` (inclusive; none: 0) to ``ends`` (exclusive) per
    partition, read from the events and ingest's rejects, as decoded rows for
    :func:`eventlake.state.apply.apply_state`.

    Example:
        >>> landed_between(spark, e, r, {("orders", 0): 100}, {("orders", 0): 200}).count()
        100
    """
    in_range = _in_ranges(starts, ends)
    events = spark.read.format("delta").load(events_path).where(in_range)
    rejects = spark.read.format("delta").load(rejects_path).where(in_range & rejected_by_ingest())
    return records_from_tables(events, rejects)


def _in_ranges(starts: PartitionOffsets, ends: PartitionOffsets) -> Column:
    ranges = [
        (F.col("kafka_topic") == topic)
        & (F.col("kafka_partition") == partition)
        & (F.col("kafka_offset") >= starts.get((topic, partition), 0))
        & (F.col("kafka_offset") < end)
        for (topic, partition), end in sorted(ends.items())
    ]
    return reduce(lambda a, b: a | b, ranges, F.lit(False))
