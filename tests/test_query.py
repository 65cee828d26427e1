"""eventlake.query: the warehouse's Delta tables as views, and query results as text."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from eventlake.local.settings import LocalSettings
from eventlake.query import register_tables, run_query
from eventlake.tables import EVENTS_SCHEMA, ensure_table, state_path


def _tables(spark: SparkSession, settings: LocalSettings) -> None:
    ensure_table(spark, str(settings.warehouse / "events"), EVENTS_SCHEMA)
    ensure_table(spark, str(state_path(settings, "orders.v1")), EVENTS_SCHEMA)
    row = {name: None for name in EVENTS_SCHEMA.fieldNames()}
    row |= {"id": "e-1", "type": "com.example.created", "data": b"x" * 80}
    spark.createDataFrame([row], EVENTS_SCHEMA).write.format("delta").mode("append").save(
        str(settings.warehouse / "events")
    )


def test_every_table_is_registered_state_tables_by_a_sql_name(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    _tables(spark, warehouse_settings)
    assert register_tables(spark, warehouse_settings) == [
        "events",
        "events_unique",
        "type_com_example_created",
        "state_orders_v1",
    ]
    assert spark.table("state_orders_v1").count() == 0


def test_a_result_renders_as_a_table_with_long_bytes_cut_and_nulls_named(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    _tables(spark, warehouse_settings)
    register_tables(spark, warehouse_settings)
    text = run_query(spark, "SELECT id, subject, data FROM events")
    header, _, line, count = text.splitlines()
    assert header.split(" | ")[0].strip() == "id"
    assert [cell.strip() for cell in line.split(" | ")] == ["e-1", "NULL", "x" * 57 + "..."]
    assert count == "(1 row)"


def test_json_output_is_one_object_per_row_up_to_the_limit(spark: SparkSession) -> None:
    text = run_query(spark, "SELECT id FROM range(5)", output_format="json", limit=3)
    assert [json.loads(line) for line in text.splitlines()] == [{"id": 0}, {"id": 1}, {"id": 2}]
