"""A state batch applied by rewriting the files it changes, in the commit of its marks.

A state table's rows are the latest event per key (:mod:`eventlake.state`). Delta's MERGE
of a batch's winners costs a fixed ~1.5-2.5 s per batch whatever the batch (the table's
state job, its statistics, planning: docs/benchmarks.md), which decides how large a
``--state`` stream's batches grow. This does what the MERGE does, copy-on-write, through
the ledger (:meth:`eventlake.ledger.commits.Ledger.rewrite`): the files that hold a winner's key
are written again with the winners in place (a tombstone deletes its key), the new keys
are added, and Change Data Feed rows are written as Delta's MERGE writes them
(``update_preimage``/``update_postimage``, ``insert``, ``delete``); the files are listed
from the log with delta-rs, not with Delta's scan, and everything lands in one commit
with the state marks. A commit by another process that adds or removes files first
(OPTIMIZE, a reconcile) makes it commit nothing; the caller then MERGEs.

Example:
    >>> change = rewrite_state(spark, ledger, state_table, winners)
    >>> ledger.commit(state_table, change.pending, STATE, marks, note="batch 7")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.ledger.commits import FilesChangedError, Ledger
from eventlake.warehouse.delta_log import data_file, delta_rs_table, files_hold_the_rows
from eventlake.warehouse.schemas import EVENTS_SCHEMA

#: Delta's Change Data Feed column: null for a table row, else the change's type.
CHANGE_TYPE = "_change_type"


@dataclass(frozen=True)
class Rewrite:
    """A state batch's files written, not committed (``pending``), and what it does."""

    pending: Any
    upserted: int
    deleted: int


def rewrite_state(
    spark: SparkSession, ledger: Ledger, path: str, winners: DataFrame
) -> Rewrite | None:
    """Write the state table at ``path`` with ``winners`` (latest rows per key, the
    table's columns and ``_tombstone``) applied, as files replacing those they change;
    None, with nothing written, when its files cannot be read as they are (delta-rs
    cannot read the table, deletion vectors, column mapping, columns it does not know);
    :class:`eventlake.ledger.commits.FilesChangedError` when they changed since it listed them.
    Either way the caller MERGEs.

    Example:
        >>> rewrite_state(spark, ledger, "/wh/state/customers", winners).upserted
        1804
    """
    from deltalake.exceptions import DeltaError

    try:
        table = delta_rs_table(path)
        if table is None or not files_hold_the_rows(table):
            return None
        if {f.name for f in table.schema().fields} != set(EVENTS_SCHEMA.fieldNames()):
            return None  # columns someone added (or one not added yet): the MERGE keeps them
        version = int(table.version())
        added = table.get_add_actions(flatten=True)
    except DeltaError:
        return None
    logged = added.column("path").to_pylist()
    sizes = added.column("size_bytes").to_pylist()
    # The log's path of each file, by the name Spark gives the file it read.
    by_name = {
        _file_name(data_file(path, p)): (p, int(s)) for p, s in zip(logged, sizes, strict=True)
    }
    names = list(by_name)
    current = (
        spark.read.schema(EVENTS_SCHEMA)
        .parquet(*names)
        .select(*EVENTS_SCHEMA.fieldNames(), F.col("_metadata.file_path").alias("_file"))
        if names
        else None
    )
    upserted, deleted, touched = _changed_files(winners, current)
    removed: dict[str, int] = {}
    for name in touched:
        log_path = by_name.get(_file_name(name))
        if log_path is None:  # a name this module cannot map back: let the MERGE do it
            return None
        removed[log_path[0]] = log_path[1]
    rows = _rewritten_rows(winners, current, set(touched))
    pending = ledger.rewrite(path, rows, version, removed)
    if pending is None:
        raise FilesChangedError(f"{path}: a commit since version {version} added or removed files")
    return Rewrite(pending, upserted, deleted)


def _file_name(uri_or_path: str) -> str:
    """A data file's name as a local path when it is one (Spark reports ``file:`` URIs,
    the log relative percent-encoded paths), else the URI itself."""
    parsed = urlparse(uri_or_path)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return uri_or_path


def _changed_files(winners: DataFrame, current: DataFrame | None) -> tuple[int, int, list[str]]:
    """(winners that upsert, keys deleted, files holding a winner's key): one Spark job."""
    keys = winners.select("kafka_key", "_tombstone")
    if current is None:
        found = keys.withColumn("_file", F.lit(None).cast("string"))
    else:
        found = keys.join(current.select("kafka_key", "_file"), "kafka_key", "left")
    counts = (
        found.groupBy("_file")
        .agg(
            F.count_if(~F.col("_tombstone")).alias("upserts"),
            F.count_if(F.col("_tombstone")).alias("tombstones"),
        )
        .collect()
    )
    upserted = sum(int(row["upserts"]) for row in counts)
    deleted = sum(int(row["tombstones"]) for row in counts if row["_file"] is not None)
    return upserted, deleted, [row["_file"] for row in counts if row["_file"] is not None]


def _rewritten_rows(winners: DataFrame, current: DataFrame | None, touched: set[str]) -> DataFrame:
    """The touched files' rows with the winners applied, the new keys, and the Change Data
    Feed of it, as Delta's MERGE writes it."""
    columns = EVENTS_SCHEMA.fieldNames()
    new = winners.select(*columns, "_tombstone", F.lit(True).alias("_new"))
    if current is None or not touched:
        old = new.where(F.lit(False)).select(*columns, F.lit(True).alias("_old"))
    else:
        old = current.where(F.col("_file").isin(sorted(touched))).select(
            *columns, F.lit(True).alias("_old")
        )
    both = new.alias("s").join(
        old.alias("t"), F.col("s.kafka_key") == F.col("t.kafka_key"), "full_outer"
    )

    def row(side: str, change: str | None) -> str:
        fields = ", ".join(f"'{c}', {side}.`{c}`" for c in columns)
        kind = "CAST(NULL AS STRING)" if change is None else f"'{change}'"
        return f"named_struct({fields}, '{CHANGE_TYPE}', {kind})"

    has_new = "coalesce(s._new, false)"
    has_old = "coalesce(t._old, false)"
    upsert = f"({has_new} AND NOT s._tombstone)"
    deletes = f"({has_new} AND s._tombstone AND {has_old})"
    candidates = [
        (upsert, row("s", None)),
        (f"NOT {has_new}", row("t", None)),  # a row no winner touches, kept as it is
        (f"{upsert} AND {has_old}", row("t", "update_preimage")),
        (f"{upsert} AND {has_old}", row("s", "update_postimage")),
        (f"{upsert} AND NOT {has_old}", row("s", "insert")),
        (deletes, row("t", "delete")),
    ]
    # One SQL expression: built column by column in Python it took ~0.4 s of py4j calls
    # and analysis per batch, as much as writing a small table's files.
    each = ", ".join(f"CASE WHEN {when} THEN {value} END" for when, value in candidates)
    return both.selectExpr(f"inline(filter(array({each}), r -> r IS NOT NULL))")
