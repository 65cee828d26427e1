"""Running a republish: :func:`run_republish` prepares the target topic and the rejects
table, then runs the routing (:mod:`eventlake.republish.routing`) as a stream, or as one
bounded batch when the request has ending offsets, and counts it in a
:class:`RepublishSummary`.

Partitions come from the Java producer inside Spark's Kafka sink: the default
partitioner hashes the key with murmur2, like every Java/Kafka Streams client, so no
partition is set here.

Delivery to Kafka is at least once (Spark's Kafka sink): a batch that crashes after
its send and before its commit is sent again, so the target can hold an event twice
(republish never changes an event: a repeat has the same (source, id)). Nothing here
makes events unique; a reader of the target drops such repeats: eventlake's ingest of
the target does with ``--dedup`` (duplicate_event rejects), and ``events_unique`` keeps
one per (source, id) without it. State tables keep the last record per key, which a
repeat does not change. What republish
has sent to a target is in the ledger (:mod:`eventlake.ledger.marks`, job
``republish:<target>``, kept in the rejects table with the batch's rejects): every run
(stream, bounded, a new checkpoint) sends only records above those marks, and rejects
land exactly once. Per-entity order is kept where the source has one: records of one
source partition are written in offset order.

Example:
    >>> request = RepublishRequest(source="orders.raw", target="orders",
    ...                            key_mapper="partitionkey", cleanup_policy="compact")
    >>> print(run_republish(spark, settings, request).line())
    republish orders.raw -> orders: read=120 republished=118 rejected=2 \
(missing_key_attribute=2) batches=1 seconds=5.1
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Final

from pyspark.sql import DataFrame, Observation, SparkSession

from eventlake.binding.reason_counts import reason_counts, rejects_lost
from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_admin
from eventlake.kafka.connection import check_connection, connection_loss_explained
from eventlake.kafka.connector_options import kafka_source_options
from eventlake.kafka.topics import create_topic, partition_counts, require_topics
from eventlake.ledger.commits import Ledger, LedgerMovedError, only_missing
from eventlake.ledger.marks import PartitionOffsets
from eventlake.ledger.offset_ranges import (
    bounded_range,
    nothing_to_read,
    read_range,
    requested_starts,
    starting_offsets_json,
)
from eventlake.republish.request import RepublishError, RepublishRequest
from eventlake.republish.routing import (
    REPUBLISH_REASONS,
    counted_plan,
    routed_records,
    routed_rejects,
)
from eventlake.runs.lineage import job_run, kafka_dataset, warehouse_dataset
from eventlake.runs.offset_log import logged_batch
from eventlake.runs.stop_signals import StopSignals, run_bounded
from eventlake.runs.streaming import ClaimedCheckpoint, claimed_checkpoint, resume_hint
from eventlake.runs.summary import RunSummary
from eventlake.runs.triggers import AVAILABLE_NOW
from eventlake.spark.kafka import write_to_kafka
from eventlake.warehouse.conflicts import retry_conflicts
from eventlake.warehouse.names import REJECTS
from eventlake.warehouse.schemas import REJECTS_SCHEMA
from eventlake.warehouse.tables import ensure_table

_log = progress_log(__name__)

#: How a rerun picks up after Kafka went away, for a bounded run.
_RESUME_BOUNDED: Final = (
    "Once Kafka answers, rerun the same command: it sends what the ledger does not hold "
    "yet (records of the interrupted run may be sent again: at least once)."
)
#: How a rerun picks up after Kafka went away, for a stream ({checkpoint}: its checkpoint).
_RESUME_STREAMING: Final = (
    "What was sent is kept in the rejects table's ledger (and cached in checkpoint "
    "{checkpoint}): once Kafka answers, rerun the same command; it resumes there (records"
    " of the interrupted batch may be sent again: delivery is at least once)."
)


@dataclass
class RepublishSummary(RunSummary):
    """Counts of one run, printed as one line at the end (the shared counts:
    :class:`eventlake.runs.summary.RunSummary`)."""

    accepted_label: ClassVar[str] = "republished"
    rejected_label: ClassVar[str] = "rejected"

    source: str
    target: str
    created_target: bool = False

    @property
    def republished(self) -> int:
        return self.accepted

    @property
    def rejected(self) -> int:
        return self.rejects

    def line(self) -> str:
        created = " (target created)" if self.created_target else ""
        return self._line(f"republish {self.source} -> {self.target}", after_seconds=created)


def kafka_reader_options(settings: Settings, request: RepublishRequest) -> dict[str, str]:
    """Options of Spark's Kafka source for this request."""
    return kafka_source_options(
        settings,
        {"subscribe": request.source},
        starting_offsets=request.starting_offsets,
        ending_offsets=request.ending_offsets,
    )


def prepare_target(settings: Settings, request: RepublishRequest) -> tuple[bool, bool]:
    """Create the target topic if missing; return (created, compacted).

    Example:
        >>> prepare_target(settings, RepublishRequest(source="a", target="b", partitions=6))
        (True, False)
    """
    from confluent_kafka.admin import ConfigResource, ResourceType

    admin = make_admin(settings)
    topics = admin.list_topics(timeout=30).topics
    if request.source not in topics:
        raise RepublishError(f"source topic {request.source!r} does not exist")
    partitions = request.partitions or len(topics[request.source].partitions)
    config = {"cleanup.policy": request.cleanup_policy} if request.cleanup_policy else None
    created = create_topic(settings, request.target, partitions=partitions, config=config)
    if not created and request.target in topics:
        existing = len(topics[request.target].partitions)
        if request.partitions is not None and existing != request.partitions:
            _log.info(
                f"republish: target {request.target} exists with {existing} partitions; "
                f"--partitions {request.partitions} only applies to a new topic"
            )
    resource = ConfigResource(ResourceType.TOPIC, request.target)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    policy = str(entries["cleanup.policy"].value or "")
    return created, "compact" in policy


def _ensure_rejects_table(spark: SparkSession, settings: Settings) -> str:
    path = str(settings.table_path(REJECTS))
    ensure_table(spark, path, REJECTS_SCHEMA)
    return path


def _write_kafka(settings: Settings, request: RepublishRequest, routed: DataFrame) -> None:
    write_to_kafka(routed_records(routed), settings, request.target)


def run_republish(
    spark: SparkSession, settings: Settings, request: RepublishRequest
) -> RepublishSummary:
    """Run one republish (streaming, or bounded batch with ending offsets) and count it,
    with its OpenLineage run events when lineage is configured (:mod:`eventlake.runs.lineage`).

    Example:
        >>> run_republish(spark, settings, RepublishRequest(source="a", target="b")).line()
        'republish a -> b: read=10 republished=10 rejected=0 batches=1 seconds=3.0'
    """
    source, target = (
        kafka_dataset(settings.bootstrap_servers, t) for t in (request.source, request.target)
    )
    rejects = warehouse_dataset(settings, REJECTS)
    with job_run(
        spark,
        republish_job_name(request),
        inputs=[source],
        outputs=[target, rejects],
        streaming=not request.bounded and request.trigger != AVAILABLE_NOW,
    ) as lineage:
        summary = _run_republish(spark, settings, request)
        lineage.row_counts.update({target: summary.republished, rejects: summary.rejected})
    return summary


def republish_job_name(request: RepublishRequest) -> str:
    """The OpenLineage job name of a republish route.

    Example:
        >>> republish_job_name(RepublishRequest(source="orders.raw", target="orders"))
        'republish.orders.raw>orders'
    """
    return f"republish.{request.source}>{request.target}"


def _run_republish(
    spark: SparkSession, settings: Settings, request: RepublishRequest
) -> RepublishSummary:
    started = time.monotonic()
    check_connection(settings)
    require_topics(settings, [request.source])
    created, compacted = prepare_target(settings, request)
    run = _Run(settings, request, _ensure_rejects_table(spark, settings), compacted)
    resume = resume_hint(
        settings.checkpoints, request, bounded=_RESUME_BOUNDED, streaming=_RESUME_STREAMING
    )
    with connection_loss_explained(settings, resume=resume):
        summary = _run_bounded(spark, run) if request.bounded else _run_streaming(spark, run)
    summary.created_target = created
    summary.seconds = time.monotonic() - started
    return summary


@dataclass(frozen=True)
class _Run:
    """What each read of one run needs: the request and settings, the rejects table and
    whether the target is compacted (records without a key are rejected then)."""

    settings: Settings
    request: RepublishRequest
    rejects_path: str
    compacted: bool

    def summary(self) -> RepublishSummary:
        return RepublishSummary(source=self.request.source, target=self.request.target)

    def write_records(self, records: DataFrame) -> dict[str | None, int]:
        """Write the routed ``records`` to the target topic; its records per reason
        (None: republished), counted in the same pass."""
        seen = Observation()
        _write_kafka(self.settings, self.request, self._plan(records, seen))
        return reason_counts(seen, REPUBLISH_REASONS)

    def store_rejects(
        self,
        records: DataFrame,
        counts: dict[str | None, int],
        store: Callable[[DataFrame], None],
        where: str = "",
    ) -> None:
        """Route ``records`` again and hand their rejects to ``store``; warn when this
        second read found fewer rejects than ``counts`` (the first read's)."""
        seen_again = Observation()
        store(routed_rejects(self._plan(records, seen_again), self.request.target))
        warning = rejects_lost(counts, reason_counts(seen_again, REPUBLISH_REASONS))
        if warning:
            _log.warning(f"republish: WARNING {where}{warning}")

    def _plan(self, records: DataFrame, seen: Observation) -> DataFrame:
        """The routing of ``records``, counted by reason into ``seen`` by the first action."""
        return counted_plan(records, self.request, seen, target_compacted=self.compacted)


def _has_rejects(counts: dict[str | None, int]) -> bool:
    return any(reason is not None for reason in counts)


def republish_job(target: str) -> str:
    """The ledger job of republishing to ``target``.

    Example:
        >>> republish_job("orders.bykey")
        'republish:orders.bykey'
    """
    return f"republish:{target}"


def _lease(request: RepublishRequest) -> str:
    # One lease per route: ingest of the source and other routes do not wait for it.
    return f"{request.source}>{request.target}"


def _run_streaming(spark: SparkSession, run: _Run) -> RepublishSummary:
    request = run.request
    ledger = Ledger(spark)
    with claimed_checkpoint(
        run.settings.checkpoints,
        "republish",
        request,
        source=f"topic:{request.source}",
        targets=[f"kafka:{request.target}", run.rejects_path],
    ) as claimed:
        partitions = partition_counts(run.settings, [request.source])
        sent = ledger.marks(run.rejects_path, republish_job(request.target), [request.source])
        options = kafka_reader_options(run.settings, run.request)
        if claimed.resume_from(sent) and sent:
            options["startingOffsets"] = starting_offsets_json(
                sent, partitions, requested_starts(request.starting_offsets, partitions)
            )
        return _stream(spark, run, ledger, claimed, options)


def _stream(
    spark: SparkSession,
    run: _Run,
    ledger: Ledger,
    claimed: ClaimedCheckpoint,
    options: dict[str, str],
) -> RepublishSummary:
    summary = run.summary()

    def write_batch(batch: DataFrame, batch_id: int) -> dict[str | None, int]:
        logged = logged_batch(claimed.spark_folder, batch_id)
        starts = logged_batch(claimed.spark_folder, batch_id - 1).ends if batch_id else None
        with ledger.leases(run.settings.warehouse, [_lease(run.request)], job="republish"):
            note = f"{claimed.folder.name} batch {batch_id}"
            return _send(spark, run, ledger, batch, logged.ends, starts, note, batch_id)

    claimed.stream(spark, options, write_batch, summary, run.settings.progress_seconds)
    return summary


def _send(
    spark: SparkSession,
    run: _Run,
    ledger: Ledger,
    records: DataFrame,
    ends: PartitionOffsets,
    starts: PartitionOffsets | None,
    note: str,
    batch_id: int | None = None,
) -> dict[str | None, int]:
    """Send ``records`` (up to ``ends``) that the ledger does not hold yet, then commit
    their rejects with the marks. One pass writes the records and counts them; only a
    batch with rejects is read again, for the rejects."""
    job = republish_job(run.request.target)

    def send() -> dict[str | None, int]:
        sent = ledger.marks(run.rejects_path, job, [run.request.source])
        missing = only_missing(
            records, sent, starts, topic="topic", partition="partition", offset="offset"
        )
        counts = run.write_records(missing)
        pending: list[object] = [None]

        def store(rejects: DataFrame) -> None:
            pending[0] = ledger.write(run.rejects_path, rejects)

        if _has_rejects(counts):
            run.store_rejects(missing, counts, store, where=f"{note}: ")
        if pending[0] is None:
            pending[0] = ledger.write(run.rejects_path, None)
        ledger.commit(run.rejects_path, pending[0], job, ends, note=note, batch=batch_id)
        return counts

    # Another process sent the same partitions meanwhile: the commit is refused, and what
    # is still missing is sent (the Kafka sink is at least once anyway).
    return retry_conflicts(send, what=f"republish: {note}", retryable=(LedgerMovedError,))


def _run_bounded(spark: SparkSession, run: _Run) -> RepublishSummary:
    summary = run.summary()
    # The marks commit after the records are sent: a stop cancels the send in progress, and
    # the next run sends the range again (the Kafka sink is at least once).
    send = partial(_send_range, spark, run, summary)
    run_bounded(spark, "republish", summary, send, next_run="sends what this one did not commit")
    return summary


def _send_range(
    spark: SparkSession, run: _Run, summary: RepublishSummary, _signals: StopSignals
) -> None:
    """The bounded run's range sent and its marks committed, counted into ``summary``."""
    request = run.request
    ledger = Ledger(spark)
    partitions = partition_counts(run.settings, [request.source])
    with ledger.leases(run.settings.warehouse, [_lease(request)], job="republish (bounded)"):
        sent = ledger.marks(run.rejects_path, republish_job(request.target), [request.source])
        starts, ends = bounded_range(
            run.settings,
            sent,
            request.starting_offsets,
            request.ending_offsets or "latest",
            partitions,
        )
        if nothing_to_read(starts, ends):
            _log.info(
                f"republish: nothing to send: {request.target} has {request.source} up to "
                "the ending offsets"
            )
            return
        records = read_range(spark, kafka_reader_options(run.settings, request), starts, ends)
        summary.add_batch(_send(spark, run, ledger, records, ends, starts, "bounded run"))
