"""The shared SparkSession has Delta working: create, MERGE, time travel; its conf."""

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from delta.tables import DeltaTable
from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from eventlake.core.driver_work import DriverWork
from eventlake.core.settings import Settings
from eventlake.spark.conf import (
    DRIVER_GC,
    FORKLESS_LOCAL_FILES,
    HADOOP_JAR,
    LANDING_YOUNG_GENERATION,
    NIO_BUFFER_CACHE,
    SMALL_MACHINE_JIT,
    MissingJarsError,
    driver_jvm_options,
    driver_on_loopback,
    is_cluster_master,
    is_local_master,
    memory_mib,
    spark_conf,
    spark_jars,
)
from eventlake.spark.rows import computed_once, local_rows, release
from eventlake.spark.session import session_conf
from tests.helpers import Storage, held_storage


def test_delta_create_merge_and_time_travel(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "tiny")
    spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string").write.format("delta").save(path)
    updates = spark.createDataFrame([(2, "B"), (3, "c")], "id int, v string")
    (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(updates.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    now = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    before = {
        r.id: r.v for r in spark.read.format("delta").option("versionAsOf", 0).load(path).collect()
    }
    assert now == {1: "a", 2: "B", 3: "c"}
    assert before == {1: "a", 2: "b"}


def test_session_gets_jars_by_path_not_by_download(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.jars.packages", None) is None
    jars = conf.get("spark.jars")
    assert jars is not None and "spark-sql-kafka-0-10_2.13" in jars and "delta-spark_4.1" in jars


def test_every_logger_the_log_config_quiets_is_a_class_of_the_driver(
    spark: SparkSession, settings: Settings
) -> None:
    # A logger named after a class that an upgrade moved quiets nothing: Spark 4.1 moved
    # ResolveWriteToStream into ...streaming.runtime, and its warning came back on every stream.
    lines = settings.log_config.read_text().splitlines()
    names = [
        line.split("=", 1)[1].strip()
        for line in lines
        if line.startswith("logger.") and line.split("=", 1)[0].strip().endswith(".name")
    ]
    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    missing = []
    for name in names:
        try:
            loader.loadClass(name)
        except Py4JJavaError:
            missing.append(name)

    assert names
    assert not missing, f"{settings.log_config} names classes the driver does not have: {missing}"


def test_missing_jars_folder_says_what_to_run(settings: Settings, tmp_path: Path) -> None:
    empty = settings.model_copy(update={"jars_dir": tmp_path})
    with pytest.raises(MissingJarsError, match="make jars"):
        spark_jars(empty)


def test_driver_java_options_are_added_to_the_drivers_jvm_options(settings: Settings) -> None:
    tuned = settings.model_copy(update={"driver_java_options": "-XX:TieredStopAtLevel=1"})

    options = spark_conf(tuned)["spark.driver.extraJavaOptions"].split()

    assert "-XX:TieredStopAtLevel=1" in options
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in options)


def test_a_local_master_on_a_small_machine_gets_the_shallow_jit(settings: Settings) -> None:
    unset = settings.model_copy(update={"driver_java_options": None, "spark_master": "local[*]"})

    assert (
        driver_jvm_options(unset, cores=2) == f"{DRIVER_GC} {NIO_BUFFER_CACHE} {SMALL_MACHINE_JIT}"
    )


def test_a_larger_machine_keeps_the_jvms_own_jit(settings: Settings) -> None:
    unset = settings.model_copy(update={"driver_java_options": None, "spark_master": "local[*]"})

    assert driver_jvm_options(unset, cores=16) == f"{DRIVER_GC} {NIO_BUFFER_CACHE}"


def test_a_cluster_driver_keeps_the_jvms_own_jit(settings: Settings) -> None:
    cluster = settings.model_copy(
        update={"driver_java_options": None, "spark_master": "spark://10.0.0.5:7077"}
    )

    assert driver_jvm_options(cluster, cores=2) == f"{DRIVER_GC} {NIO_BUFFER_CACHE}"


def test_a_landing_on_a_local_master_gets_a_fixed_young_generation(settings: Settings) -> None:
    unset = settings.model_copy(
        update={"driver_java_options": None, "spark_master": "local[*]", "driver_memory": "2g"}
    )

    assert (
        driver_jvm_options(unset, cores=2, work=DriverWork.LANDING).split()[-1]
        == LANDING_YOUNG_GENERATION
    )
    assert LANDING_YOUNG_GENERATION not in driver_jvm_options(unset, cores=2)


def test_a_landing_keeps_the_jvms_young_generation_where_it_is_small_or_remote(
    settings: Settings,
) -> None:
    small = settings.model_copy(
        update={"driver_java_options": None, "spark_master": "local[*]", "driver_memory": "1g"}
    )
    cluster = small.model_copy(
        update={"spark_master": "spark://10.0.0.5:7077", "driver_memory": "4g"}
    )

    assert LANDING_YOUNG_GENERATION not in driver_jvm_options(
        small, cores=2, work=DriverWork.LANDING
    )
    assert LANDING_YOUNG_GENERATION not in driver_jvm_options(
        cluster, cores=2, work=DriverWork.LANDING
    )


def test_the_landing_choice_reaches_the_drivers_java_options(settings: Settings) -> None:
    unset = settings.model_copy(
        update={"driver_java_options": None, "spark_master": "local[2]", "driver_memory": "2g"}
    )

    options = spark_conf(unset, work=DriverWork.LANDING)["spark.driver.extraJavaOptions"].split()

    assert LANDING_YOUNG_GENERATION in options


@pytest.mark.parametrize(
    ("text", "mib"),
    [("2g", 2048), ("1536m", 1536), ("2G", 2048), ("524288k", 512), ("2048", 2048), ("x", None)],
)
def test_memory_sizes_read_as_spark_writes_them(text: str, mib: int | None) -> None:
    assert memory_mib(text) == mib


def test_driver_java_options_replace_the_machines_choice(settings: Settings) -> None:
    chosen = settings.model_copy(update={"driver_java_options": "-XX:+UseG1GC"})

    assert driver_jvm_options(chosen, cores=2) == "-XX:+UseG1GC"


def test_the_default_driver_java_options_start_this_jvm() -> None:
    # The tests give their job processes other options, so a flag this JDK refuses
    # would otherwise first show in make demo or a user's job.
    default = f"{DRIVER_GC} {NIO_BUFFER_CACHE} {SMALL_MACHINE_JIT} {LANDING_YOUNG_GENERATION}"
    java = shutil.which(
        "java", path=os.pathsep.join([f"{os.environ.get('JAVA_HOME', '')}/bin", os.environ["PATH"]])
    )
    assert java is not None
    started = subprocess.run(
        [java, *default.split(), "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    # Lines read "<type> <name> = <value> {<kind>} {<origin>}".
    final = {
        fields[1]: fields[3]
        for fields in (line.split() for line in started.stdout.splitlines())
        if len(fields) > 3 and fields[2] in ("=", ":=")
    }
    assert final["UseParallelGC"] == "true"
    assert final["MaxInlineLevel"] == "5"
    assert final["MaxNewSize"] == str(480 * 2**20)


def test_jobs_run_without_a_ui_unless_a_ui_port_is_set(settings: Settings) -> None:
    with_port = settings.model_copy(update={"spark_ui_port": 4050})

    assert spark_conf(settings)["spark.ui.enabled"] == "false"
    assert "spark.ui.port" not in spark_conf(settings)
    assert spark_conf(settings, ui=True)["spark.ui.enabled"] == "true"
    conf = spark_conf(with_port)
    assert (conf["spark.ui.enabled"], conf["spark.ui.port"]) == ("true", "4050")


def test_a_local_master_keeps_the_driver_on_the_loopback_and_has_no_executor_conf(
    settings: Settings,
) -> None:
    conf = spark_conf(settings.model_copy(update={"spark_master": "local[2]"}))
    assert (conf["spark.driver.host"], conf["spark.driver.bindAddress"]) == ("127.0.0.1",) * 2
    assert not {key for key in conf if key.startswith(("spark.executor.", "spark.cores."))}


def test_a_standalone_master_sizes_its_executors_and_gives_them_the_drivers_python(
    settings: Settings,
) -> None:
    on_cluster = settings.model_copy(
        update={
            "spark_master": "spark://127.0.0.1:7077",
            "executor_memory": "768m",
            "executor_cores": 1,
            "cores_max": 2,
        }
    )

    conf = spark_conf(on_cluster)

    assert conf["spark.executor.memory"] == "768m"
    assert conf["spark.executor.cores"] == "1"
    assert conf["spark.cores.max"] == "2"
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.driver.host"] == "127.0.0.1"  # its workers are on this machine
    # The jars go by path, the same as in local mode: nothing to resolve or download.
    assert conf["spark.jars"] == ",".join(str(jar) for jar in spark_jars(settings))
    assert not {key for key in conf if key.startswith("spark.jars.")}


def test_a_local_master_gets_the_forkless_local_file_system_and_its_jar(
    settings: Settings,
) -> None:
    conf = spark_conf(settings.model_copy(update={"spark_master": "local[2]"}))
    assert FORKLESS_LOCAL_FILES.items() <= conf.items()
    (jar,) = [j for j in spark_jars(settings) if j.name.startswith(HADOOP_JAR)]
    assert conf["spark.driver.extraClassPath"] == str(jar)


def test_a_cluster_master_keeps_hadoops_local_file_system(settings: Settings) -> None:
    conf = spark_conf(settings.model_copy(update={"spark_master": "spark://127.0.0.1:7077"}))
    assert not FORKLESS_LOCAL_FILES.keys() & conf.keys()
    assert "spark.driver.extraClassPath" not in conf


def test_the_sessions_local_files_go_through_the_forkless_file_systems(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Both Hadoop APIs, as Spark's streaming checkpoints (FileContext), Delta's log store
    # (FileContext) and its writers (FileSystem) get them; what they do: lib/jvm's tests.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    path = jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri())
    context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(path.toUri(), conf)
    file_system = path.getFileSystem(conf)
    assert context.getDefaultFileSystem().getClass().getName() == (
        "io.eventlake.hadoop.ForklessLocalFs"
    )
    assert file_system.getRawFileSystem().getClass().getName() == (
        "io.eventlake.hadoop.ForklessRawLocalFileSystem"
    )


def test_a_remote_master_leaves_the_driver_address_to_spark(settings: Settings) -> None:
    conf = spark_conf(settings.model_copy(update={"spark_master": "spark://spark-master:7077"}))
    assert "spark.driver.host" not in conf and "spark.driver.bindAddress" not in conf
    assert "spark.cores.max" not in conf  # unset: the application takes every free core
    assert conf["spark.executor.cores"] == "1"


@pytest.mark.parametrize(
    ("master", "cluster", "loopback"),
    [
        ("local[*]", False, True),
        ("spark://127.0.0.1:7077", True, True),
        ("spark://localhost:7077,127.0.0.1:7078", True, True),
        ("spark://127.0.0.1:7077,spark-master:7077", True, False),
        ("yarn", False, False),
    ],
)
def test_masters_are_told_apart(master: str, cluster: bool, loopback: bool) -> None:
    assert (is_cluster_master(master), driver_on_loopback(master)) == (cluster, loopback)


@pytest.mark.parametrize(
    ("master", "local"),
    [
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("spark://127.0.0.1:7077", False),
        ("yarn", False),
    ],
)
def test_local_masters_are_told_apart(master: str, local: bool) -> None:
    assert is_local_master(master) is local


#: Spark's timestamp range, as microseconds since the epoch: the first and last
#: microsecond of years 0001 and 9999 in UTC.
FIRST_MICROS = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
LAST_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z


def test_parquet_timestamps_are_written_as_micros(settings: Settings) -> None:
    assert spark_conf(settings)["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"


def test_session_writes_parquet_timestamps_as_micros(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"


def test_variant_columns_are_written_without_parquets_variant_annotation(
    settings: Settings,
) -> None:
    # Trino 476 cannot read a Parquet file whose footer has it (tests/warehouse/test_trino.py).
    assert spark_conf(settings)["spark.sql.parquet.variant.annotateLogicalType.enabled"] == (
        "false"
    )


def test_delta_rs_reads_years_0001_and_9999_back_exactly(
    spark: SparkSession, tmp_path: Path
) -> None:
    # INT96 (Spark's default) is read as nanoseconds by delta-rs and pyarrow, which only
    # reach 1677-2262: delta-rs refuses such a table and pyarrow returns wrong dates.
    path = str(tmp_path / "times")
    micros = [FIRST_MICROS, 0, LAST_MICROS]
    (
        spark.createDataFrame(list(enumerate(micros)), "id int, micros long")
        .select("id", F.timestamp_micros("micros").alias("time"))
        .write.format("delta")
        .save(path)
    )

    table = deltalake.DeltaTable(path).to_pyarrow_table().sort_by("id")

    # As integers: CPython's datetime cannot hold every instant of year 0001 in UTC.
    assert table.column("time").cast(pa.int64()).to_pylist() == micros


def test_session_conf_holds_only_inside_the_block(spark: SparkSession) -> None:
    key = "spark.eventlake.test.scoped"
    spark.conf.set(key, "before")

    with session_conf(spark, {key: "inside"}):
        inside = spark.conf.get(key)

    assert (inside, spark.conf.get(key)) == ("inside", "before")
    spark.conf.unset(key)


def test_session_conf_unsets_what_was_unset_also_when_the_block_fails(
    spark: SparkSession,
) -> None:
    key = "spark.eventlake.test.unset"

    with pytest.raises(RuntimeError), session_conf(spark, {key: "inside"}):
        raise RuntimeError("the block failed")

    assert spark.conf.get(key, None) is None


def _held_blocks(spark: SparkSession, held: DataFrame, expected: int) -> int:
    """Blocks Spark holds for the checkpointed frame ``held``, once they are ``expected``
    (or 10 s have passed, :func:`tests.helpers.held_storage`)."""

    def blocks(storage: Storage) -> int:
        return sum(partitions for partitions, _, _ in storage)

    return blocks(held_storage(spark, held, lambda storage: blocks(storage) == expected))


def test_computed_once_holds_the_rows_and_release_frees_them(spark: SparkSession) -> None:
    held = computed_once(spark.range(1000).repartition(3))
    assert _held_blocks(spark, held, 3) == 3
    assert held.count() == 1000
    release(held)
    assert _held_blocks(spark, held, 0) == 0


def test_release_frees_the_rows_under_a_frame_derived_from_a_held_one(
    spark: SparkSession,
) -> None:
    held = computed_once(spark.range(1000).repartition(3))
    release(held.where("id > 10"))
    assert _held_blocks(spark, held, 0) == 0


def test_local_rows_builds_nested_rows_without_a_python_worker(spark: SparkSession) -> None:
    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("at", TimestampType()),
            StructField(
                "sample",
                ArrayType(
                    StructType([StructField("p", IntegerType()), StructField("o", LongType())])
                ),
            ),
        ]
    )
    at = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

    frame = local_rows(
        spark, [("a", at, [(0, 7), (1, 8)]), {"topic": "b", "at": None, "sample": []}], schema
    )

    assert frame.schema == schema
    assert [tuple(r) for r in frame.collect()] == [
        ("a", at.replace(tzinfo=None), [(0, 7), (1, 8)]),
        ("b", None, []),
    ]
    # createDataFrame's plan: a scan of an RDD that Python workers unpickle.
    assert "ExistingRDD" not in frame._jdf.queryExecution().executedPlan().toString()


def test_local_rows_of_nothing_has_the_schema_and_no_rows(spark: SparkSession) -> None:
    schema = StructType([StructField("v", VariantType()), StructField("n", LongType())])

    frame = local_rows(spark, [], schema)

    assert (frame.schema, frame.count()) == (schema, 0)


def test_the_quality_check_runs_with_its_own_driver_memory(settings: Settings) -> None:
    sized = settings.model_copy(update={"driver_memory": "2g", "quality_driver_memory": "768m"})

    assert spark_conf(sized, work=DriverWork.CHECKING)["spark.driver.memory"] == "768m"
    assert spark_conf(sized)["spark.driver.memory"] == "2g"
    assert spark_conf(sized, work=DriverWork.LANDING)["spark.driver.memory"] == "2g"
