"""A typed step's one pass over the new events: every type's plain columns computed from
``data_json`` at once and written by type (Parquet, a folder per type, under the
warehouse's ``_typed_staging``), each type's data shape observed in the same pass
(``schema_of_variant_agg``), so that each typed table's write reads only its own small
folder, and a new field is seen without a second read.

Example:
    >>> staged = stage(spark, new_events, {"com.example.order.paid": schema}, folder)
    >>> staged.fields("com.example.order.paid")
    {'amount': 'DECIMAL(38,2)', 'order': 'STRING'}
    >>> staged.rows("com.example.order.paid", schema).count()
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from eventlake.core.locations import Location
from eventlake.typed.tables import table_fields
from eventlake.views.typed_views import identifier, variant_path, widened
from eventlake.warehouse.names import sql_string


@dataclass
class Staged:
    """The staged events of one step: where, which staging column holds each type's
    field, and each type's shape as the pass saw it."""

    spark: SparkSession
    folder: Location
    schema: StructType
    #: (type, key) -> the staging column holding that field, as its table's column type.
    columns: dict[tuple[str, str], str]
    #: type -> ``schema_of_variant_agg`` of its data_json over the pass (None: no JSON).
    shapes: dict[str, str | None]

    def fields(self, event_type: str) -> dict[str, str]:
        """The top-level fields the pass saw in ``event_type``'s data, with their types
        (decimals :func:`~eventlake.views.typed_views.widened`).

        Example:
            >>> staged.fields("com.example.order.paid")
            {'amount': 'DECIMAL(38,2)'}
        """
        return object_fields(self.shapes.get(event_type))

    def rows(self, event_type: str, table: StructType) -> DataFrame:
        """``event_type``'s staged rows as its table's columns, in its order (a column the
        pass did not compute, e.g. one added since: NULL).

        Example:
            >>> staged.rows("com.example.order.paid", table_schema(path))
        """
        keys = {column: key for key, (column, _) in table_fields(table).items()}
        staged = self.spark.read.schema(self.schema).parquet(str(self.folder))
        selected = []
        for field in table.fields:
            key = keys.get(field.name)
            source = field.name if key is None else self.columns.get((event_type, key))
            if source is None or source not in self.schema.fieldNames():
                selected.append(F.lit(None).cast(field.dataType).alias(field.name))
            else:
                selected.append(F.col(identifier(source)).cast(field.dataType).alias(field.name))
        return staged.where(F.col("type") == event_type).select(*selected)


def stage(
    spark: SparkSession,
    new: DataFrame,
    tables: dict[str, StructType],
    folder: Location,
    kept: tuple[str, ...],
) -> Staged:
    """Write ``new`` (events) to ``folder`` by type: the columns ``kept`` and, for each
    type of ``tables`` (type -> its typed table's schema), each of its fields read from
    ``data_json`` as its column's type; observe each type's shape in the same pass.

    Example:
        >>> stage(spark, new, {"a.b": schema}, folder, ("id", "type", "kafka_offset"))
    """
    columns: dict[tuple[str, str], str] = {}
    computed = []
    for n, (event_type, schema) in enumerate(sorted(tables.items())):
        for key, (_, column_type) in table_fields(schema).items():
            name = f"_field_{n}_{len(columns)}"
            columns[(event_type, key)] = name
            path = variant_path(key) or "$"
            computed.append(
                F.expr(
                    f"CASE WHEN type = {sql_string(event_type)} THEN try_variant_get("
                    f"data_json, {sql_string(path)}, {sql_string(column_type)}) END"
                ).alias(name)
            )
    shapes = {
        f"_shape_{n}": F.expr(
            f"schema_of_variant_agg(CASE WHEN type = {sql_string(t)} THEN data_json END)"
        ).alias(f"_shape_{n}")
        for n, t in enumerate(sorted(tables))
    }
    seen = Observation()
    # Observed before the projection, which drops data_json: one pass all the same.
    observed_new = new.observe(seen, F.count(F.lit(1)).alias("_rows"), *shapes.values())
    frame = observed_new.select(*[F.col(c) for c in kept], *computed)
    frame.write.partitionBy("type").parquet(str(folder))
    observed = seen.get
    return Staged(
        spark,
        folder,
        frame.schema,
        columns,
        {t: observed.get(f"_shape_{n}") for n, t in enumerate(sorted(tables))},
    )


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
