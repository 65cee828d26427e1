"""Downstream queries: the warehouse's Delta tables registered as temporary views, with
the views built on ``events``: ``events_unique`` (first event per ``(source, id)``) and
a typed view per event type (:mod:`eventlake.views.event_types`). The views are SQL over the
tables' paths, so a session of one's own gets the same ones: ``register_tables`` in a
PySpark job, ``eventlake views`` as a script for ``spark-sql -i``.

Example:
    >>> register_tables(spark, settings)
    ['events', 'rejects', 'events_unique', 'type_com_example_order_paid']
    >>> print(run_query(spark, "SELECT count(*) AS n FROM events"))
"""

from __future__ import annotations

import json
import logging
import re
from typing import Final

from pyspark.sql import SparkSession

from eventlake.core.errors import Refused
from eventlake.core.settings import Settings
from eventlake.core.text_table import text_table
from eventlake.spark.session import task_failures_unlogged
from eventlake.views.duplicates import UNIQUE_VIEW, unique_events_sql
from eventlake.views.event_types import view_fields
from eventlake.views.type_fields import fields_path, load_fields
from eventlake.views.typed_views import typed_view_sql, view_names
from eventlake.warehouse.names import EVENTS, delta_path_sql, warehouse_tables


def view_statements(
    spark: SparkSession, settings: Settings, *, typed: bool = True
) -> list[tuple[str, str]]:
    """The views over the warehouse, as ``(name, SQL query)``: every Delta table under
    it by name (state/<topic> as state_<topic>), then ``events_unique`` and, unless
    ``typed`` is false, the typed view of every event type (its fields as the warehouse
    keeps them, or inferred from its newest events for a type new since ``eventlake
    types`` or maintenance ran). The queries name the tables by path, so they hold in
    any Spark session with the Delta jars (``eventlake views`` prints them).

    Example:
        >>> view_statements(spark, settings)[0]
        ('events', 'SELECT * FROM delta.`/wh/events`')
    """
    statements: list[tuple[str, str]] = []
    for table, path in warehouse_tables(settings):
        source = delta_path_sql(path)
        statements.append((re.sub(r"[^A-Za-z0-9_]", "_", table), f"SELECT * FROM {source}"))
        if table != EVENTS:
            continue
        frame = spark.read.format("delta").load(str(path))
        statements.append((UNIQUE_VIEW, unique_events_sql(source, frame.columns)))
        if typed and "data_json" in frame.columns:
            fields = view_fields(
                spark,
                frame,
                sample_hours=settings.type_sample_hours,
                known=load_fields(fields_path(settings.warehouse)),
                fetch_dataschemas=settings.fetch_dataschemas,
            )
            for event_type, name in view_names(list(fields)).items():
                statements.append((name, typed_view_sql(source, event_type, fields[event_type])))
    return statements


def register_tables(spark: SparkSession, settings: Settings, *, typed: bool = True) -> list[str]:
    """Register the views of :func:`view_statements` as temporary views of ``spark``;
    returns their names. Also for a PySpark job of one's own.

    Example:
        >>> register_tables(spark, settings)
        ['events', 'rejects', 'events_unique', 'type_com_example_order_paid']
    """
    statements = view_statements(spark, settings, typed=typed)
    for name, query in statements:
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {query}")
    return [name for name, _ in statements]


def views_sql(statements: list[tuple[str, str]]) -> str:
    """:func:`view_statements` as a SQL script of ``CREATE OR REPLACE TEMPORARY VIEW``
    statements, for ``spark-sql -i`` or ``spark.sql`` one statement at a time.

    Example:
        >>> print(views_sql([("events", "SELECT * FROM delta.`/wh/events`")]))
        CREATE OR REPLACE TEMPORARY VIEW `events` AS SELECT * FROM delta.`/wh/events`;
    """
    return "\n".join(
        f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {query};" for name, query in statements
    )


class QueryError(Refused, RuntimeError):
    """The SQL of a query failed: Spark's message, without its stack or plan."""


#: The statements ``eventlake query`` refuses, by their first word: those that change
#: tables (Spark's and Delta's). A change made there would bypass the jobs and their ledger
#: (an event deleted there would never land again). Other words go to Spark, which says
#: what it cannot parse.
WRITE_STATEMENTS: Final = frozenset(
    {"ALTER", "ANALYZE", "CONVERT", "COPY", "CREATE", "DELETE", "DROP", "FSCK", "GENERATE"}
    | {"INSERT", "LOAD", "MERGE", "MSCK", "OPTIMIZE", "REORG", "REPAIR", "REPLACE"}
    | {"RESTORE", "TRUNCATE", "UPDATE", "VACUUM"}
)
_LEADING: Final = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.DOTALL)
_WRITE_AFTER_WITH: Final = re.compile(
    r"\b(?:INSERT\s+(?:INTO|OVERWRITE)|DELETE\s+FROM|UPDATE|MERGE\s+INTO)\b", re.IGNORECASE
)


def write_statement_problem(sql: str) -> str | None:
    """Why ``eventlake query`` refuses ``sql`` (a statement that is not a read), or None.

    Example:
        >>> write_statement_problem("SELECT count(*) FROM events") is None
        True
        >>> write_statement_problem("DELETE FROM events WHERE id = 'x'")[:40]
        'eventlake query runs statements that rea'
    """
    rest = _LEADING.sub("", sql, count=1)
    first = rest.split(None, 1)[0].upper() if rest.strip() else ""
    if first not in WRITE_STATEMENTS and not (first == "WITH" and _WRITE_AFTER_WITH.search(rest)):
        return None
    return (
        f"eventlake query runs statements that read, not {first}: a change made here would "
        "bypass the jobs' ledger of what has landed. Change tables with the jobs (eventlake "
        "ingest --full-refresh, reconcile, maintain), or in a Spark session of your own "
        "(eventlake views)."
    )


def run_query(
    spark: SparkSession, sql: str, *, output_format: str = "table", limit: int = 50
) -> str:
    """Run SQL and render at most ``limit`` rows as an aligned table or JSON lines; SQL
    that Spark refuses or cannot run raises :class:`QueryError` with Spark's message.

    Example:
        >>> print(run_query(spark, "SELECT count(*) AS n FROM events"))
        n
        ----
        1200
        (1 row)
    """
    from pyspark.errors import PySparkException

    problem = write_statement_problem(sql)
    if problem is not None:
        raise QueryError(problem)
    # PySpark also logs a failed query's error as a JSON line, stack included: the error
    # is said once, by QueryError.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    try:
        # SQL that fails on a row (a cast, raise_error) fails its task: the JVM would log
        # the task's stack trace above the QueryError's one sentence.
        with task_failures_unlogged(spark):
            frame = spark.sql(sql)
            if output_format == "json":
                return "\n".join(frame.limit(limit).toJSON().collect())
            rows = frame.limit(limit).collect()
    except PySparkException as error:
        text = query_error_text(str(error))
        if error.getCondition() == "TABLE_OR_VIEW_NOT_FOUND":
            text += f"\nThe tables and views here: {', '.join(_known_names(spark)) or 'none'}."
        raise QueryError(text) from None
    columns = frame.columns
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    lines = text_table(columns, cells)
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def _known_names(spark: SparkSession) -> list[str]:
    """The temporary views a query can name (the tables, registered by name, and the views)."""
    return sorted(table.name for table in spark.catalog.listTables() if table.isTemporary)


def query_error_text(message: str) -> str:
    """Spark's message about failed SQL, without the query plan an analysis error appends
    after its ``SQLSTATE ...;`` line (the SQL and its position marks stay).

    Example:
        >>> query_error_text("[X] `nope` not found. SQLSTATE: 42P01; line 1 pos 14;\\n'Project [*]")
        '[X] `nope` not found. SQLSTATE: 42P01; line 1 pos 14'
    """
    lines = message.strip().splitlines()
    for index, line in enumerate(lines):
        if "SQLSTATE" in line and line.rstrip().endswith(";"):
            lines = [*lines[:index], line.rstrip().rstrip(";")]
            break
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", errors="replace")
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return "NULL" if value is None else str(value)
