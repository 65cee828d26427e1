"""The ingest runs: streaming (one :func:`eventlake.ingest.batch.land_batch` per
micro-batch) and bounded (one batch from the ledger's marks to the ending offsets); the
compaction check of state topics before a run, and recovery hints.

Every run lands only what the ledger (:mod:`eventlake.ledger.marks`) does not hold yet, under
the lease of each topic it lands: a backfill, a full refresh, a second or lost checkpoint
and a stream beside the schedule all stay exactly once.

Example:
    >>> run_ingest(spark, settings, IngestRequest(topics=("orders",))).line()
    'ingest: read=120 events=117 rejects=3 (plain_tombstone=3) batches=1 seconds=4.2'"""

from __future__ import annotations

import time
from datetime import timedelta
from functools import partial
from typing import Final

from pyspark.sql import DataFrame, SparkSession

from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.ingest.batch import land_batch
from eventlake.ingest.request import IngestError, IngestRequest, IngestSummary, kafka_reader_options
from eventlake.ingest.state_backlog import StateBacklog
from eventlake.ingest.state_step import (
    apply_backlog,
    caught_up_clock_ms,
    compaction_warnings,
    kept_state,
)
from eventlake.ingest.topic_runs import lineage_runs, present_topics
from eventlake.kafka.connection import check_connection, connection_loss_explained
from eventlake.kafka.topics import partition_counts, require_topics
from eventlake.ledger.commits import Ledger
from eventlake.ledger.lease import LeaseTimeoutError
from eventlake.ledger.marks import INGEST, STATE, Marks
from eventlake.ledger.offset_ranges import (
    bounded_range,
    nothing_to_read,
    read_range,
    requested_starts,
    split_range,
    starting_offsets_json,
)
from eventlake.runs.offset_log import logged_batch
from eventlake.runs.stop_signals import StopSignals, run_bounded
from eventlake.runs.streaming import ClaimedCheckpoint, claimed_checkpoint, resume_hint
from eventlake.spark.kafka import require_topic_pattern
from eventlake.state.reconcile import reconcile_state
from eventlake.typed.step import TypedCadence, typed_step
from eventlake.warehouse.catalog import register_warehouse
from eventlake.warehouse.delta_log import may_hold_topic
from eventlake.warehouse.names import EVENTS, REJECTS, state_path
from eventlake.warehouse.tables import ensure_tables, ingested_next_offsets

_log = progress_log(__name__)

#: How a rerun picks up after Kafka went away, for a bounded run.
_RESUME_BOUNDED: Final = (
    "Once Kafka answers, rerun the same command: a run lands only records the tables do "
    "not hold yet."
)
#: How a rerun picks up after Kafka went away, for a stream ({checkpoint}: its checkpoint).
_RESUME_STREAMING: Final = (
    "What has landed is kept in the tables (and cached in checkpoint {checkpoint}): once "
    "Kafka answers, rerun the same command; it resumes there and writes nothing twice."
)


def run_ingest(spark: SparkSession, settings: Settings, request: IngestRequest) -> IngestSummary:
    """Run one ingest (streaming or bounded batch) and return its counts, with its
    OpenLineage run events when lineage is configured (:mod:`eventlake.runs.lineage`).

    A run of several topics lands those Kafka has and refuses the others, each with its
    sentence in the summary (:attr:`IngestSummary.refused`; none there: refused whole),
    and has an OpenLineage run per topic (:mod:`eventlake.ingest.topic_runs`)."""
    request, refused = present_topics(settings, request)
    with lineage_runs(spark, settings, request) as lineage:
        summary = _run_ingest(spark, settings, request)
        summary.refused.update(refused)
        lineage.record(summary)
    return summary


def _run_ingest(spark: SparkSession, settings: Settings, request: IngestRequest) -> IngestSummary:
    started = time.monotonic()
    if request.dedup and not request.bounded:
        # --dedup holds each batch's records on local disk: bound what one batch reads.
        bound = min(
            settings.max_offsets_per_trigger or settings.dedup_batch_records,
            settings.dedup_batch_records,
        )
        settings = settings.model_copy(update={"max_offsets_per_trigger": bound})
    check_connection(settings)
    # Named topics must exist (a pattern may match none yet): Spark's consumer would
    # have the broker create a misspelt one and read nothing from it.
    require_topics(settings, request.topics)
    if request.topic_pattern:
        require_topic_pattern(spark, request.topic_pattern)
    ensure_tables(spark, settings)
    _register(spark, settings)
    at_risk = compaction_warnings(spark, settings, request)
    ledger = Ledger(spark)
    resume = resume_hint(
        settings.checkpoints, request, bounded=_RESUME_BOUNDED, streaming=_RESUME_STREAMING
    )
    with connection_loss_explained(settings, resume=resume):
        summary = (
            _run_bounded(spark, settings, request, ledger)
            if request.bounded
            else _run_streaming(spark, settings, request, ledger)
        )
    summary.warnings.extend(message for _, message in at_risk)
    if request.auto_reconcile:
        for topic, _ in at_risk:
            _log.info(reconcile_state(spark, settings, topic).line())
            summary.reconciled.append(topic)
    _register(spark, settings)  # the state tables this run made
    if len(request.topics) > 1:
        # A topic of the run with nothing new has its line too.
        summary.add_topics({t: (0, 0) for t in request.topics})
    summary.seconds = time.monotonic() - started
    return summary


def _register(spark: SparkSession, settings: Settings) -> None:
    """The warehouse's new tables by name in the catalog, when there is one."""
    for name in register_warehouse(spark, settings):
        _log.info("catalog: registered %s", name)


def _run_streaming(
    spark: SparkSession, settings: Settings, request: IngestRequest, ledger: Ledger
) -> IngestSummary:
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))
    run_started_ms = int(time.time() * 1000)
    with claimed_checkpoint(
        settings.checkpoints,
        "ingest",
        request,
        source=request.source_description,
        targets=[events_path, rejects_path],
    ) as claimed:
        partitions = partition_counts(settings, request.topics, pattern=request.topic_pattern)
        where = _position(spark, ledger, settings, request, list(partitions))
        options = kafka_reader_options(settings, request)
        if claimed.resume_from(where) and where:
            # A new (or lost) checkpoint starts where the tables stand, not at 'earliest'.
            options["startingOffsets"] = starting_offsets_json(
                where, partitions, requested_starts(request.starting_offsets, partitions)
            )
            _log.info(f"ingest: starting from the ledger: {options['startingOffsets']}")
        summary = _stream(spark, settings, request, ledger, claimed, options, run_started_ms)
        if not request.keeps_checkpoint:
            claimed.discard()
        return summary


def _position(
    spark: SparkSession,
    ledger: Ledger,
    settings: Settings,
    request: IngestRequest,
    topics: list[str],
) -> Marks:
    """Where this run stands per partition: the events marks, and for topics whose state
    table it keeps, the lower of those and the state marks (none: 0, so that a new state
    table is filled from the start of the topic)."""
    events = landed_marks(spark, ledger, settings, topics)
    where = dict(events)
    for topic in kept_state(settings, request, topics):
        state = ledger.marks(str(state_path(settings, topic)), STATE, [topic])
        for key in [k for k in events if k[0] == topic]:
            where[key] = min(events[key], state.get(key, 0))
    return where


def landed_marks(
    spark: SparkSession, ledger: Ledger, settings: Settings, topics: list[str]
) -> Marks:
    """The events marks of ``topics`` (where ingest stands). A topic the tables hold but
    the ledger does not (a warehouse from before the ledger) is adopted first: its marks
    are taken from the tables' rows and committed. A topic with rejects marks only is
    known to the ledger (a first batch stopped between its rejects and events commits):
    never adopted, or the events that did not land would be skipped.

    Example:
        >>> landed_marks(spark, Ledger(spark), settings, ["orders"])
        {('orders', 0): 1200}
    """
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))
    marks = ledger.marks(events_path, INGEST, topics)
    known = {t for t, _ in marks} | {t for t, _ in ledger.marks(rejects_path, INGEST, topics)}
    for topic in sorted(set(topics) - known):
        held = any(may_hold_topic(settings.table_path(n), topic) for n in (EVENTS, REJECTS))
        found = ingested_next_offsets(spark, settings, topic).get(topic) if held else None
        if not found:
            continue
        adopted = {(topic, p): o for p, o in found.items()}
        with ledger.leases(settings.warehouse, [topic], job="ingest (adopting)"):
            ledger.marks(rejects_path, INGEST, [topic])
            for path in (rejects_path, events_path):
                ledger.commit(path, ledger.write(path, None), INGEST, adopted, note="adopted")
        _log.info(f"ingest: {topic}: the tables held it before the ledger: adopted {adopted}")
        marks.update(adopted)
    return marks


def _stream(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    ledger: Ledger,
    claimed: ClaimedCheckpoint,
    options: dict[str, str],
    run_started_ms: int,
) -> IngestSummary:
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))
    summary = IngestSummary()

    backlog = StateBacklog(settings.state_interval_seconds)
    typed = TypedCadence(settings.typed_interval_seconds)
    note = claimed.folder.name
    lease_job = f"ingest {note}"

    def write_batch(batch: DataFrame, batch_id: int) -> dict[str | None, int]:
        with backlog.lock:
            return land_and_apply(batch, batch_id)

    def land_and_apply(batch: DataFrame, batch_id: int) -> dict[str | None, int]:
        logged = logged_batch(claimed.spark_folder, batch_id)
        starts = logged_batch(claimed.spark_folder, batch_id - 1).ends if batch_id else None
        topics = sorted({topic for topic, _ in logged.ends})
        with ledger.leases(settings.warehouse, topics, job=lease_job):
            result = land_batch(
                spark,
                batch,
                ledger=ledger,
                ends=logged.ends,
                events_path=events_path,
                rejects_path=rejects_path,
                note=note,
                batch_id=batch_id,
                starts=starts,
                dedup_horizon=_dedup_horizon(settings, request),
            )
            for warning in result.warnings:
                _log.warning(f"ingest: WARNING {warning}")
            summary.warnings.extend(result.warnings)
            summary.data_json_invalid += result.data_json_invalid
            summary.add_topics(result.by_topic)
            if kept_state(settings, request, topics):
                caught_up = caught_up_clock_ms(settings, request, logged, run_started_ms)
                backlog.add(result, logged.ends, caught_up, batch_id)
                if backlog.due():
                    summary.add_state(
                        apply_backlog(spark, settings, request, ledger, backlog, note, batch)
                    )
            if result.located:
                typed.landed(topics)
            if typed.due():
                typed_step(spark, settings, ledger, topics, note=note, batch_id=batch_id)
                typed.stepped()
        return result.counts

    def apply_waiting(*, due_only: bool) -> None:
        # Between batches: Spark starts none while the topic is quiet, and the state
        # tables would wait for the next record. Never beside a batch (the lock), and
        # never waiting for a topic another job holds: this runs where the stream's
        # signals are acted on (the next call tries again; a stop leaves it to the next
        # run, whose state step starts from the state marks).
        if not backlog.lock.acquire(blocking=False):
            return
        topics = backlog.topics()
        try:
            if backlog.batches and (backlog.due() or not due_only):
                with ledger.leases(settings.warehouse, topics, job=lease_job, wait_seconds=0):
                    summary.add_state(
                        apply_backlog(spark, settings, request, ledger, backlog, note)
                    )
            if typed.due() or (typed.pending and not due_only):
                topics = sorted(typed.topics)
                with ledger.leases(settings.warehouse, topics, job=lease_job, wait_seconds=0):
                    typed_step(spark, settings, ledger, topics, note=note)
                typed.stepped()
        except LeaseTimeoutError as held:
            if not due_only:
                _log.info(
                    f"ingest: {', '.join(topics)} held by {held.holder}: the state step of the "
                    f"{len(backlog.batches)} batches landed since the last one is left to the "
                    "next run of this stream, which starts from the state marks"
                )
        finally:
            backlog.lock.release()

    claimed.stream(
        spark,
        options,
        write_batch,
        summary,
        settings.progress_seconds,
        idle=partial(apply_waiting, due_only=True),
    )
    # A stream that stops applies what it landed since its last state step.
    apply_waiting(due_only=False)
    return summary


def _dedup_horizon(settings: Settings, request: IngestRequest) -> timedelta | None:
    """How far back ``--dedup`` looks for an earlier event; None without it."""
    return timedelta(hours=settings.dedup_horizon_hours) if request.dedup else None


def _run_bounded(
    spark: SparkSession, settings: Settings, request: IngestRequest, ledger: Ledger
) -> IngestSummary:
    """One batch from the ledger's marks (where there are none: ``--starting-offsets``)
    up to ``--ending-offsets``: a backfill or full refresh adds only what is missing."""
    summary = IngestSummary()
    # Each piece commits at its end: a stop cancels the piece in progress (its files stay
    # uncommitted) and the next run lands it.
    land = partial(_land_range, spark, settings, request, ledger, summary)
    run_bounded(spark, "ingest", summary, land, next_run="lands what this one did not commit")
    return summary


def _land_range(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    ledger: Ledger,
    summary: IngestSummary,
    signals: StopSignals,
) -> None:
    """The bounded run's range landed into ``summary``, piece by piece until a stop."""
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))
    partitions = partition_counts(settings, request.topics, pattern=request.topic_pattern)
    if not partitions:
        raise IngestError(f"No topic to read: {request.source_description} matches none.")
    with ledger.leases(settings.warehouse, list(partitions), job="ingest (bounded)"):
        # The events marks are where ingest stands (see eventlake.ledger.marks).
        landed = landed_marks(spark, ledger, settings, list(partitions))
        starts, ends = bounded_range(
            settings,
            landed,
            request.starting_offsets,
            request.ending_offsets or "latest",
            partitions,
        )
        if nothing_to_read(starts, ends):
            _log.info(
                f"ingest: nothing to land: the tables hold {request.source_description} "
                "up to the ending offsets"
            )
            # What another run landed without them (typed tables off there, or a crash).
            typed_step(spark, settings, ledger, list(partitions), note="bounded run")
            return
        # --dedup holds each batch's records on local disk: a long range lands in pieces.
        pieces = (
            split_range(starts, ends, settings.dedup_batch_records)
            if request.dedup
            else [(starts, ends)]
        )
        options = kafka_reader_options(settings, request)
        for number, (piece_starts, piece_ends) in enumerate(pieces, 1):
            if signals.signal_name is not None:
                return
            records = read_range(spark, options, piece_starts, piece_ends)
            result = land_batch(
                spark,
                records,
                ledger=ledger,
                ends=piece_ends,
                events_path=events_path,
                rejects_path=rejects_path,
                note="bounded run" if len(pieces) == 1 else f"bounded run {number}/{len(pieces)}",
                starts=piece_starts,
                dedup_horizon=_dedup_horizon(settings, request),
            )
            summary.add_batch(result.counts)
            summary.add_topics(result.by_topic)
            summary.data_json_invalid += result.data_json_invalid
            for warning in result.warnings:
                _log.warning(f"ingest: WARNING {warning}")
                summary.warnings.append(warning)
            if len(pieces) > 1:
                _log.info(f"ingest: bounded run, piece {number} of {len(pieces)} done")
        typed_step(spark, settings, ledger, list(partitions), note="bounded run")
