"""What the new events of each type look like, in one pass: per type present, the
top-level fields of its data with their types (Spark's ``schema_of_variant_agg`` over
every new event's ``data_json``, decimals :func:`~eventlake.views.typed_views.widened`),
its newest event's ``dataschema`` and its count. A typed step makes a new type's table
and a new field's column from this before it writes any row.

Example:
    >>> type_shapes(new_events)["com.example.order.paid"]
    TypeShape(fields={'amount': 'DECIMAL(38,2)', 'order': 'STRING'}, dataschema=None, rows=120)
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eventlake.views.typed_views import widened


@dataclass(frozen=True)
class TypeShape:
    """One type's new events: their data's fields (key -> type), the newest event's
    dataschema, how many."""

    fields: dict[str, str]
    dataschema: str | None
    rows: int


def type_shapes(new: DataFrame) -> dict[str, TypeShape]:
    """Per event type of ``new`` (rows of ``events``), its :class:`TypeShape`: one
    grouped aggregate, whose shuffle is a row per type and task.

    Example:
        >>> sorted(type_shapes(new_events))
        ['com.example.order.paid', 'com.example.order.shipped']
    """
    rows = (
        new.where(F.col("type").isNotNull())
        .groupBy("type")
        .agg(
            F.expr("schema_of_variant_agg(data_json)").alias("shape"),
            F.expr("max_by(dataschema, kafka_timestamp)").alias("dataschema"),
            F.count(F.lit(1)).alias("rows"),
        )
        .collect()
    )
    return {
        row["type"]: TypeShape(object_fields(row["shape"]), row["dataschema"] or None, row["rows"])
        for row in rows
    }


def object_fields(shape: str | None) -> dict[str, str]:
    """The top-level fields of a ``schema_of_variant_agg`` result, with their types (a
    decimal :func:`~eventlake.views.typed_views.widened`); none unless it is an OBJECT.

    Example:
        >>> object_fields("OBJECT<`na me`: DECIMAL(2,1), z: ARRAY<BIGINT>>")
        {'na me': 'DECIMAL(38,1)', 'z': 'ARRAY<BIGINT>'}
    """
    if shape is None or not shape.startswith("OBJECT<") or not shape.endswith(">"):
        return {}
    body = shape[len("OBJECT<") : -1]
    fields: dict[str, str] = {}
    for part in _top_level(body):
        name, field_type = _name_and_type(part)
        if name is not None:
            fields[name] = widened(field_type)
    return fields


def _top_level(body: str) -> list[str]:
    """``body`` split at the commas outside ``<>``, ``()`` and backquotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(body):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "<(":
            depth += 1
        elif not quoted and char in ">)":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(body[start:i].strip())
            start = i + 1
    if body[start:].strip():
        parts.append(body[start:].strip())
    return parts


def _name_and_type(part: str) -> tuple[str | None, str]:
    """``name: TYPE`` (the name maybe in backquotes, with doubled ones inside)."""
    if part.startswith("`"):
        end = 1
        while end < len(part):
            if part[end] == "`" and part[end + 1 : end + 2] == "`":
                end += 2
                continue
            if part[end] == "`":
                break
            end += 1
        name = part[1:end].replace("``", "`")
        rest = part[end + 1 :]
    else:
        name, _, rest = part.partition(":")
        rest = ":" + rest
    if not rest.startswith(":"):
        return None, ""
    return name.strip() if not part.startswith("`") else name, rest[1:].strip()
