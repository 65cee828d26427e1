"""A typed step's one pass over the new events: every type's plain columns computed from
``data_json`` at once and written to one Parquet folder under the warehouse's
``_typed_staging``, so that each typed table's write reads the few columns of its own
type, not ``data_json`` again.

The folder is not partitioned by type: a partitioned write sorts every row by type
first, which cost more (9.4 s against 6.5 s at 1M events, six types) than each type's
write saves by reading only its own rows (docs/benchmarks.md "Typed tables").

Example:
    >>> staged = stage(spark, new_events, {"com.example.order.paid": schema}, folder, kept)
    >>> staged.rows("com.example.order.paid", schema).count()
    120
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from eventlake.core.locations import Location
from eventlake.typed.tables import field_value, table_fields
from eventlake.views.typed_views import identifier
from eventlake.warehouse.names import sql_string


@dataclass
class Staged:
    """The staged events of one step: where, and which staging column holds each
    type's field."""

    spark: SparkSession
    folder: Location
    schema: StructType
    #: (type, key) -> the staging column holding that field, as its table's column type.
    columns: dict[tuple[str, str], str]

    def rows(self, event_type: str, table: StructType) -> DataFrame:
        """``event_type``'s staged rows as its table's columns, in its order (a column the
        pass did not compute: NULL).

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
    """Write ``new`` (events) to ``folder``: the columns ``kept`` and, for each type of
    ``tables`` (type -> its typed table's schema), each of its fields read from
    ``data_json`` as its column's type (NULL on the rows of other types).

    Example:
        >>> stage(spark, new, {"a.b": schema}, folder, ("id", "type", "kafka_offset"))
    """
    columns: dict[tuple[str, str], str] = {}
    computed = []
    for n, (event_type, schema) in enumerate(sorted(tables.items())):
        for key, (_, column_type) in table_fields(schema).items():
            name = f"_field_{n}_{len(columns)}"
            columns[(event_type, key)] = name
            computed.append(
                F.expr(
                    f"CASE WHEN type = {sql_string(event_type)}"
                    f" THEN {field_value(key, column_type)} END"
                ).alias(name)
            )
    frame = new.select(*[F.col(c) for c in kept], *computed)
    frame.write.parquet(str(folder))
    return Staged(spark, folder, frame.schema, columns)
