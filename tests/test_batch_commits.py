"""eventlake.batch_commits: a replayed batch is found among the commits since the
version recorded before its append; other streams' and earlier commits are not it."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.batch_commits import VERSIONS_FILE, BatchCommits, committed_txn_version
from eventlake.settings import Settings
from eventlake.tables import REJECTS, ensure_tables


def _table(spark: SparkSession, settings: Settings) -> str:
    ensure_tables(spark, settings)
    return str(settings.table_path(REJECTS))


def _append(spark: SparkSession, path: str, options: dict[str, str]) -> None:
    """Append one row of nulls (Delta commits no append without rows)."""
    schema = spark.read.format("delta").load(path).schema
    row = spark.range(1).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema])
    row.write.format("delta").mode("append").options(**options).save(path)


def _run(spark: SparkSession, folder: Path, path: str, app_id: str = "app-a") -> BatchCommits:
    """One run of a stream: opens the record its checkpoint folder holds."""
    folder.mkdir(parents=True, exist_ok=True)
    fresh = not (folder / VERSIONS_FILE).exists()
    return BatchCommits.open(spark, folder, app_id, [path], fresh=fresh)


def test_a_batch_appended_by_the_run_before_is_found_by_the_next_run(
    spark: SparkSession, warehouse_settings: Settings, tmp_path: Path
) -> None:
    path = _table(spark, warehouse_settings)
    crashed = _run(spark, tmp_path, path)
    crashed.before_append(spark, path)
    _append(spark, path, crashed.options(5))

    restarted = _run(spark, tmp_path, path)

    assert restarted.committed(spark, path, 5)


def test_a_batch_not_appended_before_is_new(
    spark: SparkSession, warehouse_settings: Settings, tmp_path: Path
) -> None:
    path = _table(spark, warehouse_settings)
    earlier = _run(spark, tmp_path, path)
    earlier.before_append(spark, path)
    _append(spark, path, earlier.options(4))

    restarted = _run(spark, tmp_path, path)

    assert not restarted.committed(spark, path, 5)


def test_another_streams_commit_of_the_same_batch_id_is_not_ours(
    spark: SparkSession, warehouse_settings: Settings, tmp_path: Path
) -> None:
    path = _table(spark, warehouse_settings)
    _run(spark, tmp_path / "ours", path)
    theirs = _run(spark, tmp_path / "theirs", path, app_id="app-b")
    theirs.before_append(spark, path)
    _append(spark, path, theirs.options(5))

    assert not _run(spark, tmp_path / "ours", path).committed(spark, path, 5)


def test_only_a_runs_first_batch_is_looked_up(
    spark: SparkSession, warehouse_settings: Settings, tmp_path: Path
) -> None:
    path = _table(spark, warehouse_settings)
    run = _run(spark, tmp_path, path)
    run.before_append(spark, path)
    _append(spark, path, run.options(5))
    restarted = _run(spark, tmp_path, path)

    first, later = restarted.committed(spark, path, 5), restarted.committed(spark, path, 5)

    # Spark replays at most the first batch of a run: a later one is not looked up.
    assert (first, later) == (True, False)


def test_a_checkpoint_from_before_the_record_asks_delta_transactions(
    spark: SparkSession, warehouse_settings: Settings, tmp_path: Path
) -> None:
    path = _table(spark, warehouse_settings)
    # An older eventlake appended batch 5 with Delta's idempotent-write options.
    _append(spark, path, {"txnAppId": "app-a", "txnVersion": "5"})

    upgraded = BatchCommits.open(spark, tmp_path, "app-a", [path], fresh=False)

    assert upgraded.versions[path] is None
    assert upgraded.committed(spark, path, 5)


def test_committed_txn_version_is_the_last_idempotent_write_of_that_app(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = _table(spark, warehouse_settings)
    for version in (3, 4):
        _append(spark, path, {"txnAppId": "app-a", "txnVersion": str(version)})

    assert committed_txn_version(spark, path, "app-a") == 4
    assert committed_txn_version(spark, path, "app-b") is None
