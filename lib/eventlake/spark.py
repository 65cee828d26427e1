"""The one place that builds a SparkSession: Delta, the jar set, small-machine defaults.

Jars come from a project folder filled by Maven (``make jars``) and are handed to
Spark by path, so a job start never downloads anything.

Example:
    >>> from eventlake.settings import load_settings
    >>> from eventlake.spark import build_spark_session
    >>> spark = build_spark_session(load_settings(), app_name="eventlake-ingest")
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, StructType

from eventlake.class_archive import archive_java_option, dump_java_option
from eventlake.driver_work import DriverWork
from eventlake.settings import Settings
from eventlake.spark_auth import SparkAuthError, auth_conf, driver_secret_conf

#: eventlake's jars (lib/jvm), by the prefix of their file names: the Spark functions and
#: the ledger; the local file system of :data:`FORKLESS_LOCAL_FILES`.
EVENTLAKE_JAR: Final = "eventlake-cloudevents-"
HADOOP_JAR: Final = "eventlake-hadoop-"
#: Jars that must be present; prefixes of file names in the jars folder.
REQUIRED_JARS = (
    "spark-sql-kafka-0-10_",
    "delta-spark_",
    "delta-storage-",
    "kafka-clients-",
    EVENTLAKE_JAR,
    HADOOP_JAR,
)
#: Session extensions: Delta's SQL, and eventlake's own functions (lib/jvm), among them
#: ``cloudevents_from_kafka``, the binding's decoder.
SQL_EXTENSIONS = (
    "io.delta.sql.DeltaSparkSessionExtension",
    "io.eventlake.cloudevents.EventlakeExtensions",
)


#: Host names of this machine's loopback interface.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class SparkSetupError(RuntimeError):
    """No session can be built as configured; the message says what to change."""


class MissingJarsError(SparkSetupError):
    """The Kafka connector or Delta jars are not where the settings point."""


class MasterRefusedError(SparkSetupError):
    """The standalone master did not take the application (down, or another secret)."""


#: Raised when the session cannot be built as configured (a sentence, no traceback).
SETUP_ERRORS = (SparkSetupError, SparkAuthError)


def spark_jars(settings: Settings) -> list[Path]:
    """The jar files Spark needs beside the pyspark wheel, checked for completeness.

    Example:
        >>> [p.name for p in spark_jars(load_settings())][:1]
        ['commons-pool2-2.12.1.jar']
    """
    folder = settings.jars_dir
    jars = sorted(folder.glob("*.jar")) if folder.is_dir() else []
    names = [jar.name for jar in jars]
    missing = [prefix for prefix in REQUIRED_JARS if not any(n.startswith(prefix) for n in names)]
    if missing:
        raise MissingJarsError(
            f"Spark jars missing in {folder}: {', '.join(p + '*' for p in missing)}. "
            "Run `make jars` (Maven fetches them once and builds lib/jvm), "
            "or point EVENTLAKE_JARS_DIR at the folder."
        )
    return jars


def is_local_master(master: str) -> bool:
    """True for a local master (``local``, ``local[2]``, ``local[*]``): the tasks run in
    the driver's own JVM, on this machine.

    Example:
        >>> is_local_master("local[2]"), is_local_master("spark://127.0.0.1:7077")
        (True, False)
    """
    return master.startswith("local")


def is_cluster_master(master: str) -> bool:
    """True for a Spark standalone master (``spark://host:port``), whose executors run in
    workers' JVMs rather than in the driver.

    Example:
        >>> is_cluster_master("spark://127.0.0.1:7077"), is_cluster_master("local[2]")
        (True, False)
    """
    return master.startswith("spark://")


def driver_on_loopback(master: str) -> bool:
    """True when the driver only ever talks to this machine: a local master, or a
    standalone master on the loopback (every worker of it is then local too).

    Example:
        >>> driver_on_loopback("spark://127.0.0.1:7077"), driver_on_loopback("spark://m:7077")
        (True, False)
    """
    if is_local_master(master):
        return True
    if not is_cluster_master(master):
        return False
    hosts = [address.rsplit(":", 1)[0] for address in master.removeprefix("spark://").split(",")]
    return all(host in LOOPBACK_HOSTS for host in hosts)


def cluster_conf(settings: Settings) -> dict[str, str]:
    """What a job on a standalone cluster needs besides :func:`spark_conf`'s common part:
    executor size and count, the Python and logging of the executors, and RPC
    authentication and encryption (:func:`eventlake.spark_auth.auth_conf`; the secret
    itself only in :func:`build_spark_session`).

    Jars need nothing here: ``spark.jars`` holds local paths, which the driver serves to
    every executor (fetched from the driver into the executor's work dir, never from a
    repository: no ``spark.jars.packages``).

    Example:
        >>> cluster_conf(load_settings(executor_cores=1))["spark.executor.cores"]
        '1'
    """
    conf = {
        "spark.executor.memory": settings.executor_memory,
        "spark.executor.cores": str(settings.executor_cores),
        # Python workers on executors (none today: no Python UDF in the data path) would
        # run the driver's interpreter, whose packages match the driver's.
        "spark.pyspark.python": sys.executable,
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile={settings.log_config}",
    }
    if settings.cores_max is not None:
        conf["spark.cores.max"] = str(settings.cores_max)
    conf.update(auth_conf(settings))
    return conf


#: The log level of eventlake's Spark sessions (Spark's own INFO lines are for debugging).
SESSION_LOG_LEVEL: Final = "WARN"
#: The throughput collector suits a batch's short-lived garbage, on any machine.
DRIVER_GC: Final = "-XX:+UseParallelGC"
#: The JDK keeps, per thread, the temporary direct buffer of its largest socket read
#: into a heap buffer (the Kafka consumer's fetches: megabytes each) for good; above
#: 1 MiB it now frees it after the read. ``ingest --state`` of a 5M keyed topic with a
#: 768m driver: peak 1.37-1.40 GB against 1.45-1.53 GB, in the same seconds.
NIO_BUFFER_CACHE: Final = "-Djdk.nio.maxCachedBufferSize=1048576"
#: Shallower inlining: less work for the C2 compiler thread, which on a small machine
#: competes with the tasks in the driver's own JVM (a local master). Measured on 2
#: cores: eventlake ingest of 1M events 25.8 -> 22.8 s, of 3M 41.5 -> 36.6 s. A
#: cluster's driver runs no tasks; a larger machine has cores to spare for C2.
SMALL_MACHINE_JIT: Final = "-XX:MaxInlineLevel=5 -XX:InlineSmallCode=500"
#: At most this many cores is a small machine.
SMALL_MACHINE_CORES: Final = 4
#: The young generation of a landing's driver on a local master (where the driver's JVM
#: runs the tasks), fixed: ParallelGC grows it to a third of the heap (683 MiB of 2 GiB)
#: and the old generation beside it, while a landing's garbage dies young. Ingest of 5M
#: events on 2 cores, 2 GiB driver: peak RSS 1.42-1.49 GB against 1.78-1.88 GB, for ~5%
#: more seconds. A cap instead (``-XX:MaxNewSize=480m``) cost no seconds but peaked at
#: 1.50-1.66 GB. Only for landings: ``ingest --state`` was 8-24% slower with it (and
#: still over 1.5 GB), the quality check no smaller (docs/benchmarks.md).
LANDING_YOUNG_GENERATION: Final = "-Xmn480m"
#: Below this driver memory ParallelGC's young generation (at most a third of the heap)
#: is about :data:`LANDING_YOUNG_GENERATION` or less: nothing to fix.
LANDING_YOUNG_GENERATION_FROM_MIB: Final = 1536


def memory_mib(text: str) -> int | None:
    """A driver memory as Spark reads ``spark.driver.memory`` (``2g``, ``1536m``,
    ``524288k``; a bare number is MiB) in MiB; None when it is not one.

    Example:
        >>> memory_mib("2g"), memory_mib("1536m"), memory_mib("lots")
        (2048, 1536, None)
    """
    match = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", text.lower())
    if match is None:
        return None
    exponent = {"k": -1, "": 0, "m": 0, "g": 1, "t": 2}[match[2]]
    return int(int(match[1]) * 1024.0**exponent)


def driver_memory(settings: Settings, work: DriverWork = DriverWork.GENERAL) -> str:
    """The driver memory of a job (``spark.driver.memory``): the quality check's own
    setting for :attr:`DriverWork.CHECKING`, ``settings.driver_memory`` otherwise.

    Example:
        >>> driver_memory(load_settings()), driver_memory(load_settings(), DriverWork.CHECKING)
        ('2g', '768m')
    """
    if work is DriverWork.CHECKING:
        return settings.quality_driver_memory
    return settings.driver_memory


#: Hadoop's ``file:`` file systems without a process per call (lib/jvm,
#: ``io.eventlake.hadoop``): without Hadoop's native library, its local file system runs
#: ``chmod`` for each file ``FileContext`` creates and ``readlink`` for each rename, a fork of
#: the driver's JVM each; Spark's offset and commit logs and Delta's log store create and
#: rename a file per write. Measured: 64-76 ms per ``FileContext`` create-and-rename
#: against 15-20 ms (docs/benchmarks.md). For a local master only (:func:`local_files_conf`):
#: a cluster's executors keep Hadoop's own.
FORKLESS_LOCAL_FILES: Final = {
    "spark.hadoop.fs.file.impl": "io.eventlake.hadoop.ForklessLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "io.eventlake.hadoop.ForklessLocalFs",
}


def local_files_conf(jars: list[Path]) -> dict[str, str]:
    """The conf that gives a local master's JVM :data:`FORKLESS_LOCAL_FILES`: those, and
    their jar (:data:`HADOOP_JAR`, Hadoop's API alone) on the driver's class path: Spark
    reads local files before it loads ``spark.jars``, and Hadoop looks the classes up then.

    Example:
        >>> local_files_conf([Path("j/eventlake-hadoop-0.1.0.jar")])["spark.driver.extraClassPath"]
        'j/eventlake-hadoop-0.1.0.jar'
    """
    ours = [str(jar) for jar in jars if jar.name.startswith(HADOOP_JAR)]
    return {"spark.driver.extraClassPath": ":".join(ours), **FORKLESS_LOCAL_FILES}


def driver_jvm_options(
    settings: Settings, cores: int | None = None, *, work: DriverWork = DriverWork.GENERAL
) -> str:
    """The Spark driver's GC, memory and JIT options: ``settings.driver_java_options``
    when set, else :data:`DRIVER_GC` and :data:`NIO_BUFFER_CACHE`, plus
    :data:`SMALL_MACHINE_JIT` for a local master on at most :data:`SMALL_MACHINE_CORES`
    cores (``cores``: this machine's by default), plus :data:`LANDING_YOUNG_GENERATION`
    for :attr:`DriverWork.LANDING` on a local master with a driver memory of
    :data:`LANDING_YOUNG_GENERATION_FROM_MIB` or more.

    Example:
        >>> driver_jvm_options(load_settings(spark_master="local[*]"), cores=2)
        '-XX:+UseParallelGC -Djdk.nio.maxCachedBufferSize=1048576 -XX:MaxInlineLevel=5 ...'
        >>> local = load_settings(spark_master="local[*]")
        >>> driver_jvm_options(local, cores=16, work=DriverWork.LANDING)
        '-XX:+UseParallelGC -Djdk.nio.maxCachedBufferSize=1048576 -Xmn480m'
        >>> driver_jvm_options(load_settings(spark_master="spark://10.0.0.5:7077"), cores=2)
        '-XX:+UseParallelGC -Djdk.nio.maxCachedBufferSize=1048576'
    """
    if settings.driver_java_options is not None:
        return settings.driver_java_options
    machine = cores if cores is not None else (os.cpu_count() or 1)
    local = is_local_master(settings.spark_master)
    options = [DRIVER_GC, NIO_BUFFER_CACHE]
    if local and machine <= SMALL_MACHINE_CORES:
        options.append(SMALL_MACHINE_JIT)
    driver_mib = memory_mib(driver_memory(settings, work)) or 0
    if work is DriverWork.LANDING and local and driver_mib >= LANDING_YOUNG_GENERATION_FROM_MIB:
        options.append(LANDING_YOUNG_GENERATION)
    return " ".join(options)


def spark_conf(
    settings: Settings, *, ui: bool = False, work: DriverWork = DriverWork.GENERAL
) -> dict[str, str]:
    """The Spark configuration eventlake runs with, also used to build spark-submit calls.

    Keyed off ``settings.spark_master``: a cluster master adds :func:`cluster_conf`; a
    master on the loopback keeps the driver's ports there. The driver serves the Spark UI
    when ``ui`` is true (on Spark's default port) or ``settings.spark_ui_port`` is set (on
    that port). ``work``: what the driver does, which sizes its memory and JVM
    (:func:`driver_memory`, :func:`driver_jvm_options`).

    Example:
        >>> spark_conf(load_settings(spark_master="local[2]"))["spark.driver.host"]
        '127.0.0.1'
        >>> spark_conf(load_settings(spark_ui_port=4050))["spark.ui.port"]
        '4050'
    """
    ui = ui or settings.spark_ui_port is not None
    jars = spark_jars(settings)
    conf = {
        "spark.jars": ",".join(str(jar) for jar in jars),
        "spark.sql.extensions": ",".join(SQL_EXTENSIONS),
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.driver.memory": driver_memory(settings, work),
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        # Delta rebuilds its snapshot with 50 tasks by default: far too many for 2 cores.
        "spark.databricks.delta.snapshotPartitions": str(settings.shuffle_partitions),
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Spark's default, INT96, is read as nanoseconds by delta-rs and pyarrow, which
        # only reach years 1677-2262: delta-rs refuses a table with a time outside, and
        # pyarrow returns wrong dates. Microseconds are Spark's own precision and range.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # The Kafka options carry SASL credentials inside sasl.jaas.config: redact it
        # wherever Spark prints options or plans.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas",
        # Keep the Derby metastore and spark-warehouse out of the working directory.
        "spark.sql.warehouse.dir": str(settings.warehouse / "_spark_sql"),
        "spark.driver.extraJavaOptions": " ".join(
            option
            for option in (
                f"-Dderby.system.home={settings.warehouse / '_derby'}",
                f"-Dlog4j2.configurationFile={settings.log_config}",
                driver_jvm_options(settings, work=work),
                archive_java_option(settings.class_archive, jars) or dump_java_option(),
            )
            if option
        ),
    }
    if settings.spark_ui_port is not None:
        conf["spark.ui.port"] = str(settings.spark_ui_port)
    if driver_on_loopback(settings.spark_master):
        # A driver that serves only this machine (its executors too) keeps its ports on
        # the loopback, and tells the executors to reach it there.
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if is_local_master(settings.spark_master):
        conf.update(local_files_conf(jars))
    if is_cluster_master(settings.spark_master):
        conf.update(cluster_conf(settings))
    return conf


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
    # The secret reaches the driver's JVM through py4j: no command line, and the UI
    # redacts it (spark.redaction.regex).
    conf = {**spark_conf(settings, ui=ui, work=work), **driver_secret_conf(settings)}
    context_conf.setAll(list(conf.items()))
    # PySpark sets a SIGINT handler of its own as the last step of starting a context,
    # which calls the JVM from the main thread, maybe inside a call to it already (a
    # traceback instead of a stop): the context is started here, and eventlake's stop
    # handling (eventlake.stop_signals) put back at once, before the session's start.
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
    ignore SIGINT, so that a job's own stop (:mod:`eventlake.stop_signals`: finish the
    batch, print the summary, exit 0) also holds when SIGTERM goes to the whole process
    group: ``timeout``, systemd stopping a service, ``kill -TERM -<pgid>``. Without this the
    JVM shut down at once under the job, which then failed with a py4j traceback.

    The JVM still ends with this process: PySpark's gateway exits when its standard input,
    a pipe from this process, closes (also after SIGKILL). A JDK API outside Java's
    standard (``sun.misc.Signal``, module jdk.unsupported), listed in
    :data:`eventlake.engine_versions.SPARK_INTERNALS` with its test.

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


def plain_row(value: Any, data_type: DataType) -> Any:
    """``value`` as Arrow reads a value of ``data_type``: structs given as tuples become dicts.

    Example:
        >>> plain_row(("orders", 3), StructType([...]))
        {'topic': 'orders', 'n': 3}
    """
    if value is None:
        return None
    if isinstance(data_type, StructType):
        fields = (
            value if isinstance(value, Mapping) else dict(zip(data_type.names, value, strict=True))
        )
        return {f.name: plain_row(fields.get(f.name), f.dataType) for f in data_type}
    if isinstance(data_type, ArrayType):
        return [plain_row(item, data_type.elementType) for item in value]
    return value


def local_rows(
    spark: SparkSession, rows: Sequence[Mapping[str, Any] | Sequence[Any]], schema: StructType
) -> DataFrame:
    """A frame of a few rows held by the driver (tuples or dicts in ``schema``'s order),
    handed to the JVM as one Arrow table: ``createDataFrame`` of a Python list starts
    Python workers on the executors to unpickle it (~1-3 s on this 2-core machine), and
    building the rows from Column literals costs a py4j call per value (1.8 s for the 21
    rows of a quality run's results).

    Example:
        >>> local_rows(spark, [("orders", 3)], StructType([...])).collect()
        [Row(topic='orders', n=3)]
    """
    if not rows:
        return spark.range(0).select(F.inline(F.array().cast(ArrayType(schema))))
    import pyarrow as pa  # only the quality check's results need it; ingest never does

    table = pa.Table.from_pylist([plain_row(row, schema) for row in rows])
    # Spark casts the inferred Arrow types (nulls, int64) to the schema's.
    return spark.createDataFrame(table, schema)


def computed_once(rows: DataFrame, *, on_disk: bool = False) -> DataFrame:
    """``rows`` computed now, in one Spark job, and held (memory, then local disk; with
    ``on_disk``, serialized on local disk only); every later read takes the held rows.
    Free them with :func:`release`.

    A local checkpoint, not ``persist``: building Spark's columnar cache of a batch of
    ~1 KB events cost more than the batch's decode (GC of the growing column buffers),
    and a checkpointed plan is a plain scan that Delta can plan again as it likes.
    ``on_disk`` is for rows larger than the driver's memory (a whole batch): they
    are written once as serialized blocks, and the JVM's heap does not hold them.

    Example:
        >>> held = computed_once(decode_records(batch), on_disk=True)
        >>> held.where("reject_reason IS NULL").count()
        >>> release(held)
    """
    if on_disk:
        return rows.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    return rows.localCheckpoint(eager=True)


def release(held: DataFrame) -> None:
    """Free the rows :func:`computed_once` held for ``held`` (or for the frames it was
    derived from) now rather than when the JVM collects them; none of those frames can
    be read after this.

    Example:
        >>> release(held.where("kafka_offset > 10"))
    """
    # A checkpointed frame's plan is a LogicalRDD over the RDD whose blocks hold the
    # rows; a derived frame has it among its leaves. A Spark internal
    # (eventlake.engine_versions lists it with its test).
    leaves = held._jdf.queryExecution().analyzed().collectLeaves()
    for index in range(leaves.size()):
        leaf = leaves.apply(index)
        if leaf.getClass().getSimpleName() == "LogicalRDD":
            leaf.rdd().unpersist(True)
