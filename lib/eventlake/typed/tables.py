"""Which typed tables the warehouse has, and what one looks like: per event type a
Delta table at ``typed/<slug>`` (``com.example.order.paid`` ->
``typed/com_example_order_paid``; catalog name ``typed_com_example_order_paid``), whose
property ``eventlake.eventType`` names its type (the one source of which table is whose:
a second type of the same slug gets ``<slug>_2``).

Columns: the CloudEvents attributes and ``extensions`` as in ``events``; one column per
top-level field of the data, commented ``data field <key>`` (the key the column reads,
whatever the column is called); where in Kafka. A scalar field has its inferred (or
dataschema's) type; an object, an array or a field of mixed kinds is its JSON text
(STRING). A value that does not cast to its column's type is NULL there; ``events``
keeps the event whole at the same Kafka coordinates.

Example:
    >>> typed_tables(settings)
    {'com.example.order.paid': Location('/wh/typed/com_example_order_paid')}
"""

from __future__ import annotations

import re
from typing import Final

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.typed.names import table_event_type
from eventlake.views.typed_views import (
    VIEW_ATTRIBUTES,
    VIEW_KAFKA_COLUMNS,
    field_column,
    identifier,
    is_scalar,
    type_slug,
    variant_path,
)
from eventlake.warehouse.names import TYPED_FOLDER, is_delta_table, sql_string
from eventlake.warehouse.schemas import EVENTS_SCHEMA

#: The comment of a field's column: this, then the field's key.
FIELD_COMMENT: Final = "data field "


#: Columns of every typed table besides its fields, before and after them.
LEADING_COLUMNS: Final = VIEW_ATTRIBUTES
TRAILING_COLUMNS: Final = VIEW_KAFKA_COLUMNS


def new_table_path(settings: Settings, event_type: str) -> Location:
    """Where a new typed table of ``event_type`` goes: ``typed/<slug>``, or the first of
    ``<slug>_2``, ``<slug>_3``, ... that holds no other type's table.

    Example:
        >>> new_table_path(settings, "com.example.order.paid")
        Location('/wh/typed/com_example_order_paid')
    """
    folder = settings.warehouse / TYPED_FOLDER
    slug, n = type_slug(event_type), 1
    while True:
        path = folder / (slug if n == 1 else f"{slug}_{n}")
        if not is_delta_table(path) or table_event_type(path) == event_type:
            return path
        n += 1


_SCALAR_TYPES: Final[dict[str, DataType]] = {
    "BIGINT": LongType(),
    "INT": IntegerType(),
    "SMALLINT": ShortType(),
    "TINYINT": ByteType(),
    "DOUBLE": DoubleType(),
    "FLOAT": FloatType(),
    "STRING": StringType(),
    "BOOLEAN": BooleanType(),
    "DATE": DateType(),
    "TIMESTAMP": TimestampType(),
    "TIMESTAMP_NTZ": TimestampNTZType(),
    "BINARY": BinaryType(),
}


_DECIMAL: Final = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")


def column_type(field_type: str) -> DataType:
    """The Spark type of a field's column, given its inferred type (as
    :func:`eventlake.views.typed_views.widened` gives it): a scalar as it is, anything
    else (an object, an array, mixed kinds) STRING, its JSON text.

    Example:
        >>> column_type("DECIMAL(38,2)"), column_type("OBJECT<a: BIGINT>")
        (DecimalType(38,2), StringType())
    """
    decimal = _DECIMAL.match(field_type)
    if decimal is not None:
        return DecimalType(int(decimal.group(1)), int(decimal.group(2)))
    if not is_scalar(field_type):
        return StringType()
    return _SCALAR_TYPES.get(field_type, StringType())


def _attribute_fields() -> list[StructField]:
    return [EVENTS_SCHEMA[name] for name in LEADING_COLUMNS]


def _trailing_fields() -> list[StructField]:
    return [EVENTS_SCHEMA[name] for name in TRAILING_COLUMNS]


def table_fields(schema: StructType) -> dict[str, tuple[str, str]]:
    """A typed table's data fields: key -> (column, Spark type), in column order.

    Example:
        >>> table_fields(typed_schema({"amount": "DECIMAL(38,2)"}))
        {'amount': ('amount', 'decimal(38,2)')}
    """
    found: dict[str, tuple[str, str]] = {}
    for field in schema.fields:
        comment = str(field.metadata.get("comment", ""))
        if comment.startswith(FIELD_COMMENT):
            found[comment[len(FIELD_COMMENT) :]] = (field.name, field.dataType.simpleString())
    return found


def added_fields(schema: StructType | None, fields: dict[str, str]) -> list[StructField]:
    """The columns to add for the keys of ``fields`` (key -> inferred type) that the
    table of ``schema`` (None: a new table) has no column for, in ``fields``' order;
    a key that cannot be a JSON path (a quote in it) has none and stays in ``data``.

    Example:
        >>> [f.name for f in added_fields(None, {"id": "STRING", "amount": "BIGINT"})]
        ['data_id', 'amount']
    """
    present = schema.fields if schema is not None else [*_attribute_fields(), *_trailing_fields()]
    taken = {field.name.lower() for field in present}
    known = table_fields(schema) if schema is not None else {}
    added = []
    for key, field_type in fields.items():
        if key in known or variant_path(key) is None:
            continue
        name = field_column(key, taken)
        added.append(
            StructField(
                name,
                column_type(field_type),
                True,
                {"comment": FIELD_COMMENT + key},
            )
        )
    return added


def typed_schema(fields: dict[str, str]) -> StructType:
    """A new typed table's schema: the attributes, a column per field of ``fields``
    (key -> inferred type), then ``data`` and where in Kafka.

    Example:
        >>> typed_schema({"amount": "DECIMAL(38,2)"})["amount"].dataType.simpleString()
        'decimal(38,2)'
    """
    return StructType([*_attribute_fields(), *added_fields(None, fields), *_trailing_fields()])


def row_columns(schema: StructType) -> list[str]:
    """SQL expressions over ``events`` giving a row of the typed table of ``schema``, in
    its column order (what the ledger's writes need): a field's column read from
    ``data_json`` as its type (``try_variant_get``: NULL when the value does not cast),
    the others as they are in ``events``.

    Example:
        >>> row_columns(typed_schema({"n": "BIGINT"}))[len(LEADING_COLUMNS)]
        "try_variant_get(data_json, '$.n', 'bigint') AS `n`"
    """
    fields = {column: key for key, (column, _) in table_fields(schema).items()}
    columns = []
    for field in schema.fields:
        key = fields.get(field.name)
        if key is None:
            # A column events has; a column added by a newer eventlake reads NULL.
            if field.name in EVENTS_SCHEMA.fieldNames():
                columns.append(identifier(field.name))
            else:
                columns.append(
                    f"CAST(NULL AS {field.dataType.simpleString()}) AS {identifier(field.name)}"
                )
            continue
        columns.append(
            f"{field_value(key, field.dataType.simpleString())} AS {identifier(field.name)}"
        )
    return columns


def field_value(key: str, column_type: str) -> str:
    """The SQL reading a typed table's column of data field ``key`` from an event's
    ``data_json``: ``try_variant_get``, NULL when the value does not cast to
    ``column_type``.

    Example:
        >>> field_value("amount", "decimal(38,2)")
        "try_variant_get(data_json, '$.amount', 'decimal(38,2)')"
    """
    path = variant_path(key) or "$"
    return f"try_variant_get(data_json, {sql_string(path)}, {sql_string(column_type)})"


def add_columns_sql(table: str, fields: list[StructField]) -> str:
    """``ALTER TABLE ... ADD COLUMNS`` of ``fields`` with their comments.

    Example:
        >>> add_columns_sql("delta.`/wh/typed/t`", added_fields(schema, {"n": "BIGINT"}))
        "ALTER TABLE delta.`/wh/typed/t` ADD COLUMNS (`n` bigint COMMENT 'data field n')"
    """
    columns = ", ".join(
        f"{identifier(f.name)} {f.dataType.simpleString()}"
        f" COMMENT {sql_string(str(f.metadata.get('comment', '')))}"
        for f in fields
    )
    return f"ALTER TABLE {table} ADD COLUMNS ({columns})"
