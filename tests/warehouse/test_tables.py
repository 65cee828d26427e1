"""eventlake.warehouse.tables: the warehouse's schemas, paths and table creation."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from eventlake.binding.decode import decode_records, to_events, to_rejects
from eventlake.core.settings import Settings
from eventlake.core.topic_names import InvalidTopicNameError
from eventlake.spark.rows import release
from eventlake.warehouse.delta_log import empty_at
from eventlake.warehouse.names import (
    EVENTS,
    REJECTS,
    is_delta_table,
    state_path,
    state_table_topics,
    warehouse_tables,
)
from eventlake.warehouse.schemas import (
    DQ_RESULTS_SCHEMA,
    EVENTS_SCHEMA,
    KAFKA_SOURCE_SCHEMA,
    REJECTS_SCHEMA,
    parquet_column_paths,
)
from eventlake.warehouse.tables import (
    CHECKPOINT_INTERVAL,
    append_rows,
    create_missing_tables,
    ensure_table,
    ensure_tables,
    merge_source,
    rows_added_by,
    rows_as_of,
    table_schema,
)
from tests.helpers import Storage, held_storage


def test_the_events_schema_is_what_the_decoder_returns(spark: SparkSession) -> None:
    decoded = decode_records(spark.createDataFrame([], KAFKA_SOURCE_SCHEMA))

    written = to_events(decoded).schema

    assert [(f.name, f.dataType) for f in written.fields] == [
        (f.name, f.dataType) for f in EVENTS_SCHEMA.fields
    ]


def test_the_rejects_schema_is_what_the_decoder_returns(spark: SparkSession) -> None:
    decoded = decode_records(spark.createDataFrame([], KAFKA_SOURCE_SCHEMA))

    written = to_rejects(decoded).schema

    assert [(f.name, f.dataType) for f in written.fields] == [
        (f.name, f.dataType) for f in REJECTS_SCHEMA.fields
    ]


def test_new_tables_are_created_with_their_schemas(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    created = ensure_tables(spark, warehouse_settings)

    assert created == {EVENTS, REJECTS}
    for name, schema in ((EVENTS, EVENTS_SCHEMA), (REJECTS, REJECTS_SCHEMA)):
        table = spark.read.format("delta").load(str(warehouse_settings.table_path(name)))
        assert table.schema == schema


def test_existing_tables_are_not_reported_as_new(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)

    assert ensure_tables(spark, warehouse_settings) == set()


def test_existing_tables_with_every_column_are_left_without_a_delta_command(
    spark: SparkSession, warehouse_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from delta.tables import DeltaTable

    ensure_tables(spark, warehouse_settings)

    def no_delta_command(*_: object) -> None:
        raise AssertionError("ensure_tables ran a Delta command on complete tables")

    monkeypatch.setattr(DeltaTable, "createIfNotExists", no_delta_command)
    assert ensure_tables(spark, warehouse_settings) == set()


def test_missing_tables_are_created_without_spark(
    spark: SparkSession, warehouse_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from delta.tables import DeltaTable

    def no_delta_command(*_: object) -> None:
        raise AssertionError("create_missing_tables ran a Delta command through Spark")

    monkeypatch.setattr(DeltaTable, "createIfNotExists", no_delta_command)

    assert create_missing_tables(warehouse_settings) == {EVENTS, REJECTS}
    assert table_schema(warehouse_settings.table_path(EVENTS)) == EVENTS_SCHEMA
    assert table_schema(warehouse_settings.table_path(REJECTS)) == REJECTS_SCHEMA
    assert create_missing_tables(warehouse_settings) == set()


def test_spark_appends_to_a_table_created_without_it_and_reads_the_rows_back(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = str(warehouse_settings.table_path(EVENTS))
    create_missing_tables(warehouse_settings)
    row = spark.createDataFrame([("e-1", "orders", 0, 7)], "id string, t string, p int, o long")
    rows = row.select(
        *[
            (F.col(f.name) if f.name == "id" else F.lit(None).cast(f.dataType)).alias(f.name)
            for f in EVENTS_SCHEMA.fields
        ]
    )

    rows.write.format("delta").mode("append").save(path)

    assert [r["id"] for r in spark.read.format("delta").load(path).collect()] == ["e-1"]
    assert _checkpoint_interval(spark, path) == str(CHECKPOINT_INTERVAL)


@pytest.mark.parametrize("created_by", ["delta", "delta-rs"])
def test_entity_keys_are_written_without_a_parquet_dictionary(
    spark: SparkSession, warehouse_settings: Settings, created_by: str
) -> None:
    path = str(warehouse_settings.table_path(EVENTS))
    if created_by == "delta":
        ensure_tables(spark, warehouse_settings)
    else:
        create_missing_tables(warehouse_settings)
    keyed = spark.range(2000).select(
        *[
            (F.concat(F.lit("order-"), (F.col("id") % 500).cast("string")).cast("binary")).alias(
                f.name
            )
            if f.name == "kafka_key"
            else F.create_map(F.lit("partitionkey"), (F.col("id") % 500).cast("string")).alias(
                f.name
            )
            if f.name == "extensions"
            else F.lit("/shop").alias(f.name)
            if f.name == "source"
            else F.lit(None).cast(f.dataType).alias(f.name)
            for f in EVENTS_SCHEMA.fields
        ]
    )

    keyed.coalesce(1).write.format("delta").mode("append").save(path)

    encodings = _parquet_encodings(Path(path))
    assert "PLAIN_DICTIONARY" not in encodings["kafka_key"]
    assert "PLAIN_DICTIONARY" not in encodings["extensions.key_value.value"]
    assert "PLAIN_DICTIONARY" in encodings["source"]


def _parquet_encodings(table: Path) -> dict[str, tuple[str, ...]]:
    import pyarrow.parquet as pq

    (data_file,) = table.glob("*.parquet")
    group = pq.ParquetFile(data_file).metadata.row_group(0)
    return {
        group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)
    }


def test_parquet_paths_name_a_maps_keys_and_values_as_parquet_does() -> None:
    paths = parquet_column_paths(EVENTS_SCHEMA)

    assert {"kafka_key", "extensions.key_value.key", "extensions.key_value.value"} <= paths
    assert "extensions" not in paths


def test_rejects_table_of_an_older_version_gains_the_rejected_by_column(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = str(warehouse_settings.table_path(REJECTS))
    old_schema = [f for f in REJECTS_SCHEMA.fields if f.name != "rejected_by"]
    spark.createDataFrame([], "a int").selectExpr(
        *[f"CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`" for f in old_schema]
    ).limit(0).write.format("delta").save(path)

    ensure_tables(spark, warehouse_settings)

    columns = spark.read.format("delta").load(path).columns
    assert columns == [f.name for f in old_schema] + ["rejected_by"]


def test_a_table_asked_for_change_data_feed_has_it_on(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = str(state_path(warehouse_settings, "customers"))

    ensure_table(spark, path, EVENTS_SCHEMA, change_data_feed=True)

    properties = spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()
    assert {r["key"]: r["value"] for r in properties}["delta.enableChangeDataFeed"] == "true"


def _checkpoint_interval(spark: SparkSession, path: str) -> str | None:
    properties = spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()
    return {r["key"]: r["value"] for r in properties}.get("delta.checkpointInterval")


def test_new_tables_checkpoint_every_hundred_commits_and_old_ones_keep_theirs(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    # A checkpoint is written inside the commit that reaches the interval: a stream's
    # batch. Changing an existing table's would be a metadata commit beside its writers.
    events = str(warehouse_settings.table_path(EVENTS))
    older = str(warehouse_settings.table_path(REJECTS))
    spark.createDataFrame([], "a int").selectExpr(
        *[f"CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`" for f in REJECTS_SCHEMA]
    ).limit(0).write.format("delta").save(older)

    ensure_tables(spark, warehouse_settings)

    assert _checkpoint_interval(spark, events) == str(CHECKPOINT_INTERVAL) == "100"
    assert _checkpoint_interval(spark, older) is None


def test_state_tables_live_in_the_state_folder(warehouse_settings: Settings) -> None:
    assert state_path(warehouse_settings, "customers") == (
        warehouse_settings.warehouse / "state" / "customers"
    )


@pytest.mark.parametrize("topic", ["..", "a/../b", ""])
def test_a_state_path_is_refused_for_a_name_that_is_not_a_topic(
    warehouse_settings: Settings, topic: str
) -> None:
    with pytest.raises(InvalidTopicNameError):
        state_path(warehouse_settings, topic)


def test_warehouse_tables_lists_top_level_tables_then_state_tables(
    warehouse_settings: Settings,
) -> None:
    root = warehouse_settings.warehouse
    for folder in ("rejects", "events", "state/b", "state/a", "_checkpoints/x", "not_a_table"):
        (root / folder).mkdir(parents=True)
        if folder != "not_a_table":
            (root / folder / "_delta_log").mkdir()
            (root / folder / "_delta_log" / f"{0:020d}.json").write_text("{}\n")

    names = [name for name, _ in warehouse_tables(warehouse_settings)]

    assert names == ["events", "rejects", "state/a", "state/b"]
    assert state_table_topics(warehouse_settings) == ["a", "b"]


def test_a_table_whose_first_commit_is_being_written_is_not_listed_yet(
    warehouse_settings: Settings,
) -> None:
    # What another process's CREATE leaves for a moment: the log folder and the temporary
    # file of its first commit. Maintenance and the views would get "not a Delta table".
    log = warehouse_settings.warehouse / "state" / "new" / "_delta_log"
    log.mkdir(parents=True)
    (log / f".{0:020d}.json.4f1c.tmp").write_text("{}\n")

    assert warehouse_tables(warehouse_settings) == []


def test_a_table_whose_log_holds_a_checkpoint_only_is_a_table(tmp_path: Path) -> None:
    # Older commits are deleted once a checkpoint covers them (logRetentionDuration).
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{100:020d}.checkpoint.parquet").write_bytes(b"")

    assert is_delta_table(tmp_path / "t")


def test_no_warehouse_folder_means_no_tables(tmp_path: Path) -> None:
    settings = Settings(warehouse=tmp_path / "absent")

    assert warehouse_tables(settings) == []


def test_a_table_is_empty_at_its_version_until_its_first_data_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    assert empty_at(path) is None  # no table at all
    ensure_table(spark, str(path), StructType.fromDDL("n long"))
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('eventlake.test' = '1')")
    assert empty_at(path) == 1
    spark.range(1).toDF("n").write.format("delta").mode("append").save(str(path))
    assert empty_at(path) is None


def test_a_merge_source_is_held_on_disk_not_in_the_heap(spark: SparkSession) -> None:
    source = merge_source(spark.range(1000).repartition(2))

    def shape(storage: Storage) -> list[tuple[int, int, bool]]:
        return [(partitions, memory, disk > 0) for partitions, memory, disk in storage]

    try:
        # Spark's status store learns of stored blocks after the job returns (a second
        # block seen late failed a CI run): held_storage waits for it.
        held = held_storage(spark, source, lambda storage: shape(storage) == [(2, 0, True)])
        assert shape(held) == [(2, 0, True)]
        assert source.count() == 1000
    finally:
        release(source)


def test_rows_added_by_reads_the_rows_of_the_commits_named_only(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    schema = spark.range(1).schema
    for start in (0, 10, 20, 30):
        spark.range(start, start + 10).repartition(2).write.format("delta").mode("append").save(
            path
        )

    one = rows_added_by(spark, path, [1], schema)
    two = rows_added_by(spark, path, [1, 3], schema)

    assert one is not None and two is not None
    assert sorted(r["id"] for r in one.collect()) == list(range(10, 20))
    assert sorted(r["id"] for r in two.collect()) == [*range(10, 20), *range(30, 40)]


def test_rows_added_by_declines_a_table_whose_files_hold_renamed_columns(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").option("delta.columnMapping.mode", "name").option(
        "delta.minReaderVersion", "2"
    ).option("delta.minWriterVersion", "5").save(path)

    assert rows_added_by(spark, path, [0], spark.range(1).schema) is None


def test_rows_added_by_declines_a_partitioned_table(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    rows = spark.range(4).selectExpr("id", "id % 2 AS part")
    rows.write.format("delta").partitionBy("part").save(path)

    assert rows_added_by(spark, path, [0], rows.schema) is None


@pytest.fixture
def timed_table(spark: SparkSession, tmp_path: Path) -> tuple[str, StructType]:
    """Three commits, one file each: ids 0-9 at 01:00, 10-19 at 02:00, 20-29 at 03:00."""
    path = str(tmp_path / "t")
    for hour in (1, 2, 3):
        start = (hour - 1) * 10
        spark.range(start, start + 10, numPartitions=1).selectExpr(
            "id", f"timestamp'2026-01-01 0{hour}:00:00' AS at"
        ).write.format("delta").mode("append").save(path)
    return path, spark.read.format("delta").load(path).schema


def test_rows_as_of_reads_the_rows_of_that_version_from_since_on(
    spark: SparkSession, timed_table: tuple[str, StructType]
) -> None:
    path, schema = timed_table

    rows = rows_as_of(spark, path, 1, schema, since=("at", datetime(2026, 1, 1, 2)))

    assert rows is not None
    assert sorted(r["id"] for r in rows.collect()) == list(range(10, 20))


def test_rows_as_of_does_not_read_files_that_end_before_since(
    spark: SparkSession, timed_table: tuple[str, StructType]
) -> None:
    path, schema = timed_table

    rows = rows_as_of(spark, path, 2, schema, since=("at", datetime(2026, 1, 1, 3)))

    assert rows is not None
    assert len(rows.inputFiles()) == 1


def test_rows_as_of_reads_a_file_whose_name_the_log_percent_encodes(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    spark.range(3).coalesce(1).write.format("delta").save(str(path))
    (written,) = path.glob("*.parquet")
    written.rename(path / "a b%.parquet")
    log = path / "_delta_log" / f"{0:020d}.json"
    log.write_text(log.read_text().replace(written.name, "a%20b%25.parquet"))
    for checksum in path.glob("_delta_log/*.crc"):
        checksum.unlink()

    rows = rows_as_of(spark, str(path), 0, spark.range(1).schema)

    assert rows is not None
    assert sorted(r["id"] for r in rows.collect()) == [0, 1, 2]


def test_rows_as_of_declines_a_table_with_deletion_vectors(
    spark: SparkSession, timed_table: tuple[str, StructType]
) -> None:
    # A deleted row stays in its file, hidden by a deletion vector the files do not show.
    path, schema = timed_table
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")

    assert rows_as_of(spark, path, 4, schema) is None


def test_rows_as_of_declines_a_table_delta_rs_cannot_read(
    spark: SparkSession, timed_table: tuple[str, StructType], monkeypatch: pytest.MonkeyPatch
) -> None:
    import deltalake
    from deltalake.exceptions import DeltaProtocolError

    def refuses(*_args: object, **_kwargs: object) -> None:
        raise DeltaProtocolError("unsupported reader features: {someFeature}")

    path, schema = timed_table
    monkeypatch.setattr(deltalake, "DeltaTable", refuses)

    assert rows_as_of(spark, path, 0, schema) is None


def test_a_delta_path_in_sql_has_its_backticks_doubled() -> None:
    from eventlake.warehouse.names import delta_path_sql

    assert delta_path_sql("/wh/state/a`b") == "delta.`/wh/state/a``b`"


def test_the_schema_read_from_the_log_is_the_one_spark_created_the_table_with(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)

    # Every type eventlake writes is there: VARIANT, maps, arrays of structs, timestamps.
    assert table_schema(warehouse_settings.table_path(EVENTS)) == EVENTS_SCHEMA
    assert table_schema(warehouse_settings.table_path(REJECTS)) == REJECTS_SCHEMA
    assert table_schema(warehouse_settings.table_path("nothing")) is None


def test_rows_appended_with_delta_rs_are_read_by_spark_as_written(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "dq_results"
    when = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
    row = (
        "r1",
        when,
        "events",
        "events full@v9",
        "orders",
        "specversion",
        "e",
        "error",
        False,
        "2 of 9",
        2,
        [("orders", 1, 42)],
        None,
        9,
        -1,
    )

    append_rows(path, [row], DQ_RESULTS_SCHEMA)  # creates the table
    append_rows(path, [(*row[:4], "other", *row[5:])], DQ_RESULTS_SCHEMA)

    read = spark.read.format("delta").load(str(path))
    assert read.schema == DQ_RESULTS_SCHEMA
    got = sorted(read.collect(), key=lambda r: r["topic"])
    assert [r["topic"] for r in got] == ["orders", "other"]
    assert got[0]["run_time"].astimezone(UTC) == when
    assert [tuple(s) for s in got[0]["unexpected_sample"]] == [("orders", 1, 42)]
    assert got[0]["success"] is False and got[0]["unexpected_count"] == 2
