"""The ledger on the real broker and Spark: exactly once per topic, whatever lands it.

Each scenario combines the operations a user has (scheduled available-now runs, streams,
backfills, full refreshes, second and lost checkpoints) on one warehouse and one topic,
and checks that every record produced is in events or rejects once.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.topics import create_topic
from eventlake.ledger.commits import (
    CHECKED_DELTA_VERSIONS,
    FilesChangedError,
    Ledger,
    LedgerConflictError,
    LedgerMovedError,
    check_delta_version,
)
from eventlake.ledger.marks import INGEST, landed_version, ledger_key, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.runs.streaming import checkpoint_folder
from eventlake.warehouse.delta_log import delta_rs_table, empty_at
from eventlake.warehouse.names import EVENTS, REJECTS
from eventlake.warehouse.schemas import EVENTS_SCHEMA
from eventlake.warehouse.tables import ensure_tables
from tests.helpers import (
    delta_operations,
    landed_records,
    produce_events,
    typed_once,
)


def test_the_delta_version_in_use_is_one_the_ledger_was_checked_with() -> None:
    version = metadata.version("delta-spark")
    assert version in CHECKED_DELTA_VERSIONS, (
        f"delta-spark {version}: check eventlake.ledger.marks's commit path (Delta's transaction "
        "API, an internal) and maintenance's RETENTION_ARGUMENT_IGNORED_CONF "
        "(tests/maintenance/test_maintenance.py) against it, then add it to CHECKED_DELTA_VERSIONS"
    )
    assert check_delta_version() == version


def test_backfill_then_scheduled_run_lands_each_record_once(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # The report: 1,200 produced, 1,600 rows before the ledger.
    warehouse_settings = warehouse_settings.model_copy(update={"typed_tables": True})
    create_topic(warehouse_settings, topic_name, partitions=2)
    scheduled = IngestRequest(topics=(topic_name,))
    produce_events(warehouse_settings, topic_name, 600, prefix="a", invalid_every=50)
    run_ingest(spark, warehouse_settings, scheduled)
    produce_events(warehouse_settings, topic_name, 400, prefix="b", invalid_every=50)
    backfill = run_ingest(
        spark, warehouse_settings, IngestRequest(topics=(topic_name,), ending_offsets="latest")
    )
    produce_events(warehouse_settings, topic_name, 200, prefix="c", invalid_every=50)
    last = run_ingest(spark, warehouse_settings, scheduled)
    assert landed_records(spark, warehouse_settings) == (1200, 1200)
    assert (backfill.records_read, last.records_read) == (400, 200)
    assert typed_once(spark, warehouse_settings) == {"t.test": 1176}  # 24 plain tombstones


def test_full_refresh_on_a_live_topic_adds_only_what_is_missing(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 100, prefix="a")
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    produce_events(warehouse_settings, topic_name, 30, prefix="b")
    refresh = IngestRequest(topics=(topic_name,), ending_offsets="latest")  # full_refresh's run
    assert run_ingest(spark, warehouse_settings, refresh).records_read == 30
    assert run_ingest(spark, warehouse_settings, refresh).records_read == 0
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    assert landed_records(spark, warehouse_settings) == (130, 130)


def test_second_checkpoint_starts_where_the_tables_stand(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name, partitions=2)
    produce_events(warehouse_settings, topic_name, 80, prefix="a")
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    produce_events(warehouse_settings, topic_name, 20, prefix="b")
    other = IngestRequest(topics=(topic_name,), checkpoint_name="second")
    assert run_ingest(spark, warehouse_settings, other).records_read == 20
    assert run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,))).events == 0
    assert landed_records(spark, warehouse_settings) == (100, 100)


def test_lost_checkpoint_resumes_from_the_ledger(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,))
    produce_events(warehouse_settings, topic_name, 50, prefix="a")
    run_ingest(spark, warehouse_settings, request)
    shutil.rmtree(checkpoint_folder(warehouse_settings.checkpoints, request))
    produce_events(warehouse_settings, topic_name, 10, prefix="b")
    summary = run_ingest(spark, warehouse_settings, request)
    assert summary.records_read == 10
    assert landed_records(spark, warehouse_settings) == (60, 60)


def test_checkpoint_ahead_of_the_tables_is_restarted_from_the_ledger(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    request = IngestRequest(topics=(topic_name,))
    produce_events(warehouse_settings, topic_name, 40)
    run_ingest(spark, warehouse_settings, request)
    for name in (EVENTS, REJECTS):  # the tables lost, the checkpoint kept
        shutil.rmtree(warehouse_settings.table_path(name))
    summary = run_ingest(spark, warehouse_settings, request)
    assert summary.records_read == 40
    assert landed_records(spark, warehouse_settings) == (40, 40)


def test_stream_and_scheduled_runs_on_one_topic_stay_exactly_once(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    # The stream's typed steps after every batch, beside the scheduled runs' own.
    warehouse_settings = warehouse_settings.model_copy(
        update={"typed_tables": True, "typed_interval_seconds": 0.0}
    )
    create_topic(warehouse_settings, topic_name, partitions=2)
    stream = IngestRequest(
        topics=(topic_name,), trigger="processing-time=1 second", checkpoint_name="stream"
    )
    runner = threading.Thread(target=run_ingest, args=(spark, warehouse_settings, stream))
    runner.start()
    try:
        for round_ in range(3):
            produce_events(warehouse_settings, topic_name, 100, prefix=f"r{round_}")
            run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
            run_ingest(
                spark,
                warehouse_settings,
                IngestRequest(topics=(topic_name,), ending_offsets="latest"),
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, marks = read_marks(warehouse_settings.table_path(EVENTS), INGEST, [topic_name])
            if sum(marks.values()) >= 300:
                break
            time.sleep(0.5)
    finally:
        for query in spark.streams.active:
            query.stop()
        runner.join(timeout=60)
    assert landed_records(spark, warehouse_settings) == (300, 300)
    assert typed_once(spark, warehouse_settings) == {"t.test": 300}


def test_a_commit_over_marks_another_process_moved_is_refused(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)
    path = str(warehouse_settings.table_path(EVENTS))
    mine, theirs = Ledger(spark), Ledger(spark)
    assert mine.marks(path, INGEST, ["t"]) == {}
    assert theirs.marks(path, INGEST, ["t"]) == {}
    rows = spark.createDataFrame([], EVENTS_SCHEMA)
    theirs.commit(path, theirs.write(path, rows), INGEST, {("t", 0): 10}, note="theirs")
    with pytest.raises(LedgerMovedError, match=ledger_key(INGEST, "t", 0)):
        mine.commit(path, mine.write(path, rows), INGEST, {("t", 0): 10}, note="mine")
    assert mine.marks(path, INGEST, ["t"]) == {("t", 0): 10}


def _pending_event(
    spark: SparkSession, settings: Settings, event_id: str
) -> tuple[Ledger, str, Any]:
    """A ledger, the events table's path and one written, uncommitted row: all columns
    null but ``id``."""
    ledger, path = _events_ledger(spark, settings)
    return ledger, path, ledger.write(path, _event_row(spark, event_id))


def _events_ledger(spark: SparkSession, settings: Settings) -> tuple[Ledger, str]:
    """A ledger that has read the marks of topic ``t`` in the (new) events table, and the
    table's path."""
    ensure_tables(spark, settings)
    path = str(settings.table_path(EVENTS))
    ledger = Ledger(spark)
    ledger.marks(path, INGEST, ["t"])
    return ledger, path


@pytest.mark.parametrize(
    "change",
    [
        "SET TBLPROPERTIES ('eventlake.test' = '1')",  # the compaction check's risk
        "ADD COLUMNS (`added_later` STRING)",  # a newer eventlake's ensure_tables
        # A table feature too (the protocol changes): appended files need no deletion vector.
        "SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)",
        # Delta lets the append through: an existing column's physical name is its name,
        # so the file written before reads through the mapping.
        "SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')",
    ],
)
def test_a_commit_that_lost_to_a_change_of_the_tables_metadata_lands_its_files_once(
    spark: SparkSession, warehouse_settings: Settings, change: str
) -> None:
    ledger, path, pending = _pending_event(spark, warehouse_settings, "written-before-the-change")
    spark.sql(f"ALTER TABLE delta.`{path}` {change}")
    ledger.commit(path, pending, INGEST, {("t", 0): 10}, note="after the change")
    assert read_marks(Path(path), INGEST, ["t"])[1] == {("t", 0): 10}
    ids = [r["id"] for r in spark.read.format("delta").load(path).collect()]
    assert ids == ["written-before-the-change"]


def _retype_id(spark: SparkSession, path: str) -> None:
    # Another writer replaces the table with one whose `id` is a number.
    spark.range(0).write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(
        path
    )


def _add_a_check_constraint(spark: SparkSession, path: str) -> None:
    # The pending file was not checked against it (its one row would pass).
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT id_known CHECK (id IS NOT NULL)")


@pytest.mark.parametrize("change", [_retype_id, _add_a_check_constraint])
def test_a_commit_whose_files_a_metadata_change_could_make_wrong_is_refused_untouched(
    spark: SparkSession, warehouse_settings: Settings, change: Callable[[SparkSession, str], None]
) -> None:
    ledger, path, pending = _pending_event(spark, warehouse_settings, "written-before")
    change(spark, path)
    with pytest.raises(LedgerConflictError, match="run the job again"):
        ledger.commit(path, pending, INGEST, {("t", 0): 10}, note="lost")
    assert read_marks(Path(path), INGEST, ["t"])[1] == {}
    ids = [r["id"] for r in spark.read.format("delta").load(path).collect()]
    assert "written-before" not in ids


def _event_row(spark: SparkSession, event_id: str) -> DataFrame:
    """One row of the events table's columns, all null but ``id``."""
    return spark.range(1).select(
        *[
            (F.lit(event_id) if f.name == "id" else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in EVENTS_SCHEMA.fields
        ]
    )


def test_rows_into_an_empty_table_are_not_written_once_it_has_rows(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ensure_tables(spark, warehouse_settings)
    path = str(warehouse_settings.table_path(EVENTS))
    version = empty_at(path)
    assert version is not None
    _event_row(spark, "theirs").write.format("delta").mode("append").save(path)

    assert Ledger(spark).write(path, _event_row(spark, "mine"), empty_at=version) is None


@pytest.mark.parametrize("property_set_too", [False, True], ids=["append", "append+property"])
def test_rows_into_an_empty_table_are_refused_when_another_process_adds_rows_first(
    spark: SparkSession, warehouse_settings: Settings, property_set_too: bool
) -> None:
    ledger, path = _events_ledger(spark, warehouse_settings)
    pending = ledger.write(path, _event_row(spark, "mine"), empty_at=empty_at(path))
    _event_row(spark, "theirs").write.format("delta").mode("append").save(path)
    if property_set_too:  # the ledger then renews the commit on the new version
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('eventlake.test' = '1')")

    with pytest.raises(FilesChangedError):
        ledger.commit(path, pending, INGEST, {("t", 0): 1}, note="mine")
    assert [r["id"] for r in spark.read.format("delta").load(path).collect()] == ["theirs"]
    assert read_marks(Path(path), INGEST, ["t"])[1] == {}


def test_rows_into_an_empty_table_commit_with_their_marks_and_say_how_many(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ledger, path = _events_ledger(spark, warehouse_settings)
    rows = _event_row(spark, "a").unionByName(_event_row(spark, "b"))
    pending = ledger.write(path, rows, empty_at=empty_at(path))

    ledger.commit(path, pending, INGEST, {("t", 0): 2}, note="first")

    assert pending.rows() == 2
    assert read_marks(Path(path), INGEST, ["t"])[1] == {("t", 0): 2}
    assert delta_operations(Path(path))[-1] == "WRITE"


def test_marks_never_move_back(spark: SparkSession, warehouse_settings: Settings) -> None:
    ledger, path = _events_ledger(spark, warehouse_settings)
    ledger.commit(path, ledger.write(path, None), INGEST, {("t", 0): 10}, note="ahead")
    ledger.commit(path, ledger.write(path, None), INGEST, {("t", 0): 4}, note="behind")
    assert read_marks(Path(path), INGEST, ["t"])[1] == {("t", 0): 10}


def test_a_table_whose_first_commit_is_not_written_yet_has_no_marks(tmp_path: Path) -> None:
    # Another process is creating it: the log folder exists, its first commit not yet.
    (tmp_path / "state" / "_delta_log").mkdir(parents=True)

    assert read_marks(tmp_path / "state", INGEST, ["t"]) == (-1, {})


def _one_row_table(spark: SparkSession, settings: Settings) -> tuple[Ledger, str, int]:
    """:func:`_events_ledger` after another writer appended one row (id ``old``), and the
    table's version then."""
    ledger, path = _events_ledger(spark, settings)
    _event_row(spark, "old").write.format("delta").mode("append").save(path)
    version = landed_version(path)
    assert version is not None
    return ledger, path, version


def _one_file(path: str) -> dict[str, int]:
    """The table's data file, as the log has it, and its size."""
    table = delta_rs_table(path)
    assert table is not None
    added = table.get_add_actions(flatten=True)
    paths, sizes = added.column("path").to_pylist(), added.column("size_bytes").to_pylist()
    assert len(paths) == 1
    return {paths[0]: sizes[0]}


def test_a_rewrite_replaces_the_files_it_names_with_its_rows_and_marks(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ledger, path, version = _one_row_table(spark, warehouse_settings)

    pending = ledger.rewrite(path, _event_row(spark, "new"), version, _one_file(path))
    ledger.commit(path, pending, INGEST, {("t", 0): 1}, note="rewrite")

    assert [r["id"] for r in spark.read.format("delta").load(path).collect()] == ["new"]
    assert read_marks(Path(path), INGEST, ["t"])[1] == {("t", 0): 1}


def test_a_rewrite_is_not_written_once_files_changed_since_its_version(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    ledger, path, version = _one_row_table(spark, warehouse_settings)
    removed = _one_file(path)
    _event_row(spark, "theirs").write.format("delta").mode("append").save(path)

    assert ledger.rewrite(path, _event_row(spark, "new"), version, removed) is None


@pytest.mark.parametrize("theirs", ["append", "delete"])
def test_a_rewrite_is_refused_when_another_process_changes_the_files_first(
    spark: SparkSession, warehouse_settings: Settings, theirs: str
) -> None:
    ledger, path, version = _one_row_table(spark, warehouse_settings)
    pending = ledger.rewrite(path, _event_row(spark, "new"), version, _one_file(path))
    if theirs == "append":
        _event_row(spark, "theirs").write.format("delta").mode("append").save(path)
    else:
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 'old'")

    with pytest.raises(FilesChangedError):
        ledger.commit(path, pending, INGEST, {("t", 0): 1}, note="mine")
    assert "new" not in [r["id"] for r in spark.read.format("delta").load(path).collect()]
    assert read_marks(Path(path), INGEST, ["t"])[1] == {}


def test_a_rewrite_that_loses_to_a_property_change_commits_on_the_new_version(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    # The compaction check records a risk as a property: no file changed, nothing to redo.
    ledger, path, version = _one_row_table(spark, warehouse_settings)
    pending = ledger.rewrite(path, _event_row(spark, "new"), version, _one_file(path))
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('eventlake.test' = '1')")

    ledger.commit(path, pending, INGEST, {("t", 0): 1}, note="mine")

    assert [r["id"] for r in spark.read.format("delta").load(path).collect()] == ["new"]
    assert read_marks(Path(path), INGEST, ["t"])[1] == {("t", 0): 1}
