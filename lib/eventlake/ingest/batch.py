"""One batch of Kafka records into the events and rejects tables, exactly once per record:
the decode and write path that every ingest (stream, scheduled, backfill) shares.

What has landed is the ledger's (:mod:`eventlake.ledger.marks`): a batch lands only the
records at or above the marks, and moves them to the batch's end offsets in the same
commits. The rejects commit (when the batch has rejects) comes first, the events commit
(always, with no rows when there are none) last: the events marks are where ingest
stands, the rejects marks keep a replay from writing rejects twice.

Example:
    >>> result = land_batch(spark, records, ledger=ledger, ends={("orders", 0): 120},
    ...                     events_path=events, rejects_path=rejects, note="batch 7")
    >>> result.counts
    {None: 117, 'plain_tombstone': 3}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    DATA_JSON_INVALID,
    RejectReason,
    decode_records,
    observe_decoded,
    to_events,
    to_rejects,
)
from eventlake.binding.reason_counts import (
    flag_counts,
    observed_values,
    reason_counts,
    rejects_lost,
)
from eventlake.ledger.commits import Ledger, LedgerMovedError, only_missing, unlanded
from eventlake.ledger.marks import INGEST, Marks, PartitionOffsets, landed_version
from eventlake.spark.rows import computed_once, release
from eventlake.views.duplicates import DUPLICATE_EVENT, landed_identities, mark_duplicates
from eventlake.warehouse.conflicts import conflicts_retried
from eventlake.warehouse.names import KAFKA_COORDINATES
from eventlake.warehouse.tables import rejected_by_ingest

_KAFKA_ROW = {"topic": "topic", "partition": "partition", "offset": "offset"}
#: Every reason a record of an ingest batch can be rejected for.
INGEST_REASONS: Final = (*RejectReason, DUPLICATE_EVENT)


@dataclass
class BatchResult:
    """Counts of one landed batch per reject reason (``None``: events), and warnings."""

    counts: dict[str | None, int]
    warnings: list[str] = field(default_factory=list)
    #: Events whose data is JSON by its media type but did not parse (data_json null).
    data_json_invalid: int = 0
    #: Per table path, the version whose commit holds the rows this batch landed.
    located: dict[str, int] = field(default_factory=dict)
    #: The marks before this batch: records below them were landed before.
    events_marks: Marks = field(default_factory=dict)
    rejects_marks: Marks = field(default_factory=dict)
    #: Per topic of the batch, its records landed: (events, rejects).
    by_topic: dict[str, tuple[int, int]] = field(default_factory=dict)


# Another process may land the same partitions meanwhile: the commit is refused, its files
# stay uncommitted, and the batch is landed again above the new marks.
@conflicts_retried(what=lambda *_, note, **__: f"ingest: {note}", retryable=(LedgerMovedError,))
def land_batch(
    spark: SparkSession,
    records: DataFrame,
    *,
    ledger: Ledger,
    ends: PartitionOffsets,
    events_path: str,
    rejects_path: str,
    note: str,
    batch_id: int | None = None,
    starts: PartitionOffsets | None = None,
    dedup_horizon: timedelta | None = None,
) -> BatchResult:
    """Land one batch of Kafka rows (offsets up to ``ends``) in the events and rejects
    tables: what the ledger does not hold yet, exactly once, counted by reason. With
    ``dedup_horizon``, an event whose ``(source, id)`` landed before within that much
    Kafka time, or earlier in the batch, is a ``duplicate_event`` reject
    (:func:`eventlake.views.duplicates.mark_duplicates`).

    One pass reads, decodes, writes the events' files and counts; only a batch with
    rejects is read a second time, for the rejects. ``starts`` (where the batch begins,
    when known) spares the filter on the marks when nothing of the batch has landed.
    When another process lands the same partitions meanwhile, the commit is refused and
    the batch is landed again above the new marks.

    Example:
        >>> land_batch(spark, batch, ledger=ledger, ends={("o", 0): 1000}, events_path=e,
        ...            rejects_path=r, note="batch 7").counts
        {None: 998, 'malformed_json': 2}
    """
    topics = {t for t, _ in ends}
    events_marks = ledger.marks(events_path, INGEST, topics)
    # A partition without a mark holds nothing: an end of 0 has nothing to add.
    if all(events_marks.get(key, 0) >= end for key, end in ends.items()):
        # All of it landed before (a replay, or nothing new on a stream's first batch):
        # the events marks are where ingest stands. No Delta write, which in a fresh
        # process takes seconds.
        return BatchResult({}, events_marks=events_marks)
    rejects_marks = ledger.marks(rejects_path, INGEST, topics)
    result = BatchResult({}, events_marks=events_marks, rejects_marks=rejects_marks)
    # A replay after a crash between the two commits: the rows below the rejects marks
    # keep the fate the first attempt gave them (see _verdicts).
    replay = any(rejects_marks.get(k, 0) > events_marks.get(k, 0) for k in ends)
    missing = only_missing(records, events_marks, starts, **_KAFKA_ROW)
    # --dedup reads the whole batch three times (the duplicates' identities, the events,
    # the rejects): it is read from Kafka once and held on local disk as Kafka gave it,
    # and each pass decodes what it needs from there (held decoded, each row is ~3 times
    # as large, and every pass reads every byte of it). Its oldest Kafka time, counted
    # in that pass, bounds the events it is checked against.
    held, oldest = None, Observation()
    if dedup_horizon is not None:
        held = computed_once(
            missing.observe(oldest, F.min("timestamp").alias("oldest")), on_disk=True
        )
    verdicts = None
    if dedup_horizon is not None or replay:
        since = None if held is None else observed_values(oldest).get("oldest")
        verdicts = _verdicts(
            spark,
            held,
            since,
            events_path,
            rejects_path,
            (events_marks, rejects_marks),
            replay,
            dedup_horizon,
        )
    try:
        seen = Observation()
        landed_events, landed_rejects = TopicCounts(sorted(topics)), TopicCounts(sorted(topics))
        reasons: tuple[str, ...] = tuple(RejectReason)
        if verdicts is None:
            # The common case: each record's fate is its own, decided in the decoding pass.
            events = to_events(decode_records(missing, seen))
        else:
            reasons = INGEST_REASONS
            events = decided_events(missing if held is None else held, verdicts, seen)
        pending_events = ledger.write(events_path, landed_events.observe(events))
        result.counts = reason_counts(seen, reasons)
        result.data_json_invalid = flag_counts(seen, [DATA_JSON_INVALID]).get(DATA_JSON_INVALID, 0)
        rejects = sum(n for reason, n in result.counts.items() if reason is not None)
        if rejects:
            # The rejects table keeps neither data nor data_json: this pass builds neither.
            seen_again = Observation()
            if verdicts is None:
                again = only_missing(records, rejects_marks, starts, **_KAFKA_ROW)
                rows = decode_records(again, seen_again, data=False)
            elif dedup_horizon is None:
                # A replay: decoding alone decides the fate of what rejects lacks (at or above
                # the rejects marks, where no verdict is).
                again = only_missing(records, rejects_marks, starts, **_KAFKA_ROW)
                rows = observe_decoded(
                    decode_records(again, data=False), seen_again, (DUPLICATE_EVENT,)
                )
            else:
                # The held batch's rows that have a verdict: the verdicts hold every
                # reject of the batch (the decoder's and the duplicates), so only those
                # rows are decoded again.
                assert held is not None
                rows = observe_decoded(
                    _apply_verdicts(
                        decode_records(_with_a_verdict(held, verdicts), data=False), verdicts
                    ).where(unlanded(rejects_marks)),
                    seen_again,
                    (DUPLICATE_EVENT,),
                )
            pending_rejects = ledger.write(rejects_path, landed_rejects.observe(to_rejects(rows)))
            version = ledger.commit(
                rejects_path, pending_rejects, INGEST, ends, note=note, batch=batch_id
            )
            result.located[rejects_path] = version
            lost = rejects_lost(result.counts, reason_counts(seen_again, reasons))
            # Rejects above the events marks but below the rejects marks landed before.
            if lost and rejects_marks == {k: events_marks.get(k, 0) for k in rejects_marks}:
                result.warnings.append(f"{note}: {lost}")
        result.located[events_path] = ledger.commit(
            events_path, pending_events, INGEST, ends, note=note, batch=batch_id
        )
        result.by_topic = landed_events.by_topic(landed_rejects, result.counts)
        return result
    finally:
        # The verdicts (and --dedup's batch) are held for both passes; free them now, not
        # at the JVM's GC.
        if verdicts is not None:
            release(verdicts)
        if held is not None:
            release(held)


def _verdicts(
    spark: SparkSession,
    held: DataFrame | None,
    since: datetime | None,
    events_path: str,
    rejects_path: str,
    marks: tuple[PartitionOffsets, PartitionOffsets],
    replay: bool,
    dedup_horizon: timedelta | None,
) -> DataFrame:
    """The fate of the batch's records where decoding alone does not decide it, computed
    once and held (a small frame: coordinates, ``_verdict_reason`` (null: an event) and
    ``_verdict_detail``), so that the events and the rejects pass agree:

    * with ``dedup_horizon``, every reject at or above the rejects marks: the decoder's,
      and the duplicates (:func:`eventlake.views.duplicates.mark_duplicates`, against the events
      table at one version), found in a pass over the attributes decoded from ``held``
      (the batch's unlanded Kafka rows, held; ``since``: their oldest Kafka time);
    * on a ``replay``, every row between the events and the rejects ``marks`` (the
      batch's own rows that the first attempt's rejects commit landed) that ``rejects``
      holds, with the reason the first attempt gave it; a row there that it does not hold
      was an event, whatever a second look at duplicates (or ``--dedup`` switched) would
      say now. Rejects below the events marks, the table's history, meet no row of the
      batch: not read.
    """
    events_marks, rejects_marks = marks
    parts: list[DataFrame] = []
    if dedup_horizon is not None:
        assert held is not None, "--dedup decides from the held batch"
        landed = None
        version = landed_version(events_path)
        if version is not None and since is not None:
            landed = landed_identities(spark, events_path, version, since - dedup_horizon)
        parts.append(duplicate_verdicts(held, landed, dedup_horizon, rejects_marks))
    if replay:
        parts.append(
            spark.read.format("delta")
            .load(rejects_path)
            .where(rejected_by_ingest() & unlanded(events_marks) & ~unlanded(rejects_marks))
            .select(
                *KAFKA_COORDINATES,
                F.col("reason").alias("_verdict_reason"),
                F.col("detail").alias("_verdict_detail"),
            )
        )
    verdicts = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    return computed_once(verdicts)


def duplicate_verdicts(
    records: DataFrame, landed: DataFrame | None, horizon: timedelta, rejects_marks: Marks
) -> DataFrame:
    """--dedup's verdicts on Kafka rows ``records``: every reject at or above
    ``rejects_marks``, the decoder's and the repeats of a ``(source, id)`` in the batch or
    in ``landed`` within ``horizon`` (:func:`eventlake.views.duplicates.mark_duplicates`), as
    coordinates, ``_verdict_reason`` and ``_verdict_detail``.

    Decoded without the data and its VARIANT, and without the decoder's own barrier: no
    filter goes below the window per ``(source, id)``, so the decoder runs once per row.

    Example:
        >>> duplicate_verdicts(held, landed, timedelta(days=7), {("orders", 0): 120}).count()
        12
    """
    narrow = decode_records(records, data=False, data_json=False, barrier=False).select(
        *KAFKA_COORDINATES, "kafka_timestamp", "source", "id", "reject_reason", "reject_detail"
    )
    marked = mark_duplicates(narrow, landed, horizon)
    return marked.where(F.col("reject_reason").isNotNull() & unlanded(rejects_marks)).select(
        *KAFKA_COORDINATES,
        F.col("reject_reason").alias("_verdict_reason"),
        F.col("reject_detail").alias("_verdict_detail"),
    )


def decided_events(records: DataFrame, verdicts: DataFrame, seen: Observation) -> DataFrame:
    """The events of Kafka rows ``records`` once the ``verdicts`` (:func:`_verdicts`)
    are applied, every row counted by reason into ``seen``, ``duplicate_event`` included.

    The observation keeps the events' filter above the decoder, so the decoder needs no
    barrier of its own (which would copy every row once more).

    Example:
        >>> pending = ledger.write(events_path, decided_events(held, verdicts, seen))
    """
    decided = _apply_verdicts(decode_records(records, barrier=False), verdicts)
    return to_events(observe_decoded(decided, seen, (DUPLICATE_EVENT,)))


class TopicCounts:
    """The rows of a batch's write per topic, counted in the pass that writes them (one
    count per topic and row: the events' write with 20 topics took 1.7 s more at 1M
    counting rows and events in its pass, half of that counting its rows alone). With
    one topic, the batch's counts are its (nothing to observe).

    Example:
        >>> landed_events, landed_rejects = TopicCounts(["a", "b"]), TopicCounts(["a", "b"])
        >>> ledger.write(events_path, landed_events.observe(events))
        >>> landed_events.by_topic(landed_rejects, reason_counts(seen, RejectReason))
        {'a': (60, 0), 'b': (58, 2)}
    """

    def __init__(self, topics: list[str]) -> None:
        self.topics = topics
        self.observation = Observation() if len(topics) > 1 else None
        self.observed = False

    def observe(self, rows: DataFrame) -> DataFrame:
        """``rows`` (with ``kafka_topic``), counted per topic by the action over them."""
        if self.observation is None:
            return rows
        self.observed = True
        topic = F.col("kafka_topic")
        return rows.observe(
            self.observation, *[F.count_if(topic == t).alias(t) for t in self.topics]
        )

    def counts(self) -> dict[str, int]:
        """Per topic, the rows counted (none: a write that did not run)."""
        if self.observation is None or not self.observed:
            return {}
        row = observed_values(self.observation)
        return {t: int(row.get(t, 0)) for t in self.topics}

    def by_topic(
        self, rejects: TopicCounts, batch: dict[str | None, int]
    ) -> dict[str, tuple[int, int]]:
        """Per topic, (events, rejects): these counts of the events' write and
        ``rejects``' of the rejects' write; ``batch``: the batch's counts by reason."""
        if self.observation is None:
            accepted = batch.get(None, 0)
            return {t: (accepted, sum(batch.values()) - accepted) for t in self.topics}
        landed, rejected = self.counts(), rejects.counts()
        return {t: (landed.get(t, 0), rejected.get(t, 0)) for t in self.topics}


def _with_a_verdict(records: DataFrame, verdicts: DataFrame) -> DataFrame:
    """The Kafka rows ``records`` that have a verdict; a semi-join against the small,
    broadcast verdicts."""
    pairs = zip(_KAFKA_ROW, KAFKA_COORDINATES, strict=True)
    coordinates = verdicts.select(*[F.col(column).alias(raw) for raw, column in pairs])
    return records.join(F.broadcast(coordinates), list(_KAFKA_ROW), "left_semi")


def _apply_verdicts(decoded: DataFrame, verdicts: DataFrame) -> DataFrame:
    """``decoded`` with each record that has a verdict given its reason and detail (a
    null reason: an event); a hash join against the small, broadcast verdicts."""
    joined = decoded.join(
        F.broadcast(verdicts.withColumn("_has_verdict", F.lit(True))),
        list(KAFKA_COORDINATES),
        "left",
    )
    decided = F.col("_has_verdict").isNotNull()
    return joined.select(
        *[
            F.when(decided, F.col("_verdict_reason")).otherwise(F.col(c)).alias(c)
            if c == "reject_reason"
            else F.when(decided, F.col("_verdict_detail")).otherwise(F.col(c)).alias(c)
            if c == "reject_detail"
            else F.col(c)
            for c in decoded.columns
        ]
    )
