"""One micro-batch of Kafka records into the events and rejects tables, exactly once: the
decode and write path that streaming runs share.

Example:
    >>> result = append_batch(spark, records, commits=commits, version=7,
    ...                       events_path=events, rejects_path=rejects)
    >>> result.counts
    {None: 117, 'plain_tombstone': 3}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from eventlake.batch_commits import BatchCommits
from eventlake.binding import RejectReason, decode_records, to_events, to_rejects
from eventlake.observed import reason_counts, rejects_lost


@dataclass
class BatchResult:
    """Counts of one appended batch per reject reason (``None``: events), and warnings."""

    counts: dict[str | None, int]
    warnings: list[str] = field(default_factory=list)
    #: The decoded batch, cached, when append_batch was asked to hold it.
    held: DataFrame | None = None


def append_batch(
    spark: SparkSession,
    records: DataFrame,
    *,
    commits: BatchCommits,
    version: int,
    events_path: str,
    rejects_path: str,
    hold: bool = False,
    skip_if_empty: bool = True,
) -> BatchResult:
    """Append one batch of Kafka rows to the events and rejects tables, exactly once per
    batch ``version`` of the stream ``commits`` belongs to, and count it by reason.

    One pass reads, decodes, writes the events and counts; only a batch with rejects is
    read a second time, for the rejects. Holding every batch in a cache instead cost more
    than the second read of the few batches that have rejects. With ``hold`` (the batch
    has more to do, e.g. state), the decoded batch is cached by that same pass and
    returned as ``result.held``; the caller unpersists it.

    Example:
        >>> append_batch(spark, batch, commits=commits, version=7, events_path=e, rejects_path=r)
        BatchResult(counts={None: 998, 'malformed_json': 2}, warnings=[], held=None)
    """
    # An empty batch (a new stream's first, on a topic with nothing new) costs one small
    # read here instead of Delta's write path, which in a fresh process takes seconds.
    # Later batches skip the check: Spark starts no batch without records then, and an
    # empty append commits nothing.
    if skip_if_empty and records.isEmpty():
        return BatchResult({})

    def append(rows: DataFrame, path: str) -> None:
        commits.append(spark, rows, path, version)

    seen = Observation()
    decoded = decode_records(records, seen)
    if hold:
        # Only rejects need the raw record; events would hold every value twice.
        rejected = F.col("reject_reason").isNotNull()
        decoded = decoded.withColumns(
            {
                "kafka_value": F.when(rejected, F.col("kafka_value")),
                "kafka_headers": F.when(rejected, F.col("kafka_headers")),
            }
        ).persist(StorageLevel.MEMORY_AND_DISK)
    # A replayed batch (after a crash) skips the appends it committed before; the counts
    # then come from a pass that writes nothing, since an observation is filled only by a
    # job that runs.
    rejects_done = commits.committed(spark, rejects_path, version)
    if not commits.committed(spark, events_path, version):
        append(to_events(decoded), events_path)
    elif not rejects_done:
        append(to_rejects(decoded), rejects_path)
        rejects_done = True
    else:
        decoded.write.format("noop").mode("overwrite").save()
    result = BatchResult(reason_counts(seen, RejectReason), held=decoded if hold else None)
    rejects = sum(n for reason, n in result.counts.items() if reason is not None)
    if not rejects or rejects_done:
        return result
    if hold:
        append(to_rejects(decoded), rejects_path)
        return result
    seen_again = Observation()
    append(to_rejects(decode_records(records, seen_again)), rejects_path)
    lost = rejects_lost(result.counts, reason_counts(seen_again, RejectReason))
    if lost:
        result.warnings.append(f"batch {version}: {lost}")
    return result
