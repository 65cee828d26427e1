"""The shared SparkSession has Delta working: create, MERGE, time travel."""

from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from eventlake.settings import Settings
from eventlake.spark import MissingJarsError, spark_conf, spark_jars


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


def test_missing_jars_folder_says_what_to_run(settings: Settings, tmp_path: Path) -> None:
    empty = settings.model_copy(update={"jars_dir": tmp_path})
    with pytest.raises(MissingJarsError, match="make jars"):
        spark_jars(empty)


def test_driver_java_options_are_added_to_the_drivers_jvm_options(settings: Settings) -> None:
    tuned = settings.model_copy(update={"driver_java_options": "-XX:TieredStopAtLevel=1"})

    options = spark_conf(tuned)["spark.driver.extraJavaOptions"].split()

    assert options[-1] == "-XX:TieredStopAtLevel=1"
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in options)
