"""eventlake.event_types: a typed view per event type, and each type's shape over time,
on events landed from the real broker."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.event_types import (
    event_types,
    fields_path,
    load_fields,
    register_typed_views,
    save_fields,
    view_name,
    view_names,
)
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka import Record, create_topic, produce_all
from eventlake.local.broker import LocalBroker
from eventlake.query import register_tables
from eventlake.settings import Settings
from eventlake.tables import EVENTS
from tests.helpers import binary_headers, land, read_table


def _event(event_id: str, event_type: str, data: object) -> Record:
    headers = binary_headers(event_id, type_=event_type)
    headers.append(("content-type", b"application/json"))
    return (event_id.encode(), json.dumps(data).encode(), headers)


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

    views = register_typed_views(spark, events, sample_hours=1.0)

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

    register_typed_views(spark, events, sample_hours=1 / 3600)

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
    register_typed_views(spark, events, sample_hours=1.0)
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
