"""The rows a Delta table gained since a version: a check run's slice.

An incremental run reads only the data files that the commits after the last checked
version added (:func:`new_data_files`, read from the Delta log); see :func:`read_slice`
for why versions and not ``ingested_at``, and for the fallbacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.core.locations import Location
from eventlake.ledger.marks import landed_version
from eventlake.quality.request import QualityError
from eventlake.spark.rows import local_rows
from eventlake.storage.store import exists
from eventlake.warehouse.delta_log import commit_actions, data_file, delta_rs_table
from eventlake.warehouse.names import is_delta_table
from eventlake.warehouse.tables import rows_as_of, table_schema


@dataclass(frozen=True)
class TableSlice:
    """Rows of a Delta table to check, and which versions they come from.

    ``after`` is the last version checked before (exclusive); None means the whole table.
    """

    frame: DataFrame
    end_version: int
    after: int | None = None
    note: str = ""

    def describe(self, name: str) -> str:
        """E.g. ``events v4..v9`` or ``events full@v9``."""
        if self.after is None:
            text = f"{name} full@v{self.end_version}"
        elif self.after >= self.end_version:
            text = f"{name} v{self.end_version} (nothing new)"
        else:
            text = f"{name} v{self.after + 1}..v{self.end_version}"
        return f"{text} ({self.note})" if self.note else text


def new_data_files(commits: Iterable[Sequence[Mapping[str, Any]]]) -> list[str]:
    """Data files (log paths) holding the rows that these Delta commits added.

    Commits come oldest first, each as its list of actions:

    * ``add`` with ``dataChange`` true and no deletion vector: new rows (append, MERGE insert);
    * ``add`` with ``dataChange`` false: OPTIMIZE moved rows already counted: skipped;
    * ``add`` with a deletion vector: an existing file that lost rows: no new rows;
    * ``remove`` with ``dataChange`` true: its rows are gone (DELETE, overwrite), unless the
      same commit re-adds the file with a deletion vector (the remaining rows live on).

    Example:
        >>> new_data_files([[{"add": {"path": "a.parquet", "dataChange": True}}]])
        ['a.parquet']
    """
    files: dict[str, None] = {}  # an ordered set
    for actions in commits:
        readded = {
            a["add"]["path"] for a in actions if "add" in a and a["add"].get("deletionVector")
        }
        for action in actions:
            if "add" in action:
                add = action["add"]
                if add.get("dataChange", True) and not add.get("deletionVector"):
                    files[add["path"]] = None
            elif "remove" in action:
                remove = action["remove"]
                if remove.get("dataChange", True) and remove["path"] not in readded:
                    files.pop(remove["path"], None)
    return list(files)


def table_as_of(spark: SparkSession, table: Location, version: int) -> DataFrame:
    """The whole Delta table at ``table`` as of ``version``: its data files read as
    Parquet when they hold its rows (:func:`eventlake.warehouse.tables.rows_as_of`: no Spark jobs
    for Delta's state; the schema from the log, with delta-rs), else through Delta.

    Example:
        >>> table_as_of(spark, settings.table_path("events"), 9).count()
        1000000
    """
    schema = table_schema(table, version)
    rows = None if schema is None else rows_as_of(spark, table, version, schema)
    return rows if rows is not None else _through_delta(spark, table, version)


def _through_delta(spark: SparkSession, table: Location, version: int) -> DataFrame:
    """The table as of ``version`` through Delta's own scan (a Delta command: the
    fallbacks only)."""
    return spark.read.format("delta").option("versionAsOf", version).load(str(table))


def read_slice(spark: SparkSession, table: Location, after: int | None) -> TableSlice:
    """The rows a Delta table gained after version ``after`` (None: the whole table).

    Why versions and not ``ingested_at``: ingest jobs for different topics commit
    concurrently, so a batch stamped earlier can commit after a later one and would fall
    behind an ``ingested_at`` high-water mark; commit versions have no such gap. The
    events table keeps change data off, so the slice is taken from the Delta log: the
    data files added by commits ``after+1 .. latest`` (:func:`new_data_files`) are read,
    and nothing else, so an incremental check costs what the new data costs.

    Fallbacks, named in the slice's note: expired log entries or vacuumed files give the
    whole table; partitioned or column-mapped tables are read through Delta, filtered to
    the new files by ``_metadata.file_name``.

    Example:
        >>> read_slice(spark, settings.table_path("events"), after=4).describe("events")
        'events v5..v9'
    """
    if not is_delta_table(table):
        raise QualityError(f"No Delta table at {table}.")
    # From the log, without a Spark job (the table's history is one).
    end = landed_version(table) or 0
    # From the log too: Delta's scan is read only where the files cannot be (fallbacks).
    schema = table_schema(table, end)
    if after is None or schema is None:
        return TableSlice(table_as_of(spark, table, end), end)
    if after >= end:
        return TableSlice(local_rows(spark, [], schema), end, after)
    found = [commit_actions(table, version) for version in range(after + 1, end + 1)]
    commits = [c for c in found if c is not None]
    if len(commits) < len(found):
        whole = table_as_of(spark, table, end)
        return TableSlice(whole, end, note=f"log of v{after + 1} expired: whole table")
    files = new_data_files(commits)
    if not files:
        return TableSlice(local_rows(spark, [], schema), end, after)
    # From the log with delta-rs: the table's detail through Spark is a job of its own.
    metadata = delta_rs_table(table).metadata()
    partitioned = bool(metadata.partition_columns)
    mapped = metadata.configuration.get("delta.columnMapping.mode", "none") != "none"
    if partitioned or mapped:
        names = [Path(unquote(urlparse(f).path)).name for f in files]
        new_rows = _through_delta(spark, table, end).where(F.col("_metadata.file_name").isin(names))
        return TableSlice(new_rows, end, after)
    paths = [data_file(table, f) for f in files]
    if not all(exists(p) for p in paths if not urlparse(p).scheme):
        whole = table_as_of(spark, table, end)
        return TableSlice(whole, end, note="files of the slice were vacuumed: whole table")
    # Plain Parquet files of an unpartitioned table without column mapping: reading them
    # directly is what Delta's scan does for them, minus listing the other files.
    return TableSlice(spark.read.schema(schema).parquet(*paths), end, after)
