"""A typed table's shape: its columns from a type's fields, the row expressions over
``events``, and its marks' frontier (pure logic; the tables themselves: test_step.py)."""

from __future__ import annotations

import time
from pathlib import Path

from pyspark.sql.types import DecimalType, LongType, StringType

from eventlake.core.settings import load_settings
from eventlake.typed.names import frontier
from eventlake.typed.shapes import object_fields
from eventlake.typed.step import STAGING_FOLDER, TypedCadence, TypedResult, remove_stale_staging
from eventlake.typed.tables import (
    FIELD_COMMENT,
    LEADING_COLUMNS,
    TRAILING_COLUMNS,
    add_columns_sql,
    added_fields,
    column_type,
    row_columns,
    table_fields,
    typed_schema,
)


def test_a_scalar_field_keeps_its_type_and_anything_else_is_json_text() -> None:
    assert column_type("DECIMAL(38,2)") == DecimalType(38, 2)
    assert column_type("BIGINT") == LongType()
    assert column_type("OBJECT<a: BIGINT>") == StringType()
    assert column_type("ARRAY<STRING>") == StringType()
    assert column_type("VARIANT") == StringType()


def test_a_typed_table_has_the_attributes_then_the_fields_then_the_data_and_kafka() -> None:
    schema = typed_schema({"amount": "DECIMAL(38,2)", "items": "ARRAY<STRING>"})
    names = schema.fieldNames()
    assert names[: len(LEADING_COLUMNS)] == list(LEADING_COLUMNS)
    assert names[len(LEADING_COLUMNS) : -len(TRAILING_COLUMNS)] == ["amount", "items"]
    assert names[-len(TRAILING_COLUMNS) :] == list(TRAILING_COLUMNS)
    assert "data_json" not in names  # no VARIANT: every Delta reader reads it


def test_a_field_named_like_a_column_gets_a_prefix_and_keeps_its_key() -> None:
    schema = typed_schema({"id": "BIGINT", "kafka_offset": "STRING", "n": "BIGINT"})
    assert table_fields(schema) == {
        "id": ("data_id", "bigint"),
        "kafka_offset": ("data_kafka_offset", "string"),
        "n": ("n", "bigint"),
    }
    assert schema["data_id"].metadata == {"comment": FIELD_COMMENT + "id"}


def test_only_fields_the_table_lacks_are_added_and_a_quoted_key_is_left_in_data() -> None:
    schema = typed_schema({"n": "BIGINT"})
    added = added_fields(schema, {"n": "DOUBLE", "m": "STRING", "it's": "STRING"})
    assert [f.name for f in added] == ["m"]
    assert (
        add_columns_sql("t", added)
        == "ALTER TABLE t ADD COLUMNS (`m` string COMMENT 'data field m')"
    )


def test_a_row_reads_each_field_as_its_columns_type_and_the_rest_as_events_has_them() -> None:
    columns = row_columns(typed_schema({"id": "BIGINT", "amount": "DECIMAL(38,2)"}))
    assert columns[0] == "`id`"
    assert "try_variant_get(data_json, '$.id', 'bigint') AS `data_id`" in columns
    assert "try_variant_get(data_json, '$.amount', 'decimal(38,2)') AS `amount`" in columns
    assert columns[-len(TRAILING_COLUMNS) :] == [f"`{c}`" for c in TRAILING_COLUMNS]


def test_the_frontier_is_the_lowest_mark_of_the_tables_holding_the_topic() -> None:
    ends = {("o", 0): 9, ("o", 1): 9, ("p", 0): 4}
    marks = {"a": {("o", 0): 5, ("o", 1): 9}, "b": {("o", 0): 7}, "c": {}}
    # b lacks partition 1 of o: it has read none of it.
    assert frontier(ends, marks) == {("o", 0): 5, ("o", 1): 0, ("p", 0): 0}


def test_a_stream_steps_once_the_interval_passed_since_the_last_step() -> None:
    cadence = TypedCadence(0.0)
    assert not cadence.due()  # nothing landed
    cadence.landed(["orders"])
    assert cadence.due() and cadence.topics == {"orders"}
    cadence.stepped()
    assert not cadence.due()
    slow = TypedCadence(3600.0)
    slow.landed(["orders"])
    assert not slow.due()


def test_a_step_says_what_it_added_per_type() -> None:
    result = TypedResult({"a.b": 3, "c": 0}, created=["a.b"], columns={"c": ["x"]})
    assert result.line() == "typed: a.b +3 (new table), c +0 (new columns x) seconds=0.0"
    assert TypedResult().line() == "typed: nothing new seconds=0.0"


def test_a_crashed_steps_staging_is_removed_once_an_hour_old(tmp_path: Path) -> None:
    settings = load_settings(warehouse=tmp_path)
    staging = tmp_path / STAGING_FOLDER
    old, recent = (
        staging / f"step-{int(time.time()) - 7200}-a",
        staging / f"step-{int(time.time())}-b",
    )
    for folder in (old, recent):
        (folder / "type=a.b").mkdir(parents=True)
    remove_stale_staging(settings)
    assert not old.exists() and recent.exists()


def test_a_shape_of_the_data_gives_its_top_level_fields_with_quoted_names() -> None:
    shape = "OBJECT<`na``me`: DECIMAL(2,1), items: ARRAY<OBJECT<a: BIGINT, b: STRING>>, n: BIGINT>"
    assert object_fields(shape) == {
        "na`me": "DECIMAL(38,1)",
        "items": "ARRAY<OBJECT<a: BIGINT, b: STRING>>",
        "n": "BIGINT",
    }
    assert object_fields("ARRAY<BIGINT>") == {}  # data that is not an object: no fields
    assert object_fields(None) == {}
