"""eventlake.views.event_types: a typed view per event type, and each type's shape over time,
on events landed from the real broker."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.views.event_types import (
    event_types,
    register_typed_views,
    type_columns,
    view_fields,
)
from eventlake.views.query import register_tables
from eventlake.views.type_fields import (
    TypeColumns,
    fields_path,
    load_columns,
    load_fields,
    save_columns,
    save_fields,
)
from eventlake.views.typed_views import view_name, view_names
from eventlake.warehouse.names import EVENTS
from tests.helpers import binary_headers, http_server, land, read_table


def _event(
    event_id: str, event_type: str, data: object, *, dataschema: str | None = None
) -> Record:
    headers = binary_headers(event_id, type_=event_type)
    headers.append(("content-type", b"application/json"))
    if dataschema is not None:
        headers.append(("ce_dataschema", dataschema.encode()))
    return (event_id.encode(), json.dumps(data).encode(), headers)


#: A JSON Schema of order.paid events: one field the sample below lacks (refund), one
#: typed otherwise than inference would (amount: DOUBLE, not DECIMAL(38,2); paid_at:
#: TIMESTAMP, not STRING), in another order than the sorted inferred fields.
PAID_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "order": {"type": "string"},
        "paid_at": {"type": "string", "format": "date-time"},
        "amount": {"type": "number"},
        "refund": {"type": "number", "multipleOf": 0.01},
    },
}


def _paid(event_id: str, dataschema: str | None) -> Record:
    data = {"order": f"o-{event_id}", "amount": 12.25, "paid_at": "2026-11-25T10:00:00Z"}
    return _event(event_id, "order.paid", {**data, "note": "x"}, dataschema=dataschema)


def _schema_file(folder: Path, text: str) -> str:
    path = folder / "paid.schema.json"
    path.write_text(text)
    return path.as_uri()


def test_a_view_name_is_the_type_in_lowercase_with_other_characters_as_underscores() -> None:
    assert view_name("com.example.Order-Paid") == "type_com_example_order_paid"
    assert view_name("..") == "type__"


def test_types_that_give_one_view_name_get_numbered_names() -> None:
    assert view_names(["a.b", "a-b", "c"]) == {
        "a-b": "type_a_b",
        "a.b": "type_a_b_2",
        "c": "type_c",
    }


def test_a_typed_view_has_the_datas_fields_as_typed_columns(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    paid = "com.example.order.paid"
    produce_all(
        warehouse_settings,
        topic_name,
        [_event(f"p{n}", paid, {"order": f"o-{n}", "amount": n + 0.25, "id": n}) for n in range(5)]
        + [_event("s1", "com.example.order.shipped", {"order": "o-1", "carrier": "ups"})],
    )
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    events = read_table(spark, warehouse_settings, EVENTS)

    views = register_typed_views(events, view_fields(spark, events, sample_hours=1.0))

    assert views == {
        "type_com_example_order_paid": paid,
        "type_com_example_order_shipped": "com.example.order.shipped",
    }
    view = spark.table("type_com_example_order_paid")
    types = dict(view.dtypes)
    assert (types["order"], types["amount"], types["data_id"]) == (
        "string",
        "decimal(38,2)",
        "bigint",
    )
    assert types["id"] == "string"  # the attribute keeps its name; the field is data_id
    rows = spark.sql(
        "SELECT order, amount FROM type_com_example_order_paid WHERE amount > 2 ORDER BY order"
    ).collect()
    assert [(r["order"], r["amount"]) for r in rows] == [
        ("o-2", Decimal("2.25")),
        ("o-3", Decimal("3.25")),
        ("o-4", Decimal("4.25")),
    ]
    assert spark.table("type_com_example_order_shipped").columns.count("carrier") == 1


def test_a_view_reads_a_decimal_larger_than_any_in_its_sample(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    paid = "com.example.order.paid"
    produce_all(warehouse_settings, topic_name, [_event("old", paid, {"amount": 123.45})])
    time.sleep(1.5)  # outside the sample: the newest second of Kafka time
    produce_all(warehouse_settings, topic_name, [_event("new", paid, {"amount": 1.25})])
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    events = read_table(spark, warehouse_settings, EVENTS)

    register_typed_views(events, view_fields(spark, events, sample_hours=1 / 3600))

    rows = spark.sql("SELECT id, amount FROM type_com_example_order_paid ORDER BY id").collect()
    assert [(r["id"], r["amount"]) for r in rows] == [
        ("new", Decimal("1.25")),
        ("old", Decimal("123.45")),
    ]


def test_the_type_report_says_when_a_types_shape_changed(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    shape = "com.example.shape"
    produce_all(warehouse_settings, topic_name, [_event("v1", shape, {"a": 1, "gone": True})])
    time.sleep(0.05)  # Kafka time orders the two shapes
    produce_all(warehouse_settings, topic_name, [_event("v2", shape, {"a": "x", "b": [1]})])
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))
    events = read_table(spark, warehouse_settings, EVENTS)

    (info,) = event_types(spark, events, sample_hours=1.0)

    changes = info.changes()
    assert (info.type, info.count, info.view) == (shape, 2, "type_com_example_shape")
    assert len(changes) == 3, changes
    assert changes[0].startswith("field gone disappeared after ")
    assert any(c.startswith("field a changed from NUMBER to STRING ") for c in changes)
    assert any(c.startswith("field b appeared ") for c in changes)
    assert info.fields["a"] == "VARIANT"  # both shapes are in the sample: read as VARIANT
    register_typed_views(events, view_fields(spark, events, sample_hours=1.0))
    assert spark.table("type_com_example_shape").count() == 2


def test_a_type_with_one_shape_reports_no_change(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    land(
        spark,
        warehouse_settings,
        topic_name,
        [_event(f"e{n}", "t.same", {"n": n}) for n in range(3)],
    )

    (info,) = event_types(spark, read_table(spark, warehouse_settings, EVENTS), sample_hours=1.0)

    assert info.changes() == []
    assert info.fields == {"n": "BIGINT"}


def test_eventlake_types_prints_each_type_with_its_view_and_columns(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    land(spark, warehouse_settings, topic_name, [_event("e1", "t.cli", {"n": 1, "s": "x"})])

    result = CliRunner().invoke(
        app, ["types", "--json", "--warehouse", str(warehouse_settings.warehouse)]
    )

    assert result.exit_code == 0, result.output
    (shown,) = json.loads(result.output[result.output.index("[") :])
    assert (shown["type"], shown["view"], shown["count"]) == ("t.cli", "type_t_cli", 1)
    assert shown["fields"] == {"n": "BIGINT", "s": "STRING"}
    assert shown["changes"] == []


def test_eventlake_types_keeps_the_columns_it_inferred_in_the_warehouse(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    land(spark, warehouse_settings, topic_name, [_event("e1", "t.kept", {"n": 1})])

    result = CliRunner().invoke(app, ["types", "--warehouse", str(warehouse_settings.warehouse)])

    assert result.exit_code == 0, result.output
    assert load_fields(fields_path(warehouse_settings.warehouse)) == {"t.kept": {"n": "BIGINT"}}


def test_views_take_a_known_types_columns_from_the_warehouse_and_infer_a_new_one(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    records = [_event("k1", "t.known", {"n": 1}), _event("u1", "t.new", {"s": "x"})]
    land(spark, warehouse_settings, topic_name, records)
    kept = fields_path(warehouse_settings.warehouse)
    # What an earlier inference kept: another column than the data would give now.
    save_fields(kept, {"t.known": {"m": "STRING"}})

    register_tables(spark, warehouse_settings)

    assert spark.table("type_t_known").columns.count("m") == 1
    assert "n" not in spark.table("type_t_known").columns
    assert dict(spark.table("type_t_new").dtypes)["s"] == "string"


def test_fields_kept_in_a_file_that_is_not_ours_are_inferred_again(tmp_path: Path) -> None:
    kept = fields_path(tmp_path)
    kept.parent.mkdir(parents=True)
    for text in ("not json", "[]", '{"types": 3}', '{"other": {}}'):
        kept.write_text(text)
        assert load_fields(kept) == {}, text


def test_eventlake_types_without_an_events_table_says_what_to_run(tmp_path: object) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    result = CliRunner().invoke(app, ["types", "--warehouse", str(tmp_path)])

    assert result.exit_code != 0
    assert "run `eventlake ingest` first" in result.output


def test_a_type_with_a_file_dataschema_gets_the_schemas_fields_and_types(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    uri = _schema_file(tmp_path, json.dumps(PAID_SCHEMA))
    land(spark, warehouse_settings, topic_name, [_paid("p1", uri), _paid("p2", uri)])
    events = read_table(spark, warehouse_settings, EVENTS)

    (columns,) = type_columns(spark, events, sample_hours=1.0).values()
    register_typed_views(events, view_fields(spark, events, sample_hours=1.0))

    assert columns == TypeColumns(
        {
            "order": "STRING",
            "paid_at": "TIMESTAMP",
            "amount": "DOUBLE",
            "refund": "DECIMAL(38,2)",
            "note": "STRING",  # not in the schema: from the data
        },
        uri,
    )
    assert columns.source() == f"dataschema {uri}"
    view = spark.table("type_order_paid")
    data_columns = view.columns[
        view.columns.index("extensions") + 1 : view.columns.index("data_json")
    ]
    assert data_columns == ["order", "paid_at", "amount", "refund", "note"]
    row = view.where("id = 'p1'").first()
    assert row is not None
    assert (row["amount"], row["refund"], row["paid_at"].year) == (12.25, None, 2026)
    assert dict(view.dtypes)["paid_at"] == "timestamp"


def test_an_unreadable_dataschema_leaves_the_columns_to_inference_and_says_why(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    garbage = _schema_file(tmp_path, "<html>not a schema</html>")
    land(spark, warehouse_settings, topic_name, [_paid("p1", garbage)])
    events = read_table(spark, warehouse_settings, EVENTS)

    (columns,) = type_columns(spark, events, sample_hours=1.0).values()

    assert columns.fields == {
        "amount": "DECIMAL(38,2)",
        "note": "STRING",
        "order": "STRING",
        "paid_at": "STRING",
    }
    assert (columns.dataschema, columns.unread) == (garbage, "not JSON: Expecting value at line 1")
    assert columns.source() == f"data (dataschema {garbage} not read: {columns.unread})"


def test_an_http_dataschema_is_fetched_only_with_the_setting(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    with http_server({"/paid.json": (200, {}, json.dumps(PAID_SCHEMA).encode())}) as base:
        uri = f"{base}/paid.json"
        land(spark, warehouse_settings, topic_name, [_paid("p1", uri)])
        events = read_table(spark, warehouse_settings, EVENTS)

        (by_default,) = type_columns(spark, events, sample_hours=1.0).values()
        register_typed_views(
            events, view_fields(spark, events, sample_hours=1.0, fetch_dataschemas=True)
        )

    assert by_default.fields["amount"] == "DECIMAL(38,2)"  # inferred: nothing fetched
    assert by_default.unread is not None
    assert by_default.unread.startswith("http(s) dataschemas are not fetched")
    view = dict(spark.table("type_order_paid").dtypes)
    assert (view["amount"], view["refund"], view["paid_at"]) == (
        "double",
        "decimal(38,2)",
        "timestamp",
    )


def test_eventlake_types_shows_where_each_types_columns_came_from(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    uri = _schema_file(tmp_path, json.dumps(PAID_SCHEMA))
    records = [
        _paid("p1", uri),
        _event("r1", "order.refunded", {"n": 1}, dataschema="urn:example:refund"),
        _event("s1", "order.shipped", {"n": 1}),
    ]
    land(spark, warehouse_settings, topic_name, records)
    warehouse = ["--warehouse", str(warehouse_settings.warehouse)]

    text = CliRunner().invoke(app, ["types", *warehouse])
    shown = CliRunner().invoke(app, ["types", "--json", *warehouse])

    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    header = next(line for line in lines if line.startswith("type "))
    assert header.rstrip().endswith("| columns from")
    paid = next(line for line in lines if line.startswith("order.paid "))
    assert paid.rstrip().endswith(f"| dataschema {uri}")
    assert any(
        line.startswith("order.shipped ") and line.rstrip().endswith("| data") for line in lines
    )
    assert (
        "order.refunded: dataschema urn:example:refund not read (the scheme urn: is not read); "
        "its columns are inferred from its data"
    ) in lines
    by_type = {t["type"]: t for t in json.loads(shown.output[shown.output.index("[") :])}
    assert (by_type["order.paid"]["columns_from"], by_type["order.paid"]["dataschema"]) == (
        "dataschema",
        uri,
    )
    assert by_type["order.refunded"]["columns_from"] == "data"
    assert by_type["order.refunded"]["dataschema_unread"] == "the scheme urn: is not read"
    assert by_type["order.shipped"]["dataschema"] is None
    kept = load_columns(fields_path(warehouse_settings.warehouse))
    assert kept["order.paid"].source() == f"dataschema {uri}"
    assert kept["order.paid"].fields["refund"] == "DECIMAL(38,2)"


def test_columns_kept_with_their_dataschema_read_back_and_older_files_still_load(
    tmp_path: Path,
) -> None:
    kept = fields_path(tmp_path)
    columns = {
        "a": TypeColumns({"n": "BIGINT"}, "file:///s.json"),
        "b": TypeColumns({"s": "STRING"}, "urn:x", "the scheme urn: is not read"),
        "c": TypeColumns({}),
    }
    save_columns(kept, columns)
    assert load_columns(kept) == columns
    # A file an older eventlake wrote: no dataschemas.
    kept.write_text('{"inferred_at": "2026-11-25T10:00:00+00:00", "types": {"a": {"n": "BIGINT"}}}')
    assert load_fields(kept) == {"a": {"n": "BIGINT"}}
    assert load_columns(kept) == {"a": TypeColumns({"n": "BIGINT"})}
