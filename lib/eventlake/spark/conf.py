"""The Spark conf of every eventlake driver, from the settings: jars, Delta, the
driver's JVM (memory, GC, the class archive), a cluster's executors and RPC security.
No pyspark: the DAGs build spark-submit's arguments from it.

Example:
    >>> spark_conf(load_settings())["spark.sql.extensions"]
    'io.delta.sql.DeltaSparkSessionExtension'
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Final

from eventlake.core.driver_work import DriverWork
from eventlake.core.errors import Refused
from eventlake.core.locations import Location, LocationLike
from eventlake.core.settings import Settings
from eventlake.spark.auth import auth_conf
from eventlake.spark.class_archive import archive_java_option, dump_java_option
from eventlake.spark.s3a import s3a_conf

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


class SparkSetupError(Refused, RuntimeError):
    """No session can be built as configured; the message says what to change."""


class MissingJarsError(SparkSetupError):
    """The Kafka connector or Delta jars are not where the settings point."""


class MasterRefusedError(SparkSetupError):
    """The standalone master did not take the application (down, or another secret)."""


#: Raised when the session cannot be built as configured (a sentence, no traceback).


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
    authentication and encryption (:func:`eventlake.spark.auth.auth_conf`; the secret
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


def derby_home(settings: Settings) -> Path:
    """Where Spark's embedded Derby metastore keeps its files: in a local warehouse, else
    in this machine's temporary folder (Derby writes local files only).

    Example:
        >>> derby_home(load_settings(warehouse="/srv/wh"))
        PosixPath('/srv/wh/_derby')
    """
    warehouse = Location.of(settings.warehouse)
    if warehouse.is_local:
        return warehouse.local() / "_derby"
    return Path(tempfile.gettempdir()) / "eventlake-derby"


def spark_sql_warehouse(settings: Settings) -> LocationLike:
    """Spark's own warehouse folder (managed tables, a new schema's default location; the
    tables eventlake writes are elsewhere): in the warehouse, but for a warehouse on an
    object store with a metastore, a local folder. The metastore makes a schema's folder
    itself, and one that cannot reach the object store (Hive's 2.3 without S3A) refuses
    a schema there.

    Example:
        >>> spark_sql_warehouse(load_settings(warehouse="/srv/wh"))
        Location('/srv/wh/_spark_sql')
    """
    warehouse = Location.of(settings.warehouse)
    if settings.metastore_uri and not warehouse.is_local:
        return (Path(tempfile.gettempdir()) / "eventlake-spark-sql").as_uri()
    return warehouse / "_spark_sql"


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
        # A VARIANT column (events' data_json) as the plain group of two binaries Delta's
        # schema describes, without Parquet's new VARIANT annotation (Spark 4.1's
        # default): Trino 476 cannot parse a footer with it and fails on every file of
        # the table, whatever the columns read. Spark and delta-rs read both alike.
        "spark.sql.parquet.variant.annotateLogicalType.enabled": "false",
        # The Kafka options carry SASL credentials inside sasl.jaas.config: redact it
        # wherever Spark prints options or plans.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas",
        # Keep the Derby metastore and spark-warehouse out of the working directory.
        "spark.sql.warehouse.dir": str(spark_sql_warehouse(settings)),
        **s3a_conf(settings),
        "spark.driver.extraJavaOptions": " ".join(
            option
            for option in (
                f"-Dderby.system.home={derby_home(settings)}",
                f"-Dlog4j2.configurationFile={settings.log_config}",
                driver_jvm_options(settings, work=work),
                archive_java_option(settings.class_archive, jars) or dump_java_option(),
            )
            if option
        ),
    }
    if settings.metastore_uri:
        # The session's catalog is the shared Hive Metastore: tables by name for every
        # engine on it (eventlake.warehouse.catalog registers them).
        conf["spark.sql.catalogImplementation"] = "hive"
        conf["spark.hadoop.hive.metastore.uris"] = settings.metastore_uri
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


def is_current(settings: Settings) -> bool:
    """Whether the archive exists and was built from this Java, pyspark and jars."""
    from eventlake.spark.conf import spark_jars

    return archive_java_option(settings.class_archive, spark_jars(settings)) is not None
