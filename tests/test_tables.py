"""eventlake.tables: the events and rejects tables are created, and upgraded in place."""

from __future__ import annotations

from pyspark.sql import SparkSession

from eventlake.settings import Settings
from eventlake.tables import REJECTS, committed_txn_version, ensure_tables, table_schemas


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


def test_committed_txn_version_is_the_last_idempotent_write_of_that_app(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)
    path = str(warehouse_settings.table_path(REJECTS))
    empty = spark.read.format("delta").load(path).limit(0)
    for version in (3, 4):
        empty.write.format("delta").mode("append").options(
            txnAppId="app-a", txnVersion=version
        ).save(path)

    assert committed_txn_version(spark, path, "app-a") == 4
    assert committed_txn_version(spark, path, "app-b") is None
