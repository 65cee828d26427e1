"""A typed view per event type: its name (``type_<type>``) and its columns, the
attributes then the data's top-level fields read from ``data_json`` with their types,
as a DataFrame or as SQL.

Example:
    >>> view_name("com.example.order.paid")
    'type_com_example_order_paid'
"""

from __future__ import annotations

import re
from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eventlake.binding.decode import CONTEXT_ATTRIBUTES
from eventlake.warehouse.names import sql_string

#: Columns of every typed view besides the data's fields, in order.
VIEW_ATTRIBUTES: Final = (*CONTEXT_ATTRIBUTES, "extensions")


VIEW_KAFKA_COLUMNS: Final = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")


VIEW_PREFIX: Final = "type_"


#: Types a variant value is read as directly; anything else (objects, arrays, mixed
#: types, only nulls) stays a VARIANT column.
_SCALAR_TYPE: Final = re.compile(
    r"^(BIGINT|INT|SMALLINT|TINYINT|DOUBLE|FLOAT|DECIMAL\(\d+,\d+\)|STRING|BOOLEAN|DATE"
    r"|TIMESTAMP|TIMESTAMP_NTZ|BINARY)$"
)


_SIMPLE_KEY: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


_DECIMAL: Final = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")


def widened(field_type: str) -> str:
    """The type a view reads a field as, given what the sample showed: a decimal with the
    sample's digits after the point and all 38 digits Spark allows, since the sample's
    precision (``DECIMAL(4,2)`` for amounts below 100) would read a larger value of an
    event outside the sample as NULL. Any other type as it is.

    Example:
        >>> widened("DECIMAL(4,2)"), widened("BIGINT")
        ('DECIMAL(38,2)', 'BIGINT')
    """
    decimal = _DECIMAL.match(field_type)
    return field_type if decimal is None else f"DECIMAL(38,{decimal.group(2)})"


def type_slug(event_type: str) -> str:
    """``event_type`` in lowercase with every run of other characters than letters and
    digits as one ``_``: the typed view's and the typed table's name after its prefix.

    Example:
        >>> type_slug("com.example.Order-Paid")
        'com_example_order_paid'
    """
    return re.sub(r"[^a-z0-9]+", "_", event_type.lower()).strip("_") or "_"


def view_name(event_type: str) -> str:
    """The typed view's name of ``event_type``: ``type_`` and :func:`type_slug`.

    Example:
        >>> view_name("com.example.Order-Paid")
        'type_com_example_order_paid'
    """
    return VIEW_PREFIX + type_slug(event_type)


def view_names(event_types: list[str]) -> dict[str, str]:
    """Per type, its view's name (:func:`view_name`); of two types that give the same
    name, the later in sorted order gets a numbered one (``..._2``).

    Example:
        >>> view_names(["a.b", "a-b"])
        {'a-b': 'type_a_b', 'a.b': 'type_a_b_2'}
    """
    names: dict[str, str] = {}
    for event_type in sorted(set(event_types)):
        name, n = view_name(event_type), 1
        while name in names.values():
            n += 1
            name = f"{view_name(event_type)}_{n}"
        names[event_type] = name
    return names


def variant_path(key: str) -> str | None:
    """The JSON path of a top-level field, for ``try_variant_get``; None when the name
    cannot be written as one (a quote in it)."""
    if _SIMPLE_KEY.match(key):
        return f"$.{key}"
    return None if "'" in key else f"$['{key}']"


def is_scalar(field_type: str) -> bool:
    """Whether a field's inferred type is read as itself (else: VARIANT in a view, JSON
    text in a typed table).

    Example:
        >>> is_scalar("DECIMAL(38,2)"), is_scalar("OBJECT<a: BIGINT>")
        (True, False)
    """
    return bool(_SCALAR_TYPE.match(field_type))


def field_column(key: str, taken: set[str]) -> str:
    """The column name of the data field ``key`` beside the names ``taken`` (lowercase;
    the name is added to them): the key, or ``data_<key>`` when a column of that name
    (ignoring case) is taken, e.g. by an attribute.

    Example:
        >>> field_column("id", {"id", "source"})
        'data_id'
    """
    name = key
    while name.lower() in taken:
        name = f"data_{name}"
    taken.add(name.lower())
    return name


def identifier(name: str) -> str:
    """``name`` quoted as a SQL identifier.

    Example:
        >>> identifier("a`b")
        '`a``b`'
    """
    return "`" + name.replace("`", "``") + "`"


def view_columns(fields: dict[str, str]) -> list[str]:
    """The typed view's columns as SQL expressions over the events table: the
    attributes, one column per data field in ``fields`` (a scalar type read as that
    type, NULL where a value has another; objects, arrays and mixed types as VARIANT),
    ``data_json`` and where in Kafka. A field named like an attribute (or like another
    field, ignoring case) is ``data_<name>``.

    Example:
        >>> view_columns({"amount": "DECIMAL(38,2)"})[len(VIEW_ATTRIBUTES)]
        "try_variant_get(data_json, '$.amount', 'decimal(38,2)') AS `amount`"
    """
    taken = {name.lower() for name in (*VIEW_ATTRIBUTES, *VIEW_KAFKA_COLUMNS, "data_json")}
    columns = [identifier(name) for name in VIEW_ATTRIBUTES]
    for key, field_type in fields.items():
        path = variant_path(key)
        if path is None:
            continue
        target = field_type.lower() if is_scalar(field_type) else "variant"
        name = field_column(key, taken)
        columns.append(
            f"try_variant_get(data_json, {sql_string(path)}, {sql_string(target)})"
            f" AS {identifier(name)}"
        )
    return [*columns, "data_json", *[identifier(name) for name in VIEW_KAFKA_COLUMNS]]


def typed_view(events: DataFrame, event_type: str, fields: dict[str, str]) -> DataFrame:
    """The events of ``event_type`` with the columns of :func:`view_columns`.

    Example:
        >>> typed_view(events, "order.paid", {"amount": "BIGINT"}).select("amount")
    """
    return events.where(F.col("type") == event_type).selectExpr(*view_columns(fields))


def typed_view_sql(table: str, event_type: str, fields: dict[str, str]) -> str:
    """:func:`typed_view` as SQL over ``table`` (a table name as SQL, e.g.
    :func:`eventlake.warehouse.names.delta_path_sql`), for a session of one's own.

    Example:
        >>> typed_view_sql("events", "order.paid", {})
        "SELECT `specversion`, ... FROM events WHERE type = 'order.paid'"
    """
    return (
        f"SELECT {', '.join(view_columns(fields))} FROM {table}"
        f" WHERE type = {sql_string(event_type)}"
    )
