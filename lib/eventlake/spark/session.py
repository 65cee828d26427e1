"""The one place that builds a SparkSession: Delta, the jar set, small-machine defaults.

Jars come from a project folder filled by Maven (``make jars``) and are handed to
Spark by path, so a job start never downloads anything.

Example:
    >>> from eventlake.core.settings import load_settings
    >>> from eventlake.spark.session import build_spark_session
    >>> spark = build_spark_session(load_settings(), app_name="eventlake-ingest")"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from pyspark.sql import SparkSession

from eventlake.core.driver_work import DriverWork
from eventlake.core.settings import Settings
from eventlake.spark.auth import driver_secret_conf
from eventlake.spark.conf import (
    SESSION_LOG_LEVEL,
    MasterRefusedError,
    driver_on_loopback,
    is_cluster_master,
    spark_conf,
)
from eventlake.spark.s3a import s3a_secret_conf


def build_spark_session(
    settings: Settings,
    *,
    app_name: str = "eventlake",
    ui: bool = False,
    work: DriverWork = DriverWork.GENERAL,
) -> SparkSession:
    """A SparkSession with Delta Lake and Spark's Kafka connector, configured from settings
    (:func:`spark_conf`; ``work``: what the driver does, :class:`DriverWork`).

    When a session already runs in this process (a test session, a spark-submit driver),
    it is returned as-is: Spark allows one per JVM.
    """
    from pyspark import SparkConf, SparkContext

    submitted = SparkConf()
    # One conf for the context started below and the session on it.
    context_conf = SparkConf().setAppName(app_name)
    if submitted.contains("spark.master"):
        # Under spark-submit, --master (e.g. from Airflow's spark_default connection)
        # wins, and the conf follows the master the job really runs on.
        settings = settings.model_copy(update={"spark_master": submitted.get("spark.master")})
    else:
        context_conf.setMaster(settings.spark_master)
    if driver_on_loopback(settings.spark_master):
        # Read by the JVM at start-up, before any Spark conf applies.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The secrets reach the driver's JVM through py4j: no command line, and the UI
    # redacts them (spark.redaction.regex).
    conf = {
        **spark_conf(settings, ui=ui, work=work),
        **driver_secret_conf(settings),
        **s3a_secret_conf(settings),
    }
    context_conf.setAll(list(conf.items()))
    # PySpark sets a SIGINT handler of its own as the last step of starting a context,
    # which calls the JVM from the main thread, maybe inside a call to it already (a
    # traceback instead of a stop): the context is started here, and eventlake's stop
    # handling (eventlake.runs.stop_signals) put back at once, before the session's start.
    on_main_thread = threading.current_thread() is threading.main_thread()
    sigint_handler = signal.getsignal(signal.SIGINT) if on_main_thread else None
    try:
        try:
            SparkContext.getOrCreate(context_conf)
        finally:
            if sigint_handler is not None:
                signal.signal(signal.SIGINT, sigint_handler)
        spark = SparkSession.builder.config(conf=context_conf).getOrCreate()
    except Exception as error:
        # The standalone client gives up after three registrations of 20 s each and
        # stops the context it was building.
        if is_cluster_master(settings.spark_master) and "stopped SparkContext" in str(error):
            raise MasterRefusedError(
                f"The Spark master {settings.spark_master} did not accept this application "
                "within a minute: it is down, or it authenticates with another secret than "
                "this job's (EVENTLAKE_SPARK_AUTH_SECRET, or in Airflow the spark_default "
                "connection's password). The driver's log says which."
            ) from error
        raise
    spark.sparkContext.setLogLevel(SESSION_LOG_LEVEL)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # This process started the JVM (under spark-submit the JVM started this process,
        # and PySpark tells it the gateway's port in this variable).
        ignore_sigterm_in_jvm(spark)
    return spark


def ignore_sigterm_in_jvm(spark: SparkSession) -> None:
    """Have the driver's JVM that this process started ignore SIGTERM, as PySpark has it
    ignore SIGINT, so that a job's own stop (:mod:`eventlake.runs.stop_signals`: finish the
    batch, print the summary, exit 0) also holds when SIGTERM goes to the whole process
    group: ``timeout``, systemd stopping a service, ``kill -TERM -<pgid>``. Without this the
    JVM shut down at once under the job, which then failed with a py4j traceback.

    The JVM still ends with this process: PySpark's gateway exits when its standard input,
    a pipe from this process, closes (also after SIGKILL). A JDK API outside Java's
    standard (``sun.misc.Signal``, module jdk.unsupported), listed in
    :data:`eventlake.core.engine_internals.INTERNALS` with its test.

    Example:
        >>> ignore_sigterm_in_jvm(spark)  # os.killpg(os.getpgid(0), SIGTERM): the job stops
    """
    # Idempotent: a second session of the same JVM sets the same disposition again.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    ignore = jvm.java.lang.Class.forName("sun.misc.SignalHandler").getField("SIG_IGN").get(None)
    jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal("TERM"), ignore)


#: The driver's loggers that report a failed task with its stack trace: the executor's
#: "Exception in task" (a local master runs the tasks in the driver's JVM) and the
#: scheduler's "Lost task" and "aborting job".
TASK_FAILURE_LOGGERS: Final = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
)


@contextmanager
def task_failures_unlogged(spark: SparkSession) -> Iterator[None]:
    """Keep the driver's JVM from logging failed tasks in the block, for work whose
    failure the command reports itself in a sentence (``eventlake query``: SQL that fails
    on a row, such as a cast, would otherwise print Java stack traces above the one line
    that says it). Log4j 2's public ``Configurator``; the levels are restored after.

    Example:
        >>> with task_failures_unlogged(spark):
        ...     spark.sql("SELECT raise_error(id) FROM events").collect()  # raises, logs nothing
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log4j = jvm.org.apache.logging.log4j
    configurator = log4j.core.config.Configurator
    previous = {name: log4j.LogManager.getLogger(name).getLevel() for name in TASK_FAILURE_LOGGERS}
    for name in TASK_FAILURE_LOGGERS:
        configurator.setLevel(name, log4j.Level.OFF)
    try:
        yield
    finally:
        for name, level in previous.items():
            configurator.setLevel(name, level)


@contextmanager
def session_conf(spark: SparkSession, overrides: Mapping[str, str]) -> Iterator[None]:
    """Set Spark session confs for the block only; restore the previous values after
    (unset those that had none), also when the block fails.

    Example:
        >>> with session_conf(spark, {"spark.databricks.delta.write.txnVersion": "7"}):
        ...     table.merge(...).execute()
    """
    previous = {key: spark.conf.get(key, None) for key in overrides}
    for key, value in overrides.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
