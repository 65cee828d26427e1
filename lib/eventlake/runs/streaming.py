"""The one runner of eventlake's streaming jobs (ingest, republish): triggers, the
micro-batch loop over Spark's Kafka source, progress lines and the graceful stop.

A job hands over its Kafka reader options, its checkpoint folder and a function that
writes one batch exactly once; :func:`run_stream` runs the query until the topics are
read (``available-now``) or until it is asked to stop (``processing-time=<interval>``).
Jobs start it from their claimed checkpoint (:meth:`ClaimedCheckpoint.stream`), which
also counts each batch into the run's summary and prints its ``batch N done`` line.

Stopping: the first SIGTERM or SIGINT lets the batch being written finish, then stops
the query; a batch that would start after it is abandoned before it writes anything,
with the checkpoint intact, and the next run replays it (each job's writes are
idempotent per batch). The run then returns normally, so the job prints its summary
and exits 0. A second signal ends the process at once.

Example:
    >>> spec = StreamSpec(job="ingest", options=options, checkpoint=path, trigger=trigger)
    >>> outcome = run_stream(spark, spec, write_batch, progress=lambda: summary.line())
    >>> outcome.stopped_by
    'SIGTERM'"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, Protocol

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.listener import StreamingQueryProgress

from eventlake.core.locations import Location
from eventlake.core.progress import progress_log
from eventlake.ledger.checkpoint import (
    SPARK_FOLDER,
    check_checkpoint_name,
    claim_checkpoint,
    hold_checkpoint,
)
from eventlake.ledger.marks import Marks
from eventlake.runs.offset_log import last_committed_batch, logged_batch
from eventlake.runs.stop_signals import StopSignals
from eventlake.runs.summary import RunSummary
from eventlake.runs.triggers import AVAILABLE_NOW, PROCESSING_TIME_PREFIX
from eventlake.storage.store import any_name, remove_tree

_log = progress_log(__name__)

#: How often the runner looks at the query (stop requests, progress lines).
POLL_SECONDS: Final = 1


class CheckpointedRun(Protocol):
    """What a streaming job's request tells about its checkpoint (ingest, republish)."""

    @property
    def checkpoint_name(self) -> str | None: ...

    @property
    def trigger(self) -> str: ...

    def default_checkpoint_name(self) -> str: ...

    @property
    def bounded(self) -> bool: ...


def checkpoint_folder(checkpoints: Location, run: CheckpointedRun) -> Location:
    """The run's checkpoint: ``--checkpoint-name``, else the job's default for its source.

    Example:
        >>> checkpoint_folder(settings.checkpoints, IngestRequest(topics=("orders",)))
        PosixPath('/wh/_checkpoints/ingest-topics_orders')
    """
    return checkpoints / check_checkpoint_name(run.checkpoint_name or run.default_checkpoint_name())


def resume_hint(
    checkpoints: Location, run: CheckpointedRun, *, bounded: str, streaming: str
) -> str:
    """How a rerun picks up after Kafka went away: ``bounded`` for a bounded run, else
    ``streaming`` with ``{checkpoint}`` filled in with the run's checkpoint.

    Example:
        >>> resume_hint(settings.checkpoints, request, bounded="Rerun.",
        ...             streaming="Rerun; it resumes at {checkpoint}.")
        'Rerun; it resumes at /wh/_checkpoints/ingest-topics_orders.'
    """
    if run.bounded:
        return bounded
    return streaming.format(checkpoint=checkpoint_folder(checkpoints, run))


@contextmanager
def holding_checkpoint(checkpoints: Location, job: str, run: CheckpointedRun) -> Iterator[Location]:
    """Hold the run's checkpoint folder (one stream per checkpoint) while the block runs.

    Example:
        >>> with holding_checkpoint(settings.checkpoints, "ingest", request) as checkpoint:
        ...     run_stream(spark, StreamSpec("ingest", options, checkpoint), write_batch)
    """
    folder = checkpoint_folder(checkpoints, run)
    with hold_checkpoint(folder, job=job, trigger=run.trigger):
        yield folder


@dataclass(frozen=True)
class ClaimedCheckpoint:
    """A run's checkpoint, held and claimed: its folder, its app id, and the job and
    trigger of the run that holds it. Where the stream stands is the ledger's
    (:mod:`eventlake.ledger.marks`); the checkpoint only caches it."""

    folder: Location
    app_id: str
    job: str
    trigger: str

    @property
    def spark_folder(self) -> Location:
        """Spark's own checkpoint data (offsets and commits of its batches)."""
        return self.folder / SPARK_FOLDER

    def resume_from(self, position: Marks) -> bool:
        """Make the checkpoint agree with the ledger's ``position`` before the stream
        starts; True when Spark will start from its starting offsets (a new checkpoint,
        or one discarded here), which the caller then takes from the ledger.

        A checkpoint behind the ledger is kept: its records below the marks are dropped
        before they are written. One ahead of it (the tables lack what Spark thinks is
        done: restored tables, a run that moved the state table's part of the ledger
        back) is discarded, so that the stream restarts at the ledger.

        Example:
            >>> claimed.resume_from({("orders", 0): 1200})
            False
        """
        last = last_committed_batch(self.spark_folder)
        if last is None:
            return not any_name(self.spark_folder / "offsets", lambda name: True)
        ends = logged_batch(self.spark_folder, last).ends
        # A partition the ledger has no mark for holds nothing in the tables.
        ahead = sorted(k for k, end in ends.items() if end > position.get(k, 0))
        if not ahead:
            return False
        shown = ", ".join(
            f"{t}/{p}: {ends[(t, p)]} > {position.get((t, p), 0)}" for t, p in ahead[:5]
        )
        # Said so that it reads as what it is (e.g. --state turned on for records that
        # landed without it), not as a rewind that lands records again.
        why = "a table restored" + (
            ", or --state on for records landed without it" if self.job == "ingest" else ""
        )
        _log.info(
            f"{self.job}: checkpoint {self.folder.name} is ahead of what the tables hold "
            f"({shown}: {why}); restarting it from the ledger: the tables get what they "
            "lack, nothing twice"
        )
        remove_tree(self.spark_folder)
        return True

    def discard(self) -> None:
        """Remove the checkpoint, still held, once its run has ended: for a run whose next
        one starts from the ledger anyway
        (:attr:`eventlake.ingest.IngestRequest.keeps_checkpoint`).

        Example:
            >>> claimed.discard()
        """
        remove_tree(self.folder)

    def stream(
        self,
        spark: SparkSession,
        options: dict[str, str],
        write_batch: Callable[[DataFrame, int], dict[str | None, int]],
        summary: RunSummary,
        progress_seconds: float,
        idle: Callable[[], None] | None = None,
    ) -> None:
        """Run the job's stream on this checkpoint (:func:`run_stream`) and count it in
        ``summary``: ``write_batch`` writes one batch exactly once and returns its records
        per reason (None: accepted); each batch is then counted and gets its
        ``<job>: batch N done`` line, and ``summary.stopped_by`` tells a graceful stop.
        ``idle``: called between batches (see :func:`run_stream`).

        Example:
            >>> claimed.stream(spark, options, write_batch, summary, progress_seconds=30)
            >>> summary.counts_text()
            'batches=2 read=10 events=9 rejects=1'
        """

        records: dict[int, int] = {}

        def counted(batch: DataFrame, batch_id: int) -> None:
            counts = write_batch(batch, batch_id)
            # Counted only once the batch is written: a batch that fails is not counted.
            summary.add_batch(counts)
            records.clear()  # only the last batch's count is asked for
            records[batch_id] = sum(counts.values())
            _log.info(f"{self.job}: batch {batch_id} done, {records[batch_id]} records")

        spec = StreamSpec(self.job, options, self.folder, self.trigger, progress_seconds)
        outcome = run_stream(
            spark, spec, counted, progress=summary.counts_text, idle=idle, records=records.get
        )
        summary.stopped_by = outcome.stopped_by


@contextmanager
def claimed_checkpoint(
    checkpoints: Location,
    job: str,
    run: CheckpointedRun,
    *,
    source: str,
    targets: Sequence[str],
) -> Iterator[ClaimedCheckpoint]:
    """Hold the run's checkpoint (:func:`holding_checkpoint`) and claim it for ``source``
    and ``targets`` (:func:`eventlake.ledger.checkpoint.claim_checkpoint`: a checkpoint is never
    reused for another source).

    Example:
        >>> with claimed_checkpoint(settings.checkpoints, "ingest", request,
        ...                         source="topics:orders", targets=[events, rejects]) as claimed:
        ...     claimed.resume_from(position)
        True
    """
    with holding_checkpoint(checkpoints, job, run) as folder:
        identity = claim_checkpoint(folder, source=source, targets=list(targets))
        yield ClaimedCheckpoint(folder, identity.app_id, job, run.trigger)


@dataclass(frozen=True)
class StreamSpec:
    """One streaming run: the job's name (for log lines), Spark Kafka source options,
    the checkpoint folder (Spark's own state goes in ``<checkpoint>/spark``), the
    trigger, and how often to print a progress line (0: never)."""

    job: str
    options: dict[str, str]
    checkpoint: Location
    trigger: str = AVAILABLE_NOW
    progress_seconds: float = 0.0


@dataclass
class StreamOutcome:
    """How a run ended: ``stopped_by`` names the signal that stopped it (None: the
    available-now run read everything); ``abandoned_batch`` is the batch that a stop
    abandoned before it wrote anything (the next run replays it)."""

    stopped_by: str | None = None
    abandoned_batch: int | None = None


class _StopRequested(RuntimeError):
    """Raised inside a batch that starts after a stop request: nothing written yet."""


class _Stopper(StopSignals):
    """Signal handling of one run (:class:`eventlake.runs.stop_signals.StopSignals`) and the
    state of its batches."""

    def __init__(self, job: str) -> None:
        super().__init__(job, "stopping after the batch in progress")
        self.batch_running = False
        self.abandoned_batch: int | None = None
        #: What ended the last batch that failed in Python (e.g. a lease that stayed
        #: held): Spark hands the run a StreamingQueryException with its traceback as text.
        self.batch_error: Exception | None = None

    def guard(
        self, write_batch: Callable[[DataFrame, int], None]
    ) -> Callable[[DataFrame, int], None]:
        def guarded(batch: DataFrame, batch_id: int) -> None:
            if self.signal_name is not None:
                self.abandoned_batch = batch_id
                raise _StopRequested(f"stop requested before batch {batch_id}")
            self.batch_running = True
            try:
                write_batch(batch, batch_id)
            except Exception as error:
                self.batch_error = error
                raise
            finally:
                self.batch_running = False

        return guarded


def run_stream(
    spark: SparkSession,
    spec: StreamSpec,
    write_batch: Callable[[DataFrame, int], None],
    *,
    progress: Callable[[], str] | None = None,
    idle: Callable[[], None] | None = None,
    records: Callable[[int], int | None] | None = None,
) -> StreamOutcome:
    """Run ``write_batch`` on every micro-batch of the Kafka source until the run ends.

    ``progress`` gives the job's counts for the progress line printed every
    ``spec.progress_seconds``; the runner adds the last batch's records (``records``:
    as the job counted them, by batch id), seconds, rate and lag. ``idle`` is
    called every ``POLL_SECONDS`` while no batch runs (work that waits for a quiet
    moment: Spark starts no batch while the topic is quiet); an error of it stops the
    stream and is raised.

    Example:
        >>> run_stream(spark, spec, write_batch).stopped_by is None
        True
    """
    stopper = _Stopper(spec.job)
    writer = (
        spark.readStream.format("kafka")
        .options(**spec.options)
        .load()
        .writeStream.foreachBatch(stopper.guard(write_batch))
        .option("checkpointLocation", str(spec.checkpoint / SPARK_FOLDER))
        .queryName(spec.checkpoint.name)
    )
    if spec.trigger == AVAILABLE_NOW:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=spec.trigger[len(PROCESSING_TIME_PREFIX) :])
    with stopper.installed():
        query = writer.start()
        next_progress = time.monotonic() + spec.progress_seconds
        shown: int | None = None  # the batch the last progress line was about
        try:
            while not query.awaitTermination(POLL_SECONDS):
                if stopper.signal_name is not None and not stopper.batch_running:
                    query.stop()
                    break
                # Never after a failed batch: the query is stopping with it, and idle work
                # (a state step) would run what just failed once more.
                if idle is not None and not stopper.batch_running and stopper.batch_error is None:
                    try:
                        idle()
                    except BaseException:
                        query.stop()
                        raise
                if spec.progress_seconds and time.monotonic() >= next_progress:
                    next_progress = time.monotonic() + spec.progress_seconds
                    last = query.lastProgress
                    line = _progress_line(spec.job, last, progress, records, shown=shown)
                    _log.info(line)
                    shown = None if last is None else last.batchId
        except StreamingQueryException:
            if stopper.abandoned_batch is None:
                failure = stopper.batch_error
                # An error of eventlake's own (its message is a sentence: a lease that
                # stayed held, a commit refused) reaches the caller as itself, which the
                # commands print as one line; Spark's and Kafka's keep Spark's report,
                # which the jobs read for a lost connection.
                if failure is not None and type(failure).__module__.startswith("eventlake."):
                    raise failure from None
                raise
        except KeyboardInterrupt:
            # A SIGINT that reached Python before the handlers were in place.
            stopper.signal_name = stopper.signal_name or signal.SIGINT.name
            query.stop()
    if stopper.signal_name is not None:
        abandoned = (
            f"; batch {stopper.abandoned_batch} abandoned, the next run replays it"
            if stopper.abandoned_batch is not None
            else ""
        )
        _log.info(f"{spec.job}: stopped by {stopper.signal_name}{abandoned}")
    return StreamOutcome(stopper.signal_name, stopper.abandoned_batch)


def _progress_line(
    job: str,
    last: StreamingQueryProgress | None,
    progress: Callable[[], str] | None,
    records: Callable[[int], int | None] | None = None,
    *,
    shown: int | None = None,
) -> str:
    """``<job>: running; <counts>; last batch N: R records in S s, X records/s, lag L``, or
    ``...; idle: no new records, lag L`` when Spark's last progress is a trigger that found
    nothing to read (Spark reports those too, as batches of 0 records) or the batch the
    previous line (``shown``) was about. R is the batch's records as the job counted them
    (``records``): Spark's ``numInputRows`` counts a row once per read of the batch, twice
    for a batch whose rejects are read again.

    Example:
        >>> _progress_line("ingest", idle_progress, None)
        'ingest: running; idle: no new records, lag 0 offsets (largest per partition)'
    """
    parts = [f"{job}: running"]
    if progress is not None:
        parts.append(progress())
    if last is not None:
        lag = [
            int(float(source.metrics["maxOffsetsBehindLatest"]))
            for source in last.sources
            if "maxOffsetsBehindLatest" in (source.metrics or {})
        ]
        lag_text = f", lag {max(lag)} offsets (largest per partition)" if lag else ""
        if not last.numInputRows or last.batchId == shown:
            parts.append("idle: no new records" + lag_text)
        else:
            counted = None if records is None else records(last.batchId)
            rows = last.numInputRows if counted is None else counted
            seconds = (last.durationMs or {}).get("triggerExecution", 0) / 1000
            rate = rows / seconds if seconds else 0.0
            parts.append(
                f"last batch {last.batchId}: {rows} records in {seconds:.1f} s, "
                f"{rate:.0f} records/s" + lag_text
            )
    return "; ".join(parts)
