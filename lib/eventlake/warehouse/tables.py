"""The warehouse's Delta tables, in one place: names, paths, schemas, creation, and the
filters every reader needs.

* ``events``: one row per valid CloudEvent (:data:`EVENTS_SCHEMA`).
* ``rejects``: every record read that is not a valid CloudEvent, raw, with a reason
  (:data:`REJECTS_SCHEMA`); ingest's and republish's rejects, told apart by
  ``rejected_by`` (:func:`rejected_by_ingest`).
* ``state/<topic>``: the current state of a compacted topic, one row per key, in the
  events table's shape (:func:`state_path`; the logic is :mod:`eventlake.state`).
* ``dq_results``: the data-quality checks' results (:data:`DQ_RESULTS_SCHEMA`).

The schemas are written out here rather than planned from the decoder (a second in
every process); a test holds them equal to what the decoder returns.

Writers that can lose a commit race to another writer (two ingests creating the tables
at once, a state MERGE against OPTIMIZE) go through :func:`retry_conflicts`.

Example:
    >>> ensure_tables(spark, settings)
    >>> spark.read.format("delta").load(str(settings.table_path(EVENTS))).printSchema()"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    StructType,
)

from eventlake.core.errors import EventlakeError
from eventlake.core.locations import LocationLike
from eventlake.core.settings import Settings
from eventlake.spark.rows import computed_once, local_rows, plain_row
from eventlake.storage.store import append_to_delta_table, create_delta_table
from eventlake.warehouse.conflicts import retry_conflicts
from eventlake.warehouse.delta_log import (
    commit_actions,
    data_file,
    delta_rs_table,
    files_hold_the_rows,
)
from eventlake.warehouse.names import (
    EVENTS,
    INGEST_JOB,
    REJECTS,
    delta_path_sql,
    is_delta_table,
)
from eventlake.warehouse.schemas import (
    INGEST_TABLES,
    PLAIN_ENCODED_COLUMNS,
    parquet_column_paths,
)

_log = logging.getLogger(__name__)

#: What Delta says when another writer is creating the same table: its log folder
#: exists, its first commit not yet.
_CREATION_RACE_CONDITIONS: Final = frozenset(
    {"DELTA_TABLE_NOT_FOUND", "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"}
)


class TableCreationRaceError(EventlakeError, RuntimeError):
    """Creating a table found its location half-created, most likely by another writer
    creating it at the same moment; the message is Delta's."""


def merge_source(rows: DataFrame) -> DataFrame:
    """``rows`` computed once and held on local disk as the source of a MERGE.

    Delta plans a MERGE source again on its own, without Spark's cache, so a source
    derived from the (cached) decoded batch would run the decoder once more, with the
    filters pushed down into it: Spark inlines the decoder's shared sub-expressions at
    every use and compiles a huge expression tree (minutes for ten records). A
    checkpointed source is read as it is. On disk, not in the JVM's heap: a state
    batch's winners are whole events (~1 KB each), and held in memory 480,000 of them
    took the driver of an ``ingest --state`` from 1.97 GB to 2.67 GB at its peak, for
    the same time (docs/benchmarks.md). Free it with :func:`eventlake.spark.rows.release`.

    Example:
        >>> source = merge_source(to_events(decoded))
        >>> DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "...")
    """
    return computed_once(rows, on_disk=True)


def rows_added_by(
    spark: SparkSession, path: str, versions: Sequence[int], schema: StructType
) -> DataFrame | None:
    """The rows that the commits ``versions`` of the Delta table at ``path`` added, read
    from the data files their ``add`` actions name (the Delta log protocol); None when
    they cannot be read that way (column mapping renames the files' columns, a deletion
    vector hides rows): the caller then computes them again.

    Blind appends' rows as written, without a scan of the rest of the table: Delta's
    reader prunes files by column statistics, not by the commit that added them. A file
    that a later OPTIMIZE replaced is still there (VACUUM keeps it for days) and still
    holds the rows.

    Example:
        >>> rows_added_by(spark, events_path, [42], EVENTS_SCHEMA).count()
        1000000
    """
    # Read from the log with delta-rs and the file system, as the ledger reads its marks:
    # through Spark, the table's detail and the commit's text were Spark jobs of every
    # state batch.
    table = delta_rs_table(path)
    if table is None or not files_hold_the_rows(table):
        return None
    adds: list[dict[str, Any]] = []
    for version in versions:
        actions = commit_actions(path, version)
        if actions is None:
            return None
        adds += [action["add"] for action in actions if "add" in action]
    if any(add.get("deletionVector") for add in adds):
        return None
    if not adds:
        return local_rows(spark, [], schema)
    files = [data_file(path, add["path"]) for add in adds]
    return spark.read.schema(schema).parquet(*files)


def rows_as_of(
    spark: SparkSession,
    path: LocationLike,
    version: int,
    schema: StructType,
    *,
    since: tuple[str, datetime] | None = None,
) -> DataFrame | None:
    """The rows of the Delta table at ``path`` as of ``version``, read from the data files
    that version holds (delta-rs lists them); with ``since`` (a timestamp column and a
    time), only the rows from that time on, and files whose statistics end before it are
    not read. None when the files cannot be read that way (see :func:`rows_added_by`):
    the caller reads through Delta.

    Through Spark, a scan of a version the process has not read yet costs Spark jobs of
    its own (Delta's state of the table, its files' statistics): ~2 s in a fresh process.

    Example:
        >>> rows_as_of(spark, events_path, 42, EVENTS_SCHEMA,
        ...            since=("kafka_timestamp", datetime(2026, 11, 19, tzinfo=UTC))).count()
        1000000
    """
    from deltalake.exceptions import DeltaError

    try:
        table = delta_rs_table(path, version)
        if table is None or not files_hold_the_rows(table):
            return None
        added = table.get_add_actions(flatten=True)
    except DeltaError:
        # A table feature delta-rs does not read (it names it): Delta's own scan does.
        return None
    paths = added.column("path").to_pylist()
    ended: set[int] = set()  # files whose rows all come before since
    if since is not None and f"max.{since[0]}" in added.column_names:
        # Delta keeps a timestamp's statistics to the millisecond: a second's margin. A
        # naive time is local time, as PySpark gives it.
        after = since[1].astimezone(UTC) - timedelta(seconds=1)
        newest = added.column(f"max.{since[0]}").to_pylist()
        ended = {i for i, last in enumerate(newest) if last is not None and last < after}
    # As the log writes them: percent-encoded, relative to the table.
    files = [data_file(path, p) for i, p in enumerate(paths) if i not in ended]
    if not files:
        return local_rows(spark, [], schema)
    rows = spark.read.schema(schema).parquet(*files)
    return rows if since is None else rows.where(F.col(since[0]) >= F.lit(since[1]))


#: Session confs of a MERGE whose source :func:`merge_source` made: Delta would otherwise
#: materialize it a second time (its ``auto`` mode checkpoints every source that is not
#: a Delta scan), writing the whole batch to local disk again for nothing.
MATERIALIZED_SOURCE_CONFS: Final = {"spark.databricks.delta.merge.materializeSource": "none"}


#: Commits between two Delta checkpoints of the tables eventlake creates (Delta's default
#: is 10). Delta writes a checkpoint inside the commit that reaches the interval, and
#: that commit is a stream's batch: at 1,000 events/s with a 1 s trigger every tenth
#: batch took 1.5-4 s against ~0.5 s, and the 1,000/s latency scenario's p95 went from
#: 2.6 s to 1.6 s with 100 (docs/benchmarks.md). A reader replays at most this many
#: JSON commits after the last checkpoint. Existing tables keep theirs (docs/tables.md
#: says how to change it): setting it here would be a metadata commit at every older
#: table's next run.
CHECKPOINT_INTERVAL: Final = 100


def ensure_table(
    spark: SparkSession,
    path: str,
    schema: StructType,
    *,
    change_data_feed: bool = False,
    properties: Mapping[str, str] | None = None,
) -> None:
    """Create the Delta table at ``path`` when it does not exist yet (a checkpoint every
    :data:`CHECKPOINT_INTERVAL` commits); add the columns of ``schema`` that a table made
    by an older eventlake lacks (e.g. ``rejected_by``).

    Safe against another writer creating the same table at the same moment (the ingest
    DAG's mapped tasks, one per topic, on a fresh warehouse): the loser of that race
    tries again and finds the table there. ``properties``: table properties a new table
    gets (a table that exists keeps its own).

    Example:
        >>> ensure_table(spark, str(settings.table_path(REJECTS)), REJECTS_SCHEMA)
    """
    from delta.exceptions import MetadataChangedException, ProtocolChangedException
    from delta.tables import DeltaTable

    if _has_every_column(path, schema):
        # Nothing to create or add: no Delta command, whose first in a process loads
        # the table's snapshot through Spark (~1 s; a run with nothing new needs none).
        return
    table_properties = _new_table_properties(schema, change_data_feed, properties)

    def ensure() -> None:
        try:
            builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(schema)
            for key, value in table_properties.items():
                builder = builder.property(key, value)
            table = builder.execute()
        except AnalysisException as error:
            if error.getCondition() not in _CREATION_RACE_CONDITIONS:
                raise
            raise TableCreationRaceError(str(error)) from error
        present = set(table.toDF().columns)
        missing = [field for field in schema.fields if field.name not in present]
        if missing:
            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
            spark.sql(f"ALTER TABLE {delta_path_sql(path)} ADD COLUMNS ({columns})")

    # Both racing writers create version 0: the loser gets ProtocolChanged/MetadataChanged,
    # or finds the other's log folder before its first commit (TableCreationRace).
    # Repeating is safe: once the table exists createIfNotExists leaves it as it is, and
    # columns already added are not added again.
    retry_conflicts(
        ensure,
        what=f"create table {path}",
        retryable=(ProtocolChangedException, MetadataChangedException, TableCreationRaceError),
        attempts=5,
    )


#: The table property that turns Parquet's dictionary off for one column: Delta hands a
#: table's properties to the Parquet writer of every write (Spark's, Delta's own, the
#: ledger's), whichever job writes.
NO_DICTIONARY_PROPERTY: Final = "parquet.enable.dictionary#{column}"


def _new_table_properties(
    schema: StructType, change_data_feed: bool, properties: Mapping[str, str] | None
) -> dict[str, str]:
    """The table properties :func:`ensure_table` gives a table of ``schema`` it creates:
    the checkpoint interval, the Change Data Feed, Parquet's dictionary off for the
    :data:`~eventlake.warehouse.schemas.PLAIN_ENCODED_COLUMNS` it has.

    Example:
        >>> properties = _new_table_properties(REJECTS_SCHEMA, False, None)
        >>> properties["parquet.enable.dictionary#kafka_key"]
        'false'
    """
    present = parquet_column_paths(schema)
    return {
        "delta.enableChangeDataFeed": str(change_data_feed).lower(),
        "delta.checkpointInterval": str(CHECKPOINT_INTERVAL),
        **{
            NO_DICTIONARY_PROPERTY.format(column=column): "false"
            for column in PLAIN_ENCODED_COLUMNS
            if column in present
        },
        **(properties or {}),
    }


def _created_without_spark(path: str, schema: StructType, properties: Mapping[str, str]) -> bool:
    """Create the missing table at ``path`` through delta-rs; whether it now has every
    column. False when delta-rs could not (another writer committed version 0 first, a
    type delta-rs does not write): a run that writes makes it through Delta then."""
    from deltalake.exceptions import DeltaError

    try:
        create_delta_table(path, schema.json(), properties)
    except DeltaError as error:
        _log.debug("%s not created through delta-rs: %s", path, error)
        return False
    return _has_every_column(path, schema)


def _has_every_column(path: str, schema: StructType) -> bool:
    """Whether the Delta table at ``path`` exists with every column of ``schema``, read
    from its log with delta-rs; False when it cannot tell (no table, a table feature
    delta-rs does not read): :func:`ensure_table` then asks Delta."""
    from deltalake.exceptions import DeltaError

    try:
        table = delta_rs_table(path)
        present = set() if table is None else {f.name for f in table.schema().fields}
    except DeltaError:
        return False
    return all(field.name in present for field in schema.fields)


def ensure_tables(spark: SparkSession, settings: Settings) -> set[str]:
    """Create the events and rejects tables where they do not exist yet (see
    :func:`ensure_table`).

    Returns the names of the tables that had no Delta log before: those are empty, which
    spares callers a first read of them (seconds in a fresh process).

    Example:
        >>> ensure_tables(spark, settings)
        {'events', 'rejects'}
    """
    new = {name for name in INGEST_TABLES if not is_delta_table(settings.table_path(name))}
    for name, schema in INGEST_TABLES.items():
        ensure_table(spark, str(settings.table_path(name)), schema)
    return new


def create_missing_tables(settings: Settings) -> set[str]:
    """Create the events and rejects tables that do not exist yet through delta-rs alone
    (milliseconds), for a run that ends without starting Spark because its topics are
    empty; the names of those created. A table delta-rs could not create is left to
    :func:`ensure_tables`.

    Not for a run that writes: Delta's first write to a table delta-rs made (its version
    0 has no checksum file) costs more than Delta making it: an ingest of 2,000 records
    into a new warehouse took 11.5-11.7 s so, 9.4-10.2 s with Delta's own.

    Example:
        >>> create_missing_tables(settings)
        {'events', 'rejects'}
    """
    created = set()
    for name, schema in INGEST_TABLES.items():
        path = settings.table_path(name)
        properties = _new_table_properties(schema, False, None)
        if not is_delta_table(path) and _created_without_spark(str(path), schema, properties):
            created.add(name)
    return created


def table_schema(path: LocationLike, version: int | None = None) -> StructType | None:
    """The schema of the Delta table at ``path`` (its latest version, or ``version``), read
    from its log with delta-rs; None while there is no table, or when delta-rs cannot
    read it (a table feature it does not know: the caller reads through Delta). Delta
    keeps the schema as Spark's own JSON, so this is what Spark's scan would give, without
    the Delta command (the first in a process costs ~1 s).

    Example:
        >>> table_schema(settings.table_path(EVENTS)) == EVENTS_SCHEMA
        True
    """
    from deltalake.exceptions import DeltaError

    try:
        table = delta_rs_table(path, version)
    except DeltaError:
        return None
    if table is None:
        return None
    return StructType.fromJson(json.loads(table.schema().to_json()))


def append_rows(
    path: LocationLike, rows: Sequence[Sequence[Any] | Mapping[str, Any]], schema: StructType
) -> None:
    """Append a few rows held by the driver (tuples or dicts in ``schema``'s order) to the
    Delta table at ``path`` with delta-rs, creating it with ``schema`` when missing. For
    small tables of results: no Spark job, and no Delta command through Spark, whose first
    in a process costs ~2 s (the quality check ran no other). Spark reads the table as it
    reads any Delta table.

    Example:
        >>> append_rows(settings.table_path(DQ_RESULTS), [("3f2a", ...)], DQ_RESULTS_SCHEMA)
    """
    if not rows:
        return
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema)
    table = pa.Table.from_pylist([plain_row(row, schema) for row in rows], schema=arrow_schema)
    append_to_delta_table(path, table)


def rejected_by_ingest() -> Column:
    """The rows of ``rejects`` that ingest wrote (republish writes its own rejects of the
    same records there too). Rows from before ``rejected_by`` existed were ingest's.

    Example:
        >>> rejects.where(rejected_by_ingest()).count()
        3
    """
    return F.coalesce(F.col("rejected_by"), F.lit(INGEST_JOB)) == INGEST_JOB


def ingested_next_offsets(
    spark: SparkSession, settings: Settings, topic: str | None = None
) -> dict[str, dict[int, int]]:
    """Per topic (only ``topic`` when given) and partition, the offset after the last
    record ingest landed, in events or (its own) rejects.

    Example:
        >>> ingested_next_offsets(spark, settings, "orders")
        {'orders': {0: 1200, 1: 1187}}
    """
    frames = []
    for name in (EVENTS, REJECTS):
        path = settings.table_path(name)
        if not is_delta_table(path):
            continue
        frame = spark.read.format("delta").load(str(path))
        if name == REJECTS:
            frame = frame.where(rejected_by_ingest())
        if topic is not None:
            frame = frame.where(F.col("kafka_topic") == topic)
        frames.append(frame.select("kafka_topic", "kafka_partition", "kafka_offset"))
    if not frames:
        return {}
    union = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    rows = (
        union.groupBy("kafka_topic", "kafka_partition")
        .agg(F.max("kafka_offset").alias("last"))
        .collect()
    )
    offsets: dict[str, dict[int, int]] = {}
    for row in rows:
        offsets.setdefault(row["kafka_topic"], {})[int(row["kafka_partition"])] = row["last"] + 1
    return offsets
