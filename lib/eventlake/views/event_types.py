"""Event types as users query them: a typed view per type, and what each type looks like.

Every event type gets a view, ``type_<type>`` (``com.example.order.paid`` ->
``type_com_example_order_paid``): the events of that type with the CloudEvents
attributes and, as typed columns, the top-level fields of their JSON data
(``data_json``), their types inferred by Spark's ``schema_of_variant_agg`` over the
type's newest events (``type_sample_hours`` of Kafka time before its last event). A
value that does not have the inferred type reads as NULL (``try_variant_get``), so a
type whose shape changes never breaks its view. The sample is bounded in rows too
(:data:`SAMPLE_ROWS` at random), so that registering the views stays quick on a large
table.

Where a type's newest event names a ``dataschema`` that can be read
(:mod:`eventlake.views.dataschema`: ``file:`` URIs; ``http(s):`` only with
``fetch_dataschemas``), the view's columns are the schema's top-level properties, in its
order and with its types, then any field only the data has, inferred
(:func:`type_columns`). One that cannot be read leaves the columns to inference, and
says why (:meth:`TypeColumns.source`).

:func:`event_types` reports per type its count, first and last event, the inferred
fields and where they came from, and when its shape changed (a field appeared,
disappeared or changed kind).

Inference reads each type's newest events, which costs seconds on a large table (~22 s
on 5M events here), so its result is kept in the warehouse (:func:`fields_path`,
written by ``eventlake types`` and by the maintenance job, :func:`save_columns`): a
session registers the views of the types it knows from there at once and infers only
the types that are new since.

Example:
    >>> register_typed_views(events, view_fields(spark, events, sample_hours=1.0))
    {'type_com_example_order_paid': 'com.example.order.paid'}
    >>> spark.sql("SELECT order, amount FROM type_com_example_order_paid").show()"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.views.dataschema import DataschemaError, read_dataschema, schema_fields
from eventlake.views.type_fields import TypeColumns
from eventlake.views.typed_views import typed_view, view_names, widened

#: About how many of a type's newest events its view's columns are inferred from.
SAMPLE_ROWS: Final = 20_000


@contextmanager
def _as_view(spark: SparkSession, events: DataFrame) -> Iterator[str]:
    name = f"_eventlake_events_{uuid.uuid4().hex}"
    events.createOrReplaceTempView(name)
    try:
        yield name
    finally:
        spark.catalog.dropTempView(name)


def _sampled(
    spark: SparkSession,
    events: DataFrame,
    *,
    sample_hours: float,
    sample_rows: int = SAMPLE_ROWS,
    only: Collection[str] | None,
) -> tuple[dict[str, dict[str, str]], dict[str, str | None]]:
    """Per type, the fields inferred from its sample (:func:`inferred_fields`) and its
    newest event's dataschema; every type is in both, a type without fields too."""
    seconds = int(sample_hours * 3600)
    if only is not None:
        events = events.where(F.col("type").isin(sorted(only)))
    if "dataschema" not in events.columns:  # a frame of another shape than EVENTS_SCHEMA
        events = events.withColumn("dataschema", F.lit(None).cast("string"))
    with _as_view(spark, events) as view:
        rows = spark.sql(
            f"""
            WITH newest AS (
                SELECT type, max(kafka_timestamp) AS last,
                    max_by(dataschema, kafka_timestamp) AS dataschema
                FROM {view} WHERE type IS NOT NULL GROUP BY type
            ),
            recent AS (
                SELECT e.type, e.data_json FROM {view} e JOIN newest n ON e.type = n.type
                WHERE e.kafka_timestamp >= n.last - make_dt_interval(0, 0, 0, {seconds})
            ),
            sized AS (SELECT type, count(*) AS n FROM recent GROUP BY type),
            -- Sampled before the explode: Spark pushes no filter on rand() below it.
            sampled AS (
                SELECT r.type, r.data_json FROM recent r JOIN sized z ON r.type = z.type
                WHERE rand(35) * z.n < {int(sample_rows)}
            ),
            inferred AS (
                SELECT s.type, f.key, schema_of_variant_agg(f.value) AS field_type
                FROM sampled s, LATERAL variant_explode(s.data_json) f
                WHERE f.key IS NOT NULL
                GROUP BY s.type, f.key
            )
            SELECT n.type, n.dataschema, i.key, i.field_type
            FROM newest n LEFT JOIN inferred i ON n.type = i.type
            """
        ).collect()
    fields: dict[str, dict[str, str]] = {}
    dataschemas: dict[str, str | None] = {}
    for row in sorted(rows, key=lambda r: (r["type"], r["key"] or "")):
        known = fields.setdefault(row["type"], {})
        dataschemas[row["type"]] = row["dataschema"] or None
        if row["key"] is not None:
            known[row["key"]] = widened(row["field_type"])
    return fields, dataschemas


def inferred_fields(
    spark: SparkSession,
    events: DataFrame,
    *,
    sample_hours: float,
    only: Collection[str] | None = None,
) -> dict[str, dict[str, str]]:
    """Per event type, its data's top-level fields and their Spark types, inferred with
    ``schema_of_variant_agg`` (decimals :func:`widened`) over a sample of the type's
    newest events: those of the last ``sample_hours`` of Kafka time before its newest
    one, of which about :data:`SAMPLE_ROWS` at random when there are more. Two scans of
    ``type``, ``kafka_timestamp`` and ``dataschema``, then one pass over the sample's
    data. ``only``: these types alone. The data alone: :func:`type_columns` takes a
    type's dataschema into account.

    Example:
        >>> inferred_fields(spark, events, sample_hours=1.0)
        {'com.example.order.paid': {'amount': 'DECIMAL(38,2)', 'order': 'STRING'}}
    """
    fields, _ = _sampled(spark, events, sample_hours=sample_hours, only=only)
    return fields


def merged_fields(declared: dict[str, str], inferred: dict[str, str]) -> dict[str, str]:
    """A dataschema's fields in its order, then the fields only the data has: the schema
    wins for a field it declares; one it does not is still a column.

    Example:
        >>> merged_fields({"b": "TIMESTAMP", "a": "BIGINT"}, {"a": "DOUBLE", "z": "STRING"})
        {'b': 'TIMESTAMP', 'a': 'BIGINT', 'z': 'STRING'}
    """
    return {**declared, **{k: v for k, v in inferred.items() if k not in declared}}


def with_dataschema(
    inferred: dict[str, str],
    dataschema: str | None,
    read: Callable[[str], dict[str, str]],
) -> TypeColumns:
    """A type's columns from the fields ``inferred`` from its data and its newest
    event's ``dataschema``, given ``read`` (URI -> the schema's fields, raising
    :class:`~eventlake.views.dataschema.DataschemaError`): the data's alone when there is no
    dataschema or it cannot be read, with the reason.

    Example:
        >>> with_dataschema({"n": "DOUBLE"}, "urn:x", read).unread
        'the scheme urn: is not read'
    """
    if dataschema is None:
        return TypeColumns(inferred)
    try:
        declared = read(dataschema)
    except DataschemaError as error:
        return TypeColumns(inferred, dataschema, unread=str(error))
    return TypeColumns(merged_fields(declared, inferred), dataschema)


def _schema_reader(fetch_http: bool) -> Callable[[str], dict[str, str]]:
    """:func:`~eventlake.views.dataschema.read_dataschema`'s fields, each URI read once (types
    that share a schema)."""
    seen: dict[str, dict[str, str] | DataschemaError] = {}

    def read(uri: str) -> dict[str, str]:
        if uri not in seen:
            try:
                seen[uri] = schema_fields(read_dataschema(uri, fetch_http=fetch_http))
            except DataschemaError as error:
                seen[uri] = error
        found = seen[uri]
        if isinstance(found, DataschemaError):
            raise found
        return found

    return read


def type_columns(
    spark: SparkSession,
    events: DataFrame,
    *,
    sample_hours: float,
    only: Collection[str] | None = None,
    fetch_dataschemas: bool = False,
) -> dict[str, TypeColumns]:
    """Per event type, its typed view's columns: :func:`inferred_fields` from its data,
    and where its newest event names a readable ``dataschema``
    (:func:`eventlake.views.dataschema.read_dataschema`; ``fetch_dataschemas``: http(s) ones
    too), the schema's top-level properties first, with the schema's types
    (:func:`merged_fields`).

    Example:
        >>> type_columns(spark, events, sample_hours=1.0)["com.example.order.paid"].source()
        'dataschema file:///schemas/order-paid.json'
    """
    fields, dataschemas = _sampled(spark, events, sample_hours=sample_hours, only=only)
    return columns_of(fields, dataschemas, fetch_dataschemas=fetch_dataschemas)


def columns_of(
    inferred: dict[str, dict[str, str]],
    dataschemas: dict[str, str | None],
    *,
    fetch_dataschemas: bool = False,
) -> dict[str, TypeColumns]:
    """Per event type of ``inferred`` (type -> the fields inferred from its data), its
    columns given its newest event's dataschema (:func:`with_dataschema`; each schema
    read once).

    Example:
        >>> columns_of({"a.b": {"n": "BIGINT"}}, {"a.b": None})["a.b"].fields
        {'n': 'BIGINT'}
    """
    read = _schema_reader(fetch_dataschemas)
    return {
        event_type: with_dataschema(fields, dataschemas.get(event_type), read)
        for event_type, fields in inferred.items()
    }


def view_fields(
    spark: SparkSession,
    events: DataFrame,
    *,
    sample_hours: float,
    known: dict[str, dict[str, str]] | None = None,
    fetch_dataschemas: bool = False,
) -> dict[str, dict[str, str]]:
    """Per event type in ``events``, its typed view's fields: from ``known``
    (:func:`load_fields`) for the types there, from :func:`type_columns` (the newest
    event's dataschema and the data; ``fetch_dataschemas``: http(s) dataschemas too)
    for the others.

    Example:
        >>> view_fields(spark, events, sample_hours=1.0, known=load_fields(path))
        {'com.example.order.paid': {'amount': 'DECIMAL(38,2)', 'order': 'STRING'}}
    """
    types = [r["type"] for r in events.select("type").distinct().collect() if r["type"]]
    fields = {t: (known or {})[t] for t in types if t in (known or {})}
    new = [t for t in types if t not in fields]
    if new:
        found = type_columns(
            spark, events, sample_hours=sample_hours, only=new, fetch_dataschemas=fetch_dataschemas
        )
        fields.update({t: found[t].fields if t in found else {} for t in new})
    return fields


def register_typed_views(events: DataFrame, fields: dict[str, dict[str, str]]) -> dict[str, str]:
    """Register :func:`typed_view` of every event type in ``fields`` (from
    :func:`view_fields`) over ``events`` as a temporary view named by :func:`view_names`;
    returns view name -> type.

    Example:
        >>> register_typed_views(events, view_fields(spark, events, sample_hours=1.0))
        {'type_com_example_order_paid': 'com.example.order.paid'}
    """
    registered: dict[str, str] = {}
    for event_type, name in view_names(list(fields)).items():
        typed_view(events, event_type, fields[event_type]).createOrReplaceTempView(name)
        registered[name] = event_type
    return registered


@dataclass(frozen=True)
class FieldSeen:
    """One top-level data field of a type with one kind of value, and when it was seen."""

    name: str
    #: NUMBER, STRING, BOOLEAN, OBJECT, ARRAY (JSON's kinds; nulls say nothing).
    kind: str
    count: int
    first_seen: datetime
    last_seen: datetime


@dataclass(frozen=True)
class EventTypeInfo:
    """What :func:`event_types` reports of one type."""

    type: str
    view: str
    count: int
    first_seen: datetime | None
    last_seen: datetime | None
    #: What the typed view's columns are: from the newest events' data and dataschema.
    fields: dict[str, str]
    history: list[FieldSeen] = field(default_factory=list)
    #: The newest event's dataschema, and why it was not used (:class:`TypeColumns`).
    dataschema: str | None = None
    dataschema_unread: str | None = None

    @property
    def columns(self) -> TypeColumns:
        """The view's columns and where they came from."""
        return TypeColumns(self.fields, self.dataschema, self.dataschema_unread)

    def changes(self) -> list[str]:
        """When the type's shape changed, one sentence each, oldest first: a field that
        appeared after the type's first event, one that disappeared before its last, one
        whose kind of value changed.

        Example:
            >>> info.changes()
            ['field discount appeared 2026-11-25 10:00:03', 'field amount changed from NUMBER ...']
        """
        found: list[tuple[datetime, str]] = []
        by_name: dict[str, list[FieldSeen]] = {}
        for seen in self.history:
            by_name.setdefault(seen.name, []).append(seen)
        for name, kinds in by_name.items():
            kinds.sort(key=lambda s: s.first_seen)
            first, last = kinds[0], max(kinds, key=lambda s: s.last_seen)
            if self.first_seen is not None and first.first_seen > self.first_seen:
                found.append((first.first_seen, f"field {name} appeared {_when(first.first_seen)}"))
            for before, after in itertools.pairwise(kinds):
                found.append(
                    (
                        after.first_seen,
                        f"field {name} changed from {before.kind} to {after.kind} "
                        f"{_when(after.first_seen)}",
                    )
                )
            if self.last_seen is not None and last.last_seen < self.last_seen:
                found.append(
                    (last.last_seen, f"field {name} disappeared after {_when(last.last_seen)}")
                )
        return [sentence for _, sentence in sorted(found)]

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "view": self.view,
            "count": self.count,
            "first_seen": _when(self.first_seen),
            "last_seen": _when(self.last_seen),
            "fields": self.fields,
            "columns_from": "dataschema" if self.columns.from_dataschema else "data",
            "dataschema": self.dataschema,
            "dataschema_unread": self.dataschema_unread,
            "changes": self.changes(),
        }


def _when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(sep=" ", timespec="seconds")


def event_types(
    spark: SparkSession, events: DataFrame, *, sample_hours: float, fetch_dataschemas: bool = False
) -> list[EventTypeInfo]:
    """Every event type in ``events``: count, first and last event (Kafka time), its
    view's fields and where they came from (:func:`type_columns`) and the kinds of value
    each field had and when (a pass over every event's data; for ``eventlake types``,
    not for views).

    Example:
        >>> [t.type for t in event_types(spark, events, sample_hours=1.0)]
        ['com.example.order.paid', 'com.example.order.shipped']
    """
    counts = (
        events.groupBy("type")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("kafka_timestamp").alias("first"),
            F.max("kafka_timestamp").alias("last"),
        )
        .collect()
    )
    with _as_view(spark, events) as view:
        seen = spark.sql(
            f"""
            SELECT type, key, kind, count(*) AS n, min(ts) AS first, max(ts) AS last FROM (
                SELECT e.type, f.key, e.kafka_timestamp AS ts,
                    CASE
                        WHEN s RLIKE '^(BIGINT|INT|SMALLINT|TINYINT|DOUBLE|FLOAT|DECIMAL)'
                            THEN 'NUMBER'
                        WHEN s LIKE 'OBJECT%' THEN 'OBJECT'
                        WHEN s LIKE 'ARRAY%' THEN 'ARRAY'
                        ELSE s
                    END AS kind
                FROM {view} e, LATERAL variant_explode(e.data_json) f,
                    LATERAL (SELECT schema_of_variant(f.value) AS s)
                WHERE f.key IS NOT NULL
            )
            WHERE kind <> 'VOID'
            GROUP BY type, key, kind
            """
        ).collect()
    history: dict[str, list[FieldSeen]] = {}
    for row in seen:
        history.setdefault(row["type"], []).append(
            FieldSeen(row["key"], row["kind"], row["n"], row["first"], row["last"])
        )
    columns = type_columns(
        spark, events, sample_hours=sample_hours, fetch_dataschemas=fetch_dataschemas
    )
    views = view_names([row["type"] for row in counts if row["type"] is not None])
    return [
        EventTypeInfo(
            type=row["type"],
            view=views[row["type"]],
            count=row["n"],
            first_seen=row["first"],
            last_seen=row["last"],
            fields=found.fields,
            history=sorted(history.get(row["type"], []), key=lambda s: (s.name, s.first_seen)),
            dataschema=found.dataschema,
            dataschema_unread=found.unread,
        )
        for row in sorted(counts, key=lambda r: r["type"] or "")
        if row["type"] is not None
        for found in [columns.get(row["type"], TypeColumns({}))]
    ]
