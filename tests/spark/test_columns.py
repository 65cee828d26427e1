"""eventlake.spark.columns: columns built once per Spark context."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.spark.columns import built_once


def test_columns_are_built_once_per_key_and_serve_any_frame(spark: SparkSession) -> None:
    builds = []

    def build() -> list:  # type: ignore[type-arg]
        builds.append(1)
        return [(F.col("n") * 2).alias("twice")]

    first = built_once(("test", "twice"), build)
    again = built_once(("test", "twice"), build)

    assert len(builds) == 1 and first is again
    assert [
        r["twice"] for r in spark.range(3).withColumnRenamed("id", "n").select(*first).collect()
    ] == [0, 2, 4]
    assert [
        r["twice"] for r in spark.range(5, 6).withColumnRenamed("id", "n").select(*again).collect()
    ] == [10]


def test_another_key_builds_its_own(spark: SparkSession) -> None:
    one = built_once(("test", "one"), lambda: [F.lit(1)])
    two = built_once(("test", "two"), lambda: [F.lit(2)])

    assert spark.range(1).select(*one, *two).first() == (1, 2)
