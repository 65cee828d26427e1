"""eventlake.tables: the events and rejects tables are created, and upgraded in place."""

from __future__ import annotations

from pyspark.sql import SparkSession

from eventlake.settings import Settings
from eventlake.tables import REJECTS, ensure_tables, table_schemas


def test_rejects_table_of_an_older_version_gains_the_rejected_by_column(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = str(warehouse_settings.table_path(REJECTS))
    old_schema = [f for f in table_schemas(spark)[REJECTS].fields if f.name != "rejected_by"]
    spark.createDataFrame([], "a int").selectExpr(
        *[f"CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`" for f in old_schema]
    ).limit(0).write.format("delta").save(path)

    ensure_tables(spark, warehouse_settings)

    columns = spark.read.format("delta").load(path).columns
    assert columns == [f.name for f in old_schema] + ["rejected_by"]
