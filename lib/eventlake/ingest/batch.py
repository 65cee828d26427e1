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

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql.types import StructType

from eventlake.batch_commits import BatchCommits
from eventlake.binding import RejectReason, decode_records, to_events, to_rejects
from eventlake.observed import reason_counts, rejects_lost
from eventlake.state import records_from_tables
from eventlake.tables import EVENTS_SCHEMA, REJECTS_SCHEMA, rows_added_by


@dataclass
class BatchResult:
    """Counts of one appended batch per reject reason (``None``: events), and warnings."""

    counts: dict[str | None, int]
    warnings: list[str] = field(default_factory=list)
    #: Per table path, the version whose commit holds this batch's rows, when
    #: append_batch was asked to locate them (tables the batch has no commit in: absent).
    located: dict[str, int] = field(default_factory=dict)


def append_batch(
    spark: SparkSession,
    records: DataFrame,
    *,
    commits: BatchCommits,
    version: int,
    events_path: str,
    rejects_path: str,
    locate: bool = False,
    skip_if_empty: bool = True,
) -> BatchResult:
    """Append one batch of Kafka rows to the events and rejects tables, exactly once per
    batch ``version`` of the stream ``commits`` belongs to, and count it by reason.

    One pass reads, decodes, writes the events and counts; only a batch with rejects is
    read a second time, for the rejects. Holding every batch in a cache instead cost more
    than the second read of the few batches that have rejects. With ``locate`` (the
    batch has more to do, e.g. state), ``result.located`` names the table versions that
    hold the batch's rows, also when a crashed run committed them: the rows are read
    back from there (:func:`eventlake.tables.rows_added_by`), which costs less than
    holding the whole decoded batch.

    Example:
        >>> append_batch(spark, batch, commits=commits, version=7, events_path=e, rejects_path=r)
        BatchResult(counts={None: 998, 'malformed_json': 2}, warnings=[], located={})
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
    result = BatchResult(reason_counts(seen, RejectReason))
    rejects = sum(n for reason, n in result.counts.items() if reason is not None)
    if rejects and not rejects_done:
        seen_again = Observation()
        append(to_rejects(decode_records(records, seen_again)), rejects_path)
        lost = rejects_lost(result.counts, reason_counts(seen_again, RejectReason))
        if lost:
            result.warnings.append(f"batch {version}: {lost}")
    if locate:
        for path in [events_path, rejects_path] if rejects else [events_path]:
            found = commits.commit_version(spark, path, version)
            if found is not None:
                result.located[path] = found
    return result


def read_back(
    spark: SparkSession, result: BatchResult, batch: DataFrame, events_path: str, rejects_path: str
) -> DataFrame:
    """The batch's rows as its commits added them to the events and rejects tables (from
    an :func:`append_batch` with ``locate``), decoded again from ``batch`` when they
    cannot be read back (see :func:`eventlake.tables.rows_added_by`).

    Example:
        >>> result = append_batch(spark, batch, commits=c, version=7, events_path=e,
        ...                       rejects_path=r, locate=True)
        >>> apply_state(spark, settings, read_back(spark, result, batch, e, r), ...)
    """

    def added(path: str, schema: StructType) -> DataFrame | None:
        version = result.located.get(path)
        return None if version is None else rows_added_by(spark, path, version, schema)

    events, rejects = added(events_path, EVENTS_SCHEMA), added(rejects_path, REJECTS_SCHEMA)
    has_rejects = any(reason is not None for reason in result.counts)
    if events is None or (has_rejects and rejects is None):
        return decode_records(batch)
    return records_from_tables(events, rejects)
