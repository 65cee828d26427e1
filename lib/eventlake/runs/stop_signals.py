"""How a job stops on SIGTERM or SIGINT: the first signal asks it to stop (recorded,
announced, and an optional action run on a thread of its own), the second ends the
process at once. Streams (:mod:`eventlake.runs.streaming`) finish the batch in progress; the
quality check cancels its Spark jobs and records nothing.

Why the action runs on a thread: Python runs a signal handler on the main thread, which
may be inside a py4j call to the JVM at that moment; a second py4j call from the handler
would then be a reentrant call on the same connection. A thread has a connection of its
own.

Example:
    >>> signals = StopSignals("check", "cancelling its Spark jobs", on_stop=cancel)
    >>> with signals.installed():
    ...     run()
    >>> signals.signal_name
    'SIGTERM'
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Final

from eventlake.core.progress import progress_log

_log = progress_log(__name__)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from eventlake.runs.summary import RunSummary

#: The signals that ask a job to stop.
STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
#: A signal this soon after the first is the same stop, not a second one: GNU timeout
#: signals the command and then its whole process group, so the command gets it twice.
SAME_STOP_SECONDS: Final = 1.0
#: Set once a run's own signal handling (:meth:`StopSignals.installed`) has begun.
_WORK_BEGAN = threading.Event()


def stop_while_starting(job: str) -> None:
    """Until a run's own signal handling begins, SIGTERM or SIGINT ends the process at
    once with ``<job>: stopped by <signal> while starting; nothing was done`` and exit 0
    (after a run's handling ended: ``...; what it committed stays``). For the start of a
    job command: the imports, the checks, the Spark session's start, the reads before
    the work, where a stop otherwise gave a traceback (PySpark's own SIGINT handler
    calls the JVM, from the main thread that may be inside a call to it already) or
    exit 143. Only on the main thread, where Python lets handlers be set.

    Example:
        >>> stop_while_starting("ingest")  # SIGINT now: "ingest: stopped by SIGINT while ..."
    """
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if _WORK_BEGAN.is_set():
            _log.info(f"{job}: stopped by {name}; what it committed stays")
        else:
            _log.info(f"{job}: stopped by {name} while starting; nothing was done")
        # At once: the main thread may be inside a py4j call, and the JVM this process
        # started ends with it (its standard input closes).
        os._exit(0)

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)


class StopSignals:
    """Signal handling of one run of ``job``: ``signal_name`` is the first stop signal's
    name (None: none came); ``stopping`` says what the job does then."""

    def __init__(
        self, job: str, stopping: str, *, on_stop: Callable[[StopSignals], None] | None = None
    ) -> None:
        self.job = job
        self.stopping = stopping
        self.on_stop = on_stop
        self.signal_name: str | None = None
        self._first_at = 0.0
        #: Set when :meth:`installed` ends: an ``on_stop`` that repeats itself stops then.
        self.finished = threading.Event()

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The handler of :data:`STOP_SIGNALS` while :meth:`installed`."""
        name = signal.Signals(signum).name
        if self.signal_name is not None:
            if time.monotonic() - self._first_at < SAME_STOP_SECONDS:
                return  # the same stop, delivered twice (timeout(1))
            _log.info(f"{self.job}: second signal ({name}): stopping at once")
            os._exit(128 + signum)
        self.signal_name = name
        self._first_at = time.monotonic()
        _log.info(f"{self.job}: {name} received: {self.stopping} (a second signal stops at once)")
        if self.on_stop is not None:
            threading.Thread(
                target=self.on_stop, args=(self,), name=f"{self.job}-stop", daemon=True
            ).start()

    @contextmanager
    def installed(self) -> Iterator[None]:
        """:meth:`handle` the stop signals within the block, the previous handlers after."""
        # Python lets only the main thread set handlers; a run elsewhere (a test, a
        # thread of another program) keeps the handlers it has.
        if threading.current_thread() is not threading.main_thread():
            try:
                yield
            finally:
                self.finished.set()
            return
        _WORK_BEGAN.set()
        previous = {sig: signal.signal(sig, self.handle) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            self.finished.set()
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@contextmanager
def cancelling_spark_jobs(spark: SparkSession, job: str, stopping: str) -> Iterator[StopSignals]:
    """Within the block, the first stop signal cancels the session's Spark jobs, and the
    error the block then raises (the cancelled job's, or any other) ends the block
    quietly: the caller reads ``signal_name`` and reports the stop. For one-shot work
    whose writes commit at its end, such as a bounded ingest: a cancelled run commits
    nothing it has not committed already.

    Example:
        >>> with cancelling_spark_jobs(spark, "ingest", "cancelling its Spark jobs") as signals:
        ...     land()
        >>> summary.stopped_by = signals.signal_name
    """
    signals = StopSignals(job, stopping, on_stop=cancel_spark_jobs(spark))
    with signals.installed():
        try:
            yield signals
        except Exception:
            if signals.signal_name is None:
                raise


def cancel_spark_jobs(spark: SparkSession) -> Callable[[StopSignals], None]:
    """A stop action that cancels every Spark job of the session, then again every
    :data:`CANCEL_EVERY_SECONDS` until the run's signal handling ends: a job the run
    starts after the stop (the signal came between two) is cancelled too. Quietly: once
    a stop is asked for, the cancelled jobs' own log lines (Delta logs a stack trace per
    aborted write) say nothing the job's stop line does not.

    Example:
        >>> StopSignals("check", "cancelling its Spark jobs", on_stop=cancel_spark_jobs(spark))
    """

    def cancel(signals: StopSignals) -> None:
        from eventlake.spark.conf import SESSION_LOG_LEVEL

        spark.sparkContext.setLogLevel("OFF")
        while True:
            spark.sparkContext.cancelAllJobs()
            if signals.finished.wait(CANCEL_EVERY_SECONDS):
                # The run is over: a session that goes on (a test, a library caller) logs
                # as before.
                spark.sparkContext.setLogLevel(SESSION_LOG_LEVEL)
                return

    return cancel


#: How often a stopped run's Spark jobs are cancelled again.
CANCEL_EVERY_SECONDS: Final = 0.5


def run_bounded(
    spark: SparkSession,
    job: str,
    summary: RunSummary,
    work: Callable[[StopSignals], None],
    *,
    next_run: str,
) -> None:
    """Run a bounded run's ``work`` (its reads, writes and commits, counted into
    ``summary``) with :func:`cancelling_spark_jobs`; a stop sets ``summary.stopped_by``
    and prints what the next run does (``next_run``).

    Example:
        >>> run_bounded(spark, "ingest", summary, land_range, next_run="lands the rest")
    """
    with cancelling_spark_jobs(
        spark, job, "cancelling the bounded run's Spark jobs; what it committed stays"
    ) as signals:
        work(signals)
    if signals.signal_name is not None:
        summary.stopped_by = signals.signal_name
        _log.info(f"{job}: stopped by {signals.signal_name}; the next run {next_run}")
