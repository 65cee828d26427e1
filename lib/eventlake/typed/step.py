"""The typed tables kept current from ``events``, exactly once: each typed table holds
ledger marks of its own (job ``typed``, per topic and partition: the events below them
are in it, or not of its type), moved in the commit that adds its rows.

One step, for some topics: the events table as of one version (and its ingest marks,
the step's ends); the events above the lowest typed mark of each partition, read twice:
once for the types present and their data's fields (:mod:`eventlake.typed.shapes`), once
to stage every type's columns (:mod:`eventlake.typed.staging`); each type's rows above
its table's own marks, committed with the marks moved to the ends. A type seen for the
first time gets its table, a field seen for the first time a column (schema evolution),
both before any row is written. Every table that holds
marks for these topics moves them, with no rows when it has none: so a quiet type never
holds the next step back.

Why exactly once: a commit is refused when another process moved the same table's marks
since this one read them (:class:`eventlake.ledger.commits.LedgerMovedError`; the step
runs again from the new marks), and a crash between two types' commits leaves the
committed ones' marks moved, so the next step skips their rows. No event lands below a
partition's ingest mark later (:mod:`eventlake.ingest.batch`), so a type first seen above
the lowest typed mark has no event below it.

Example:
    >>> update_typed_tables(spark, settings, ledger, ["orders"], note="batch 7").line()
    'typed: com.example.order.paid +120, com.example.order.shipped +80 seconds=4.6'
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from eventlake.core.errors import TryAgainLater
from eventlake.core.locations import Location
from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.ledger.commits import Ledger, LedgerMovedError, unlanded
from eventlake.ledger.marks import INGEST, TYPED, Marks, read_marks
from eventlake.storage.store import exists, names, remove_tree
from eventlake.typed.names import EVENT_TYPE_PROPERTY, frontier, table_event_type, typed_tables
from eventlake.typed.shapes import type_shapes
from eventlake.typed.staging import stage
from eventlake.typed.tables import (
    LEADING_COLUMNS,
    TRAILING_COLUMNS,
    add_columns_sql,
    added_fields,
    new_table_path,
    row_columns,
    typed_schema,
)
from eventlake.views.event_types import columns_of
from eventlake.warehouse.catalog import register_tables
from eventlake.warehouse.conflicts import retry_conflicts
from eventlake.warehouse.names import EVENTS, TYPED_FOLDER, delta_path_sql
from eventlake.warehouse.tables import ensure_table, table_schema

_log = progress_log(__name__)

#: Where, under the warehouse, a step writes the new events by type while it runs.
STAGING_FOLDER: Final = "_typed_staging"


#: The columns of events a typed table has as they are.
_STAGED_COLUMNS: Final = (*LEADING_COLUMNS, *TRAILING_COLUMNS)


class TypedTableTakenError(TryAgainLater, RuntimeError):
    """Another process made a typed table of another type at the same path a moment
    before this one; the step runs again and picks the next free path."""


@dataclass
class TypedResult:
    """What one step added: per event type its rows, and the tables and columns new."""

    rows: dict[str, int] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    columns: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        """The step for a person.

        Example:
            >>> TypedResult({"a.b": 3}, created=["a.b"]).line()
            'typed: a.b +3 (new table) seconds=0.0'
        """
        if not self.rows:
            return f"typed: nothing new seconds={self.seconds:.1f}"
        parts = []
        for event_type, n in sorted(self.rows.items()):
            notes = ["new table"] if event_type in self.created else []
            if self.columns.get(event_type):
                notes.append("new columns " + ", ".join(self.columns[event_type]))
            parts.append(f"{event_type} +{n}" + (f" ({'; '.join(notes)})" if notes else ""))
        return f"typed: {', '.join(parts)} seconds={self.seconds:.1f}"


def update_typed_tables(
    spark: SparkSession,
    settings: Settings,
    ledger: Ledger,
    topics: list[str],
    *,
    note: str,
    batch_id: int | None = None,
) -> TypedResult:
    """Bring every typed table up to where ``events`` stands for ``topics`` (see the
    module); run under the topics' leases. A step that another process's overtook is run
    again from the new marks.

    Example:
        >>> update_typed_tables(spark, settings, ledger, ["orders"], note="bounded run").rows
        {'com.example.order.paid': 120}
    """
    started = time.monotonic()

    def attempt() -> TypedResult:
        return _step(spark, settings, ledger, sorted(set(topics)), note, batch_id)

    result = retry_conflicts(
        attempt,
        what=f"typed tables of {', '.join(sorted(set(topics)))}",
        retryable=(LedgerMovedError, TypedTableTakenError),
    )
    result.seconds = time.monotonic() - started
    if result.created and settings.metastore_uri:
        made = typed_tables(settings)
        tables = [(f"{TYPED_FOLDER}/{made[t].name}", made[t]) for t in result.created if t in made]
        for name in register_tables(spark, settings, tables):
            _log.info("catalog: registered %s", name)
    return result


def _step(
    spark: SparkSession,
    settings: Settings,
    ledger: Ledger,
    topics: list[str],
    note: str,
    batch_id: int | None,
) -> TypedResult:
    result = TypedResult()
    events_path = str(settings.table_path(EVENTS))
    version, ends = read_marks(events_path, INGEST, topics)
    if version < 0 or not ends:
        return result
    tables = typed_tables(settings)
    table_marks = {t: ledger.marks(str(p), TYPED, topics) for t, p in tables.items()}
    low = frontier(ends, table_marks)
    if all(low[key] >= end for key, end in ends.items()):
        return result
    # The tables of these topics behind the ends: each moves its marks, rows or not.
    behind = {
        t for t, m in table_marks.items() if m and any(m.get(k, 0) < e for k, e in ends.items())
    }
    events = spark.read.format("delta").option("versionAsOf", version).load(events_path)
    new = events.where(F.col("kafka_topic").isin(topics)).where(unlanded(low))
    staging = settings.warehouse / STAGING_FOLDER / f"step-{int(time.time())}-{uuid.uuid4().hex}"
    remove_stale_staging(settings)
    try:
        return _write_types(
            spark, settings, ledger, new, staging, tables, behind, topics, ends, (note, batch_id)
        )
    finally:
        if exists(staging):
            remove_tree(staging)


def remove_stale_staging(settings: Settings, older_than_seconds: float = 3600.0) -> None:
    """Remove what steps that crashed left in the staging folder: folders named
    ``step-<epoch seconds>-<id>`` older than an hour (a step beside this one may be
    using its own).

    Example:
        >>> remove_stale_staging(settings)
    """
    folder = settings.warehouse / STAGING_FOLDER
    for name in names(folder):
        _, started, _ = [*name.split("-", 2), "", ""][:3]
        if started.isdigit() and time.time() - int(started) > older_than_seconds:
            remove_tree(folder / name)


def _write_types(
    spark: SparkSession,
    settings: Settings,
    ledger: Ledger,
    new: DataFrame,
    staging: Location,
    tables: dict[str, Location],
    behind: set[str],
    topics: list[str],
    ends: Marks,
    run: tuple[str, int | None],
) -> TypedResult:
    """Each type's rows of ``new`` into its table, and the marks of every table
    ``behind`` moved to ``ends``: one pass finds the types present and their data's
    fields (:func:`~eventlake.typed.shapes.type_shapes`); a new type's table is made from
    them (and its newest event's dataschema), a new field's column added; then, with
    more than one type, one pass stages every type's columns
    (:mod:`eventlake.typed.staging`) and each type is written from there."""
    result = TypedResult()
    shapes = type_shapes(new)
    present = sorted(shapes)
    fresh = columns_of(
        {t: shapes[t].fields for t in present if t not in tables},
        {t: shapes[t].dataschema for t in present},
        fetch_dataschemas=settings.fetch_dataschemas,
    )
    for event_type in present:
        if event_type in fresh:
            path = new_table_path(settings, event_type)
            _prepare(spark, path, event_type, fresh[event_type].fields, result)
            tables[event_type] = path
        else:
            fields = shapes[event_type].fields
            added = _prepare(spark, tables[event_type], event_type, fields, result)
            if added:
                result.columns[event_type] = added
    schemas = {t: _schema(tables[t]) for t in present}
    # One type alone is read straight from the events: a staging pass would add a write.
    staged = stage(spark, new, schemas, staging, _STAGED_COLUMNS) if len(present) > 1 else None
    for event_type in sorted(set(present) | behind):
        path = tables[event_type]
        rows = None
        counted = Observation()
        if event_type in present:
            schema = schemas[event_type]
            if staged is not None:
                typed = staged.rows(event_type, schema)
            else:
                typed = new.where(F.col("type") == event_type).selectExpr(*row_columns(schema))
            rows = typed.where(unlanded(ledger.marks(str(path), TYPED, topics))).observe(
                counted, F.count(F.lit(1)).alias("rows")
            )
        pending = ledger.write(str(path), rows)
        ledger.commit(str(path), pending, TYPED, ends, note=run[0], batch=run[1])
        if rows is not None:
            result.rows[event_type] = int(counted.get.get("rows", 0))
    return result


def _schema(path: Location) -> StructType:
    schema = table_schema(path)
    if schema is None:
        raise TypedTableTakenError(f"{path} is not there any more; trying again")
    return schema


def _prepare(
    spark: SparkSession,
    path: Location,
    event_type: str,
    fields: dict[str, str],
    result: TypedResult,
) -> list[str]:
    """The typed table at ``path`` made (a new type) or given the columns of the fields
    it lacks; the columns added. Raises :class:`TypedTableTakenError` when another type's
    table took ``path`` meanwhile."""
    schema = table_schema(path)
    if schema is None:
        ensure_table(
            spark,
            str(path),
            typed_schema(fields),
            properties={EVENT_TYPE_PROPERTY: event_type},
        )
        if table_event_type(path) != event_type:
            raise TypedTableTakenError(
                f"{path} was made for another event type a moment ago; trying the next name"
            )
        result.created.append(event_type)
        return []
    added = added_fields(schema, fields)
    if not added:
        return []

    def add() -> None:
        # Another process may add the same columns at the same moment: add only those
        # still missing, each attempt reading the table's schema again.
        missing = added_fields(table_schema(path), fields)
        if missing:
            spark.sql(add_columns_sql(delta_path_sql(path), missing))

    from delta.exceptions import ConcurrentTransactionException, MetadataChangedException

    retry_conflicts(
        add,
        what=f"new columns of {path}",
        retryable=(MetadataChangedException, ConcurrentTransactionException),
    )
    return [f.name for f in added]


def typed_step(
    spark: SparkSession,
    settings: Settings,
    ledger: Ledger,
    topics: list[str],
    *,
    note: str,
    batch_id: int | None = None,
) -> TypedResult | None:
    """:func:`update_typed_tables` when ``settings.typed_tables`` is on (None when off),
    its line logged.

    Example:
        >>> typed_step(spark, settings, ledger, ["orders"], note="bounded run")
    """
    if not settings.typed_tables or not topics:
        return None
    result = update_typed_tables(spark, settings, ledger, topics, note=note, batch_id=batch_id)
    _log.info(result.line())
    return result


@dataclass
class TypedCadence:
    """When a stream's next typed step is due: batches landed since the last one, and
    ``interval_seconds`` passed since it (0: after every batch); the topics they landed.

    Example:
        >>> cadence = TypedCadence(60.0); cadence.landed(["orders"]); cadence.due()
        False
    """

    interval_seconds: float
    topics: set[str] = field(default_factory=set)
    pending: bool = False
    last: float = field(default_factory=time.monotonic)

    def landed(self, topics: list[str]) -> None:
        """A batch landed events of ``topics`` the typed tables do not hold yet."""
        self.pending = True
        self.topics.update(topics)

    def due(self) -> bool:
        """Whether a step is due now."""
        return self.pending and time.monotonic() - self.last >= self.interval_seconds

    def stepped(self) -> None:
        """A step brought the typed tables up to the events table."""
        self.pending, self.last = False, time.monotonic()
