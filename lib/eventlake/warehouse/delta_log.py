"""A Delta table's log read without Spark (delta-rs and the commit files): a commit's
actions, the files a table holds, the version at which a table was empty, what ingest
has landed per partition.

Example:
    >>> empty_at("/wh/state/demo.orders")
    0
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote, urlparse

from eventlake.core.locations import Location, LocationLike
from eventlake.storage.store import open_delta_table, read_text
from eventlake.warehouse.names import is_delta_table


def files_hold_the_rows(table: Any) -> bool:
    """Whether a plain Parquet read of the table's data files gives its rows (delta-rs'
    view of the table): not when partition values live in the log, columns are renamed
    (column mapping), or deletion vectors may hide rows."""
    metadata = table.metadata()
    if metadata.partition_columns:
        return False
    if metadata.configuration.get("delta.columnMapping.mode", "none") != "none":
        return False
    return "deletionVectors" not in (table.protocol().reader_features or [])


def commit_actions(path: LocationLike, version: int) -> list[dict[str, Any]] | None:
    """The actions of commit ``version`` of the Delta table at ``path``, read from its log
    file (no Spark); None when the file is gone (log cleanup).

    Example:
        >>> [a for a in commit_actions("/wh/events", 42) if "add" in a][0]["add"]["path"]
        'part-00000-....parquet'
    """
    text = read_text(Location.of(path) / "_delta_log" / f"{version:020d}.json")
    if text is None:
        return None
    lines = text.splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def data_file(table: LocationLike, relative: str) -> str:
    """An ``add`` action's path (a URI, relative to the table unless absolute) as a path
    Spark reads.

    Example:
        >>> data_file("/wh/events", "part-0%3A1.parquet")
        '/wh/events/part-0:1.parquet'
    """
    # A URI ("file:/...", "s3://...") or an absolute path is the file's own name.
    if urlparse(relative).scheme or relative.startswith("/"):
        return relative
    return f"{str(table).rstrip('/')}/{unquote(relative)}"


def delta_rs_table(path: LocationLike, version: int | None = None) -> Any:
    """The Delta table at ``path`` through delta-rs (its latest version, or ``version``),
    or None while there is none: no log folder yet, or one whose first commit is still
    being written (another process is creating the table, e.g. a stream its first state
    table). The one way eventlake opens a table without Spark.

    Example:
        >>> delta_rs_table("/wh/state/new") is None
        True
    """
    from deltalake.exceptions import TableNotFoundError

    if not is_delta_table(Location.of(path)):
        return None
    try:
        return open_delta_table(path, version)
    except TableNotFoundError:
        return None


def empty_at(path: LocationLike) -> int | None:
    """The latest version of the Delta table at ``path`` when it has no data file then
    (a table just created), read from its log with delta-rs; None when it has files,
    when there is no table, or when delta-rs cannot read it.

    Example:
        >>> empty_at(ensure_state_table(spark, settings, "new-topic"))
        0
    """
    from deltalake.exceptions import DeltaError

    try:
        table = delta_rs_table(path)
    except DeltaError:
        return None
    if table is None or table.file_uris():
        return None
    return int(table.version())


def may_hold_topic(path: Location, topic: str) -> bool:
    """Whether the Delta table at ``path`` may hold rows of ``topic``: a data file whose
    ``kafka_topic`` statistics (min, max) span it. Read with delta-rs from the log, no
    Spark; a file without statistics may hold anything.

    Example:
        >>> may_hold_topic(settings.table_path(EVENTS), "orders")
        True
    """
    import pyarrow as pa

    table = delta_rs_table(path)
    if table is None:
        return False  # no table, or its first commit is still being written: nothing in it
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    low, high = "min.kafka_topic", "max.kafka_topic"
    return any(
        a.get(low) is None or a.get(high) is None or a[low] <= topic <= a[high] for a in actions
    )
