"""Ingest CloudEvents from Kafka into the events and rejects Delta tables, exactly once.

Two ways to run, one decode and write path:

* streaming (Structured Streaming, ``available-now`` or ``processing-time=<interval>``):
  progress lives in a checkpoint; each micro-batch's commits name the batch
  (:mod:`eventlake.batch_commits`), so a batch replayed after a crash is not written
  twice;
* bounded batch (explicit ending offsets, for backfills and replays): the records are
  merged into the tables on their Kafka coordinates, inserting only what is absent, so
  a replay of a range already ingested adds nothing.

Every record read lands in exactly one table: the decoder gives each row either no
reject reason (events) or one (rejects).

Example:
    >>> summary = run_ingest(spark, settings, IngestRequest(topics=("orders",)))
    >>> print(summary.line())
    ingest: read=120 events=117 rejects=3 (plain_tombstone=3) batches=1 seconds=4.2
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from eventlake.batch_commits import BatchCommits
from eventlake.binding import RejectReason, decode_records, to_events, to_rejects
from eventlake.checkpoint import IDENTITY_FILE, claim_checkpoint
from eventlake.compaction import check_compaction
from eventlake.kafka import check_connection, connection_lost_error, kafka_source_options
from eventlake.observed import reason_counts, rejects_lost
from eventlake.settings import Settings
from eventlake.state import StateChange, apply_state, reconcile_state
from eventlake.streaming import (
    AVAILABLE_NOW,
    StreamSpec,
    checkpoint_folder,
    holding_checkpoint,
    run_stream,
    trigger_problem,
)
from eventlake.tables import (
    EVENTS,
    INGEST_JOB,
    INGEST_TABLES,
    REJECTS,
    ensure_tables,
    ingested_next_offsets,
    merge_source,
)

COORDINATES = ("kafka_topic", "kafka_partition", "kafka_offset")


class IngestError(RuntimeError):
    """An ingest run cannot start; the message says what to change."""


@dataclass(frozen=True)
class IngestRequest:
    """What to ingest and how; mirrors the ``eventlake ingest`` options."""

    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    trigger: str = AVAILABLE_NOW
    starting_offsets: str = "earliest"
    ending_offsets: str | None = None
    checkpoint_name: str | None = None
    #: Keep ``state/<topic>`` current for every topic of the run (see eventlake.state).
    state: bool = False
    #: Rebuild a state table with reconcile when the compaction check finds it at risk.
    auto_reconcile: bool = False

    def __post_init__(self) -> None:
        if bool(self.topics) == bool(self.topic_pattern):
            raise IngestError("Give either one or more --topic, or one --topic-pattern.")
        problem = trigger_problem(self.trigger)
        if problem:
            raise IngestError(problem)
        if self.state and self.bounded:
            raise IngestError(
                "--state needs a streaming run: a bounded replay of older offsets would move "
                "state tables back in time. Use `eventlake reconcile --topic T` to rebuild state."
            )

    @property
    def bounded(self) -> bool:
        return self.ending_offsets is not None

    @property
    def source_description(self) -> str:
        if self.topic_pattern:
            return f"pattern:{self.topic_pattern}"
        return "topics:" + ",".join(sorted(self.topics))

    def default_checkpoint_name(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.source_description)
        return f"ingest-{slug}"[:120]


@dataclass
class IngestSummary:
    """Counts of one run, printed as one line at the end."""

    records_read: int = 0
    events: int = 0
    rejects_by_reason: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    seconds: float = 0.0
    state_upserted: int = 0
    state_deleted: int = 0
    state_skipped_no_key: int = 0
    state_topics: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    #: The signal that stopped a streaming run (None: it ended on its own).
    stopped_by: str | None = None

    @property
    def rejects(self) -> int:
        return sum(self.rejects_by_reason.values())

    def add_batch(self, counts: dict[str | None, int]) -> None:
        self.batches += 1
        for reason, count in counts.items():
            self.records_read += count
            if reason is None:
                self.events += count
            else:
                self.rejects_by_reason[reason] += count

    def add_state(self, changes: dict[str, StateChange]) -> None:
        for topic, change in changes.items():
            self.state_topics.add(topic)
            self.state_upserted += change.upserted
            self.state_deleted += change.deleted
            self.state_skipped_no_key += change.skipped_no_key

    def counts_text(self) -> str:
        """The counts so far, for progress lines: ``batches=3 read=120 events=117 rejects=3``."""
        return (
            f"batches={self.batches} read={self.records_read} events={self.events} "
            f"rejects={self.rejects}"
        )

    def line(self) -> str:
        reasons = ", ".join(f"{r}={n}" for r, n in sorted(self.rejects_by_reason.items()))
        state = (
            f" state(upserted={self.state_upserted} deleted={self.state_deleted} "
            f"no_key={self.state_skipped_no_key})"
            if self.state_topics
            else ""
        )
        return (
            f"ingest: read={self.records_read} events={self.events} rejects={self.rejects}"
            + (f" ({reasons})" if reasons else "")
            + state
            + f" batches={self.batches} seconds={self.seconds:.1f}"
            + (f" stopped_by={self.stopped_by}" if self.stopped_by else "")
        )


def kafka_reader_options(settings: Settings, request: IngestRequest) -> dict[str, str]:
    """Options of Spark's Kafka source for this request."""
    subscription = (
        {"subscribePattern": request.topic_pattern}
        if request.topic_pattern
        else {"subscribe": ",".join(request.topics)}
    )
    return kafka_source_options(
        settings,
        subscription,
        starting_offsets=request.starting_offsets,
        ending_offsets=request.ending_offsets,
    )


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


def run_ingest(spark: SparkSession, settings: Settings, request: IngestRequest) -> IngestSummary:
    """Run one ingest (streaming or bounded batch) and return its counts."""
    started = time.monotonic()
    check_connection(settings)
    new_tables = ensure_tables(spark, settings)
    at_risk = _compaction_warnings(spark, settings, request)
    try:
        summary = (
            _run_bounded(spark, settings, request)
            if request.bounded
            else _run_streaming(
                spark, settings, request, tables_are_new=new_tables == set(INGEST_TABLES)
            )
        )
    except Exception as error:
        lost = connection_lost_error(settings, error, resume=_resume_hint(settings, request))
        if lost is not None:
            raise lost from error
        raise
    summary.warnings.extend(message for _, message in at_risk)
    if request.auto_reconcile:
        for topic, _ in at_risk:
            print(reconcile_state(spark, settings, topic).line(), flush=True)
            summary.reconciled.append(topic)
    summary.seconds = time.monotonic() - started
    return summary


def _resume_hint(settings: Settings, request: IngestRequest) -> str:
    if request.bounded:
        return (
            "Once Kafka answers, rerun the same command: a bounded run inserts only records "
            "not yet in the tables."
        )
    checkpoint = checkpoint_folder(settings.checkpoints, request)
    return (
        f"Progress is kept in checkpoint {checkpoint}: once Kafka answers, rerun the same "
        "command; it resumes after the last committed batch and writes nothing twice."
    )


def _compaction_warnings(
    spark: SparkSession, settings: Settings, request: IngestRequest
) -> list[tuple[str, str]]:
    """Check, before reading, whether state tables of this run may have missed deletes."""
    if request.bounded or request.topic_pattern:
        return []
    topics = (
        request.topics
        if request.state
        else [t for t in request.topics if t in settings.state_topics]
    )
    at_risk = []
    for topic in topics:
        report = check_compaction(spark, settings, topic)
        if report.at_risk:
            print(report.message, flush=True)
            at_risk.append((topic, report.message))
    return at_risk


def _run_streaming(
    spark: SparkSession, settings: Settings, request: IngestRequest, *, tables_are_new: bool
) -> IngestSummary:
    with holding_checkpoint(settings.checkpoints, "ingest", request) as checkpoint:
        return _stream(spark, settings, request, checkpoint, tables_are_new=tables_are_new)


def _stream(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    checkpoint: Path,
    *,
    tables_are_new: bool,
) -> IngestSummary:
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))
    # Tables created by this run hold nothing that a replay could duplicate.
    if (
        not tables_are_new
        and not (checkpoint / IDENTITY_FILE).exists()
        and request.starting_offsets == "earliest"
    ):
        _refuse_silent_replay(spark, settings, request, checkpoint.name)
    fresh = not (checkpoint / IDENTITY_FILE).exists()
    identity = claim_checkpoint(
        checkpoint, source=request.source_description, targets=[events_path, rejects_path]
    )
    commits = BatchCommits.open(
        spark, checkpoint, identity.app_id, [events_path, rejects_path], fresh=fresh
    )
    summary = IngestSummary()

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        first_of_run = summary.batches == 0
        state_topics = _state_topics(settings, request, batch)
        result = append_batch(
            spark,
            batch,
            commits=commits,
            version=batch_id,
            events_path=events_path,
            rejects_path=rejects_path,
            hold=bool(state_topics),
            skip_if_empty=first_of_run,
        )
        for warning in result.warnings:
            print(f"ingest: WARNING {warning}", flush=True)
        summary.warnings.extend(result.warnings)
        if result.held is not None:
            try:
                # After both appends: a crash in between replays the batch, the appends
                # are skipped as already committed, and the MERGE runs once.
                summary.add_state(
                    apply_state(
                        spark,
                        settings,
                        result.held,
                        topics=state_topics,
                        app_id=identity.app_id,
                        version=batch_id,
                    )
                )
            finally:
                result.held.unpersist()
        summary.add_batch(result.counts)
        print(f"ingest: batch {batch_id} done, {sum(result.counts.values())} records", flush=True)

    spec = StreamSpec(
        job="ingest",
        options=kafka_reader_options(settings, request),
        checkpoint=checkpoint,
        trigger=request.trigger,
        progress_seconds=settings.progress_seconds,
    )
    outcome = run_stream(spark, spec, write_batch, progress=summary.counts_text)
    summary.stopped_by = outcome.stopped_by
    return summary


def _state_topics(settings: Settings, request: IngestRequest, batch: DataFrame) -> list[str]:
    """Topics of this batch whose state table is kept: all with --state, else those
    listed in settings.state_topics."""
    if not request.state and not settings.state_topics:
        return []
    if request.topic_pattern:
        present = [r["topic"] for r in batch.select("topic").distinct().collect()]
    else:
        present = list(request.topics)
    if request.state:
        return sorted(present)
    return sorted(t for t in present if t in settings.state_topics)


def _refuse_silent_replay(
    spark: SparkSession, settings: Settings, request: IngestRequest, checkpoint_name: str
) -> None:
    """A new checkpoint reading from earliest into tables that already hold these topics
    would append every record a second time: stop and say how to resume instead."""
    offsets = next_offsets_from_tables(spark, settings)
    if request.topic_pattern:
        pattern = re.compile(request.topic_pattern)
        seen = {t: o for t, o in offsets.items() if pattern.fullmatch(t)}
    else:
        seen = {t: o for t, o in offsets.items() if t in request.topics}
    if seen:
        raise IngestError(
            f"Checkpoint {checkpoint_name!r} is new (or was deleted) but the tables already "
            f"hold records of {sorted(seen)}. Reading from 'earliest' would duplicate them. "
            "Restore the checkpoint, or resume after the last ingested records with "
            f"--starting-offsets '{json.dumps(seen)}'."
        )


def _run_bounded(spark: SparkSession, settings: Settings, request: IngestRequest) -> IngestSummary:
    from delta.tables import DeltaTable

    records = spark.read.format("kafka").options(**kafka_reader_options(settings, request)).load()
    summary = IngestSummary()
    match = " AND ".join(f"t.{c} = s.{c}" for c in COORDINATES)
    # Rejects of the same record by republish are its reads, not ours: not a match.
    # (Rows from before rejected_by existed have it null; they were ingest's.)
    ours = f"coalesce(t.rejected_by, '{INGEST_JOB}') = s.rejected_by"

    def insert_absent(name: str, rows: DataFrame, condition: str) -> None:
        target = DeltaTable.forPath(spark, str(settings.table_path(name)))
        # Insert-if-absent on the Kafka coordinates: replays add nothing.
        target.alias("t").merge(rows.alias("s"), condition).whenNotMatchedInsertAll().execute()

    seen = Observation()
    # The one pass over the records: read, decode, count, hold the events.
    events = merge_source(to_events(decode_records(records, seen)))
    counts = reason_counts(seen, RejectReason)
    summary.add_batch(counts)
    if counts.get(None):
        insert_absent(EVENTS, events, match)
    if any(reason is not None for reason in counts):
        seen_again = Observation()
        rejects = merge_source(to_rejects(decode_records(records, seen_again)))
        insert_absent(REJECTS, rejects, f"{match} AND {ours}")
        lost = rejects_lost(counts, reason_counts(seen_again, RejectReason))
        if lost:
            print(f"ingest: WARNING {lost}", flush=True)
            summary.warnings.append(lost)
    events.unpersist()
    return summary


def next_offsets_from_tables(spark: SparkSession, settings: Settings) -> dict[str, dict[str, int]]:
    """Per topic and partition, the offset after the last record in events or rejects.

    This is the recovery path for a lost checkpoint: pass it as ``--starting-offsets``.

    Example:
        >>> next_offsets_from_tables(spark, settings)
        {'orders': {'0': 1200, '1': 1187}}
    """
    return {
        topic: {str(partition): offset for partition, offset in partitions.items()}
        for topic, partitions in ingested_next_offsets(spark, settings).items()
    }
