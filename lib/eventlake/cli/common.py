"""What every ``eventlake`` command shares: the app, the common options, settings, errors,
and how a job command runs (:func:`run_job`, with :func:`refused` for exit 2).

Example:
    >>> from eventlake.cli.common import app, fail
"""

from __future__ import annotations

import gc
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from eventlake.core.driver_work import DriverWork
from eventlake.core.errors import REFUSED_EXIT_CODE, EventlakeError, Refused, TryAgainLater
from eventlake.core.settings import Settings, load_settings
from eventlake.core.topic_names import InvalidTopicNameError, check_topic_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT")


def prose(text: str | None) -> str | None:
    """Help text as prose: each paragraph (blank-line separated) on one line, so that
    the line breaks of a docstring never show mid-sentence in ``--help``; the terminal
    wraps it.

    Example:
        >>> prose("Keep the latest record per\n    key.\n\n    Exit 1 on failure.")
        'Keep the latest record per key.\n\nExit 1 on failure.'
    """
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


app = typer.Typer(
    help="eventlake: land CloudEvents from Kafka in Delta Lake tables.\n\n"
    "A command that refuses to run prints one 'error:' line and exits 2 when running it "
    "again would not help, 75 when a later run may pass (Kafka does not answer, a lease "
    "is held).",
    no_args_is_help=True,
    add_completion=False,
)

BootstrapOption = Annotated[
    str | None,
    typer.Option(help="Kafka bootstrap servers (default: EVENTLAKE_BOOTSTRAP_SERVERS)."),
]
#: A string, not a Path: a path would fold a URI's ``//`` (``s3a://b`` -> ``s3a:/b``).
WarehouseOption = Annotated[
    str | None, typer.Option(help="Warehouse folder (default: EVENTLAKE_WAREHOUSE).")
]
#: ``--trigger`` of the streaming jobs (ingest, republish), declared once so that their
#: help cannot drift apart; each command gives the default ("available-now").
TriggerOption = Annotated[
    str,
    typer.Option(
        help="'available-now' (read what is there, then stop) or "
        "'processing-time=<interval>' (run until stopped)."
    ),
]

TopicNames = TypeVar("TopicNames", str, list[str], None)


def _checked_topic_names(names: TopicNames) -> TopicNames:
    """``--topic``'s check, run as its value is parsed: a name Kafka refuses exits 2 with
    a sentence before the command runs (before Spark starts or Kafka is asked)."""
    given: list[str] = [names] if isinstance(names, str) else list(names or ())
    for name in given:
        try:
            check_topic_name(name, "--topic")
        except InvalidTopicNameError as error:
            fail(str(error), code=REFUSED_EXIT_CODE)
    return names


def topic_option(help: str) -> Any:
    """The ``--topic`` option of a command (one or repeatable, per its annotation), with
    the names checked in one place for every command.

    Example:
        >>> def reconcile(topic: Annotated[str, topic_option("Topic to rebuild.")]) -> None: ...
    """
    return typer.Option("--topic", help=help, callback=_checked_topic_names)


def import_in_background(module: str) -> threading.Thread:
    """Start importing ``module`` on a daemon thread, so that a slow import overlaps the
    Spark session's start (the JVM's launch leaves the Python process waiting); a later
    import of it in the job waits for this one, and raises what it raised. Returns the
    thread. Import what the job itself needs of the same packages first (pyspark): a
    package imported by two threads at once can be seen half-initialized by one of them.

    Example:
        >>> import_in_background("eventlake.quality.run")  # GX: ~2.5 s of imports
    """

    def load() -> None:
        # A failure is reported by the job's own import of the module, once.
        with suppress(Exception):
            importlib.import_module(module)

    thread = threading.Thread(target=load, name=f"import {module}", daemon=True)
    thread.start()
    return thread


def leave_without_collecting() -> None:
    """Let the process end without Python collecting its objects one by one: the
    operating system frees them at once. Only for a process about to exit (an entry
    point's last step): collection stays off for the rest of the process.

    Why: with Great Expectations, pydantic and pyspark loaded, the garbage collector's
    passes over every object at interpreter shutdown took ~1.1 s of ``eventlake check``'s
    exit (docs/benchmarks.md).

    Example:
        >>> try:
        ...     main()
        ... finally:
        ...     leave_without_collecting()
    """
    gc.disable()
    gc.freeze()


def job_settings(bootstrap_servers: str | None = None, warehouse: str | None = None) -> Settings:
    """The settings with a command's ``--bootstrap-servers`` and ``--warehouse`` applied.

    Example:
        >>> job_settings(warehouse="/tmp/lake").warehouse
        Location('/tmp/lake')
    """
    return load_settings(bootstrap_servers=bootstrap_servers, warehouse=warehouse)


def run_job(
    settings: Settings,
    app_name: str,
    job: Callable[[SparkSession, Settings, RequestT], ResultT],
    request: RequestT,
    *,
    work: DriverWork = DriverWork.GENERAL,
    after_stop: str | None = None,
) -> ResultT:
    """Start the Spark session ``app_name`` and return ``job(spark, settings, request)``;
    ``work``: what the driver does (:class:`eventlake.core.driver_work.DriverWork`), which
    sizes its memory and JVM. With ``after_stop`` (what a stopped run leaves, and what
    to do), SIGTERM or SIGINT cancels the job's Spark jobs, and the command says so and
    exits 0 (:func:`eventlake.runs.stop_signals.cancelling_spark_jobs`); jobs that handle the
    signals themselves (streams) pass none.

    Example:
        >>> run_job(settings, "eventlake-reconcile", reconcile_state, "customers").line()
        'reconcile customers: read=12 keys=5 inserted=5 updated=0 deleted=0'
    """
    # Imported on call so that commands that start no Spark (status, --help) load no pyspark.
    from eventlake.spark.session import build_spark_session

    spark = build_spark_session(settings, app_name=app_name, work=work)
    if after_stop is None:
        return job(spark, settings, request)
    with stopped_with_a_line(spark, app_name.removeprefix("eventlake-"), after_stop):
        return job(spark, settings, request)
    raise AssertionError("stopped_with_a_line exits when it ends the block early")


@contextmanager
def stopped_with_a_line(spark: SparkSession, name: str, after_stop: str) -> Iterator[None]:
    """Within the block, SIGTERM or SIGINT cancels the command's Spark jobs
    (:func:`eventlake.runs.stop_signals.cancelling_spark_jobs`); a block they end prints
    ``<name>: stopped by <signal>; <after_stop>`` and the command exits 0. A block that
    finishes anyway (the signal came after its last Spark job) goes on as usual.

    Example:
        >>> with stopped_with_a_line(spark, "query", "nothing was changed"):
        ...     text = run_query(spark, sql)
    """
    from eventlake.runs.stop_signals import cancelling_spark_jobs

    finished = False
    with cancelling_spark_jobs(spark, name, "cancelling its Spark jobs") as signals:
        yield
        finished = True
    if not finished:
        typer.echo(f"{name}: stopped by {signals.signal_name}; {after_stop}")
        raise typer.Exit(0)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: <message>`` in red on stderr and exit with ``code``.

    Example:
        >>> fail("no Delta tables", code=REFUSED_EXIT_CODE)
    """
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


@contextmanager
def refused(*also: type[Exception]) -> Iterator[None]:
    """Turn a refusal raised in the block into ``error: <message>`` and its exit code: 2
    for a :class:`~eventlake.core.errors.Refused` (bad arguments, a checkpoint of another
    run, no jars), 75 for a :class:`~eventlake.core.errors.TryAgainLater` (no broker, a
    held lease: a later run may succeed). ``also``: other errors to treat as refusals
    (exit 2). A refusal deserves a one-line reason, not a traceback.

    Example:
        >>> with refused(ValueError):
        ...     int("ten")  # prints "error: invalid literal ..." and exits 2
    """
    caught: tuple[type[Exception], ...] = (Refused, TryAgainLater, *also)
    try:
        yield
    except caught as error:
        code = error.exit_code if isinstance(error, EventlakeError) else REFUSED_EXIT_CODE
        fail(str(error), code=code)
