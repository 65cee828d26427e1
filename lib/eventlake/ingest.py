"""Ingest CloudEvents from Kafka into the events and rejects Delta tables, exactly once.

Two ways to run, one decode and write path:

* streaming (Structured Streaming, ``available-now`` or ``processing-time=<interval>``):
  progress lives in a checkpoint; each micro-batch is appended to both tables with
  Delta's idempotent writes (``txnAppId`` = the checkpoint's app id, ``txnVersion`` =
  the batch id), so a batch replayed after a crash is not written twice;
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
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.binding import INGEST_JOB, decode_records, to_events, to_rejects
from eventlake.checkpoint import IDENTITY_FILE, claim_checkpoint
from eventlake.compaction import check_compaction
from eventlake.kafka import check_connection, connection_lost_error, spark_kafka_options
from eventlake.settings import Settings
from eventlake.state import StateChange, apply_state, reconcile_state
from eventlake.tables import EVENTS, REJECTS, ensure_tables, merge_source

#: The tables every ingest writes.
TABLES = frozenset({EVENTS, REJECTS})
AVAILABLE_NOW = "available-now"
PROCESSING_TIME_PREFIX = "processing-time="
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
        if self.trigger != AVAILABLE_NOW and not self.trigger.startswith(PROCESSING_TIME_PREFIX):
            raise IngestError(
                f"Unknown trigger {self.trigger!r}: use 'available-now' or "
                "'processing-time=<interval>' (e.g. processing-time=30 seconds)."
            )
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
        )


def kafka_reader_options(settings: Settings, request: IngestRequest) -> dict[str, str]:
    """Options of Spark's Kafka source for this request."""
    options = spark_kafka_options(settings)
    options.update(
        {
            "includeHeaders": "true",
            "startingOffsets": request.starting_offsets,
            # Gaps from compaction and transaction markers are skipped by the source;
            # offsets gone below the log start are real loss and must stop the run.
            "failOnDataLoss": "true",
        }
    )
    if request.topic_pattern:
        options["subscribePattern"] = request.topic_pattern
    else:
        options["subscribe"] = ",".join(request.topics)
    if request.ending_offsets is not None:
        options["endingOffsets"] = request.ending_offsets
    if settings.max_offsets_per_trigger and not request.bounded:
        options["maxOffsetsPerTrigger"] = str(settings.max_offsets_per_trigger)
    return options


def decode_batch(records: DataFrame) -> DataFrame:
    """Decode Kafka rows and hold the result (memory, then disk) for the writes of a batch.

    The raw value and headers are kept only for rejects: the events table has the data
    and attributes, and holding every value twice made building the cache a third of
    the time of a large batch.

    Example:
        >>> decoded = decode_batch(spark.read.format("kafka")...load())
        >>> try: ...  # write events, rejects, state
        ... finally: decoded.unpersist()
    """
    rejected = F.col("reject_reason").isNotNull()
    return (
        decode_records(records)
        .withColumns(
            {
                "kafka_value": F.when(rejected, F.col("kafka_value")),
                "kafka_headers": F.when(rejected, F.col("kafka_headers")),
            }
        )
        .persist(StorageLevel.MEMORY_AND_DISK)
    )


def _reason_counts(decoded: DataFrame) -> dict[str | None, int]:
    rows = decoded.groupBy("reject_reason").count().collect()
    return {row["reject_reason"]: int(row["count"]) for row in rows}


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
            else _run_streaming(spark, settings, request, tables_are_new=new_tables >= TABLES)
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
    checkpoint = settings.checkpoints / (
        request.checkpoint_name or request.default_checkpoint_name()
    )
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
    checkpoint = settings.checkpoints / (
        request.checkpoint_name or request.default_checkpoint_name()
    )
    # Tables created by this run hold nothing that a replay could duplicate.
    if (
        not tables_are_new
        and not (checkpoint / IDENTITY_FILE).exists()
        and request.starting_offsets == "earliest"
    ):
        _refuse_silent_replay(spark, settings, request, checkpoint.name)
    identity = claim_checkpoint(
        checkpoint, source=request.source_description, targets=[events_path, rejects_path]
    )
    summary = IngestSummary()

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        decoded = decode_batch(batch)
        try:
            # Counted first: the count fills the cache the writes then read, and an empty
            # batch needs no Delta commit at all.
            counts = _reason_counts(decoded)
            if counts:
                _write_batch(decoded, batch_id)
        finally:
            decoded.unpersist()
        summary.add_batch(counts)
        print(f"ingest: batch {batch_id} done, {sum(counts.values())} records", flush=True)

    def _write_batch(decoded: DataFrame, batch_id: int) -> None:
        idempotent: dict[str, Any] = {"txnAppId": identity.app_id, "txnVersion": batch_id}
        to_events(decoded).write.format("delta").mode("append").options(**idempotent).save(
            events_path
        )
        to_rejects(decoded).write.format("delta").mode("append").options(**idempotent).save(
            rejects_path
        )
        state_topics = _state_topics(settings, request, decoded)
        if state_topics:
            # After both appends: a crash in between replays the batch, the appends are
            # skipped as already committed, and the MERGE runs once.
            summary.add_state(
                apply_state(
                    spark,
                    settings,
                    decoded,
                    topics=state_topics,
                    app_id=identity.app_id,
                    version=batch_id,
                )
            )

    stream = (
        spark.readStream.format("kafka").options(**kafka_reader_options(settings, request)).load()
    )
    writer = (
        stream.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", str(checkpoint / "spark"))
        .queryName(checkpoint.name)
    )
    if request.trigger == AVAILABLE_NOW:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=request.trigger[len(PROCESSING_TIME_PREFIX) :])
    query = writer.start()
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    return summary


def _state_topics(settings: Settings, request: IngestRequest, decoded: DataFrame) -> list[str]:
    """Topics of this batch whose state table is kept: all with --state, else those
    listed in settings.state_topics."""
    if not request.state and not settings.state_topics:
        return []
    if request.topic_pattern:
        present = [r["kafka_topic"] for r in decoded.select("kafka_topic").distinct().collect()]
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
    decoded = decode_batch(records)
    try:
        summary = IngestSummary()
        counts = _reason_counts(decoded)
        summary.add_batch(counts)
        if not counts:
            return summary
        match = " AND ".join(f"t.{c} = s.{c}" for c in COORDINATES)
        # Rejects of the same record by republish are its reads, not ours: not a match.
        # (Rows from before rejected_by existed have it null; they were ingest's.)
        ours = f"coalesce(t.rejected_by, '{INGEST_JOB}') = s.rejected_by"
        for name, rows, condition in (
            (EVENTS, to_events(decoded), match),
            (REJECTS, to_rejects(decoded), f"{match} AND {ours}"),
        ):
            target = DeltaTable.forPath(spark, str(settings.table_path(name)))
            # Insert-if-absent on the Kafka coordinates: replays add nothing.
            merge = target.alias("t").merge(merge_source(rows).alias("s"), condition)
            merge.whenNotMatchedInsertAll().execute()
    finally:
        decoded.unpersist()
    return summary


def next_offsets_from_tables(spark: SparkSession, settings: Settings) -> dict[str, dict[str, int]]:
    """Per topic and partition, the offset after the last record in events or rejects.

    This is the recovery path for a lost checkpoint: pass it as ``--starting-offsets``.

    Example:
        >>> next_offsets_from_tables(spark, settings)
        {'orders': {'0': 1200, '1': 1187}}
    """
    events = spark.read.format("delta").load(str(settings.table_path(EVENTS)))
    rejects = (
        spark.read.format("delta")
        .load(str(settings.table_path(REJECTS)))
        .where(F.coalesce(F.col("rejected_by"), F.lit(INGEST_JOB)) == INGEST_JOB)
    )
    frames = [events.select(*COORDINATES), rejects.select(*COORDINATES)]
    rows = (
        frames[0]
        .unionByName(frames[1])
        .groupBy("kafka_topic", "kafka_partition")
        .agg(F.max("kafka_offset").alias("last"))
        .collect()
    )
    offsets: dict[str, dict[str, int]] = {}
    for row in rows:
        offsets.setdefault(row["kafka_topic"], {})[str(row["kafka_partition"])] = row["last"] + 1
    return offsets
