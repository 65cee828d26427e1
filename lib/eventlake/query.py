"""Downstream queries: the warehouse's Delta tables registered as temporary views, with
the views built on ``events``: ``events_unique`` (first event per ``(source, id)``) and
a typed view per event type (:mod:`eventlake.event_types`).

Example:
    >>> register_tables(spark, settings)
    ['events', 'rejects', 'events_unique', 'type_com_example_order_paid']
    >>> print(run_query(spark, "SELECT count(*) AS n FROM events"))
"""

from __future__ import annotations

import json
import re

from pyspark.sql import SparkSession

from eventlake.duplicates import UNIQUE_VIEW, unique_events
from eventlake.event_types import fields_path, load_fields, register_typed_views
from eventlake.settings import Settings
from eventlake.tables import EVENTS, warehouse_tables
from eventlake.text_table import text_table


def register_tables(spark: SparkSession, settings: Settings, *, typed: bool = True) -> list[str]:
    """Register every Delta table under the warehouse by name (state/<topic> as
    state_<topic>), then ``events_unique`` and, unless ``typed`` is false, the typed
    view of every event type (its fields as the warehouse keeps them, or from its
    newest events' dataschema and data for a type new since ``eventlake types`` or
    maintenance ran).

    Example:
        >>> register_tables(spark, settings)
        ['events', 'rejects', 'events_unique', 'type_com_example_order_paid']
    """
    names: list[str] = []
    for table, path in warehouse_tables(settings):
        name = re.sub(r"[^A-Za-z0-9_]", "_", table)
        frame = spark.read.format("delta").load(str(path))
        frame.createOrReplaceTempView(name)
        names.append(name)
        if table == EVENTS:
            unique_events(frame).createOrReplaceTempView(UNIQUE_VIEW)
            names.append(UNIQUE_VIEW)
            if typed:
                views = register_typed_views(
                    spark,
                    frame,
                    sample_hours=settings.type_sample_hours,
                    known=load_fields(fields_path(settings.warehouse)),
                    fetch_dataschemas=settings.fetch_dataschemas,
                )
                names.extend(views)
    return names


def run_query(
    spark: SparkSession, sql: str, *, output_format: str = "table", limit: int = 50
) -> str:
    """Run SQL and render at most ``limit`` rows as an aligned table or JSON lines."""
    frame = spark.sql(sql)
    if output_format == "json":
        return "\n".join(frame.limit(limit).toJSON().collect())
    rows = frame.limit(limit).collect()
    columns = frame.columns
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    lines = text_table(columns, cells)
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", errors="replace")
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return "NULL" if value is None else str(value)
