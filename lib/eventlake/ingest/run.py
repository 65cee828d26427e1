"""The ingest runs: streaming (one :func:`eventlake.ingest.batch.append_batch` per
micro-batch, under a checkpoint) and bounded (insert-if-absent on the Kafka
coordinates); the compaction check of state topics before a run, and recovery hints.

Example:
    >>> run_ingest(spark, settings, IngestRequest(topics=("orders",))).line()
    'ingest: read=120 events=117 rejects=3 (plain_tombstone=3) batches=1 seconds=4.2'
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession

from eventlake.binding import RejectReason, decode_records, to_events, to_rejects
from eventlake.compaction import check_compaction
from eventlake.ingest.batch import append_batch, read_back
from eventlake.ingest.request import IngestError, IngestRequest, IngestSummary, kafka_reader_options
from eventlake.kafka import check_connection, connection_lost_error
from eventlake.observed import reason_counts, rejects_lost
from eventlake.settings import Settings
from eventlake.spark import release
from eventlake.state import apply_state, reconcile_state
from eventlake.streaming import ClaimedCheckpoint, checkpoint_folder, claimed_checkpoint
from eventlake.tables import (
    EVENTS,
    INGEST_JOB,
    INGEST_TABLES,
    KAFKA_COORDINATES,
    REJECTS,
    ensure_tables,
    ingested_next_offsets,
    merge_source,
)


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
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))

    def refuse_silent_replay(checkpoint: Path) -> None:
        # Tables created by this run hold nothing that a replay could duplicate.
        if not tables_are_new and request.starting_offsets == "earliest":
            _refuse_silent_replay(spark, settings, request, checkpoint.name)

    with claimed_checkpoint(
        spark,
        settings.checkpoints,
        "ingest",
        request,
        source=request.source_description,
        targets=[events_path, rejects_path],
        tables=[events_path, rejects_path],
        before_first_claim=refuse_silent_replay,
    ) as claimed:
        return _stream(spark, settings, request, claimed, events_path, rejects_path)


def _stream(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    claimed: ClaimedCheckpoint,
    events_path: str,
    rejects_path: str,
) -> IngestSummary:
    summary = IngestSummary()

    def write_batch(batch: DataFrame, batch_id: int) -> dict[str | None, int]:
        first_of_run = summary.batches == 0
        state_topics = _state_topics(settings, request, batch)
        result = append_batch(
            spark,
            batch,
            commits=claimed.commits,
            version=batch_id,
            events_path=events_path,
            rejects_path=rejects_path,
            locate=bool(state_topics),
            skip_if_empty=first_of_run,
        )
        for warning in result.warnings:
            print(f"ingest: WARNING {warning}", flush=True)
        summary.warnings.extend(result.warnings)
        if state_topics and result.counts:
            # After both appends: a crash in between replays the batch, the appends are
            # skipped as already committed, and the MERGE runs once.
            summary.add_state(
                apply_state(
                    spark,
                    settings,
                    read_back(spark, result, batch, events_path, rejects_path),
                    topics=state_topics,
                    app_id=claimed.app_id,
                    version=batch_id,
                )
            )
        return result.counts

    options = kafka_reader_options(settings, request)
    claimed.stream(spark, options, write_batch, summary, settings.progress_seconds)
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
    match = " AND ".join(f"t.{c} = s.{c}" for c in KAFKA_COORDINATES)
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
        release(rejects)
        lost = rejects_lost(counts, reason_counts(seen_again, RejectReason))
        if lost:
            print(f"ingest: WARNING {lost}", flush=True)
            summary.warnings.append(lost)
    release(events)
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
