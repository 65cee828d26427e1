"""The typed tables on the real broker and Spark: one per event type, its data's fields
as plain columns that readers without VARIANT support read (delta-rs, Polars), kept
exactly once from ``events`` whatever lands the topic, a crash between two commits
included."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.ledger.commits import Ledger
from eventlake.ledger.marks import TYPED
from eventlake.local.broker import LocalBroker
from eventlake.status.report import warehouse_status
from eventlake.typed.names import typed_lag, typed_tables
from eventlake.typed.step import update_typed_tables
from eventlake.warehouse.names import EVENTS
from tests.helpers import binary_headers, read_table, typed_once

PAID, SHIPPED = "com.example.order.paid", "com.example.order.shipped"


def _produce(settings: Settings, topic: str, events: list[tuple[str, str, dict[str, Any]]]) -> None:
    produce_all(
        settings,
        topic,
        [
            (
                event_id.encode(),
                json.dumps(data).encode(),
                [
                    *binary_headers(event_id, type_=event_type),
                    ("ce_datacontenttype", b"application/json"),
                ],
            )
            for event_id, event_type, data in events
        ],
    )


def _orders(prefix: str, count: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (f"{prefix}{n}", PAID if n % 2 else SHIPPED, {"order": f"o{n}", "amount": n + 0.25})
        for n in range(count)
    ]


@pytest.fixture
def typed_settings(warehouse_settings: Settings) -> Settings:
    """A warehouse of the test's own, with the typed tables kept."""
    return warehouse_settings.model_copy(update={"typed_tables": True})


def test_each_type_gets_a_table_of_plain_columns_that_polars_and_delta_rs_read(
    broker: LocalBroker, spark: SparkSession, typed_settings: Settings, topic_name: str
) -> None:
    create_topic(typed_settings, topic_name, partitions=2)
    _produce(typed_settings, topic_name, _orders("a", 40))
    run_ingest(spark, typed_settings, IngestRequest(topics=(topic_name,)))
    assert typed_once(spark, typed_settings) == {PAID: 20, SHIPPED: 20}
    path = typed_tables(typed_settings)[PAID]
    assert path.name == "com_example_order_paid"
    frame = pl.read_delta(str(path))
    assert frame.schema["amount"] == pl.Decimal(38, 2)
    assert frame["amount"].sum() == Decimal("405.00")  # 1.25 + 3.25 + ... + 39.25
    rows = DeltaTable(str(path)).to_pyarrow_table(columns=["order", "amount"]).to_pylist()
    assert {"order": "o1", "amount": Decimal("1.25")} in rows


def test_a_new_types_table_takes_its_newest_events_dataschema_then_the_datas_other_fields(
    broker: LocalBroker,
    spark: SparkSession,
    typed_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "refund": {"type": "number", "multipleOf": 0.01},
            "order": {"type": "string"},
        },
    }
    uri = (tmp_path / "paid.schema.json").as_uri()
    (tmp_path / "paid.schema.json").write_text(json.dumps(schema))
    create_topic(typed_settings, topic_name)
    headers = [
        *binary_headers("p1", type_=PAID),
        ("ce_datacontenttype", b"application/json"),
        ("ce_dataschema", uri.encode()),
    ]
    produce_all(typed_settings, topic_name, [(b"p1", b'{"order": "o1", "n": 3}', headers)])
    run_ingest(spark, typed_settings, IngestRequest(topics=(topic_name,)))
    table = spark.read.format("delta").load(str(typed_tables(typed_settings)[PAID]))
    fields = table.columns[
        table.columns.index("extensions") + 1 : table.columns.index("kafka_topic")
    ]
    assert fields == ["refund", "order", "n"]  # the schema's, in its order, then the data's
    assert dict(table.dtypes)["refund"] == "decimal(38,2)"
    assert table.select("order", "n", "refund").first() == ("o1", 3, None)


def test_a_new_field_becomes_a_column_and_a_value_of_another_type_is_null_kept_in_events(
    broker: LocalBroker, spark: SparkSession, typed_settings: Settings, topic_name: str
) -> None:
    create_topic(typed_settings, topic_name)
    _produce(typed_settings, topic_name, _orders("a", 4))
    run_ingest(spark, typed_settings, IngestRequest(topics=(topic_name,)))
    _produce(
        typed_settings,
        topic_name,
        [("b1", PAID, {"order": "o9", "amount": "lots", "coupon": {"code": "X1"}})],
    )
    run_ingest(spark, typed_settings, IngestRequest(topics=(topic_name,)))
    rows = spark.read.format("delta").load(str(typed_tables(typed_settings)[PAID]))
    last = rows.where("id = 'b1'").select("amount", "coupon", "kafka_offset").first()
    assert last is not None
    assert last["amount"] is None
    assert last["coupon"] == '{"code":"X1"}'
    kept = read_table(spark, typed_settings, EVENTS).where(f"kafka_offset = {last['kafka_offset']}")
    assert json.loads(bytes(kept.first()["data"]))["amount"] == "lots"  # events keeps it
    assert rows.where("coupon IS NULL").count() == 2  # the events from before the field


def test_typed_tables_catch_up_what_runs_without_them_landed_and_say_their_lag(
    broker: LocalBroker, spark: SparkSession, typed_settings: Settings, topic_name: str
) -> None:
    create_topic(typed_settings, topic_name, partitions=2)
    _produce(typed_settings, topic_name, _orders("a", 10))
    run_ingest(spark, typed_settings, IngestRequest(topics=(topic_name,)))
    assert typed_lag(typed_settings, [topic_name]) == {PAID: 0, SHIPPED: 0}
    without = typed_settings.model_copy(update={"typed_tables": False})
    _produce(typed_settings, topic_name, _orders("b", 30))
    run_ingest(spark, without, IngestRequest(topics=(topic_name,)))
    assert typed_lag(typed_settings, [topic_name]) == {PAID: 30, SHIPPED: 30}
    report = warehouse_status(typed_settings, ask_kafka=False)
    assert f"typed table of {PAID}: 30 offsets of events behind" in report.render()
    backfill = IngestRequest(topics=(topic_name,), ending_offsets="latest")
    run_ingest(spark, typed_settings, backfill)  # nothing to land: the typed tables catch up
    assert typed_lag(typed_settings, [topic_name]) == {PAID: 0, SHIPPED: 0}
    assert typed_once(spark, typed_settings) == {PAID: 20, SHIPPED: 20}


def test_a_crash_between_two_types_commits_then_a_rerun_lands_each_event_once(
    broker: LocalBroker,
    spark: SparkSession,
    typed_settings: Settings,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    create_topic(typed_settings, topic_name, partitions=2)
    _produce(typed_settings, topic_name, _orders("a", 20))
    run_ingest(spark, typed_settings, IngestRequest(topics=(topic_name,)))
    _produce(typed_settings, topic_name, _orders("b", 20))
    without = typed_settings.model_copy(update={"typed_tables": False})
    run_ingest(spark, without, IngestRequest(topics=(topic_name,)))

    real_commit = Ledger.commit
    typed_commits = []

    def crash_after_the_first(self: Ledger, path: str, *args: Any, **kwargs: Any) -> int:
        if args[1] == TYPED and typed_commits:
            raise KeyboardInterrupt("killed between two typed tables' commits")
        version = real_commit(self, path, *args, **kwargs)
        if args[1] == TYPED:
            typed_commits.append(path)
        return version

    monkeypatch.setattr(Ledger, "commit", crash_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        update_typed_tables(spark, typed_settings, Ledger(spark), [topic_name], note="t")
    assert len(typed_commits) == 1
    monkeypatch.setattr(Ledger, "commit", real_commit)
    result = update_typed_tables(spark, typed_settings, Ledger(spark), [topic_name], note="t")
    assert result.rows == {PAID: 0, SHIPPED: 10}  # PAID's commit had landed
    assert typed_once(spark, typed_settings) == {PAID: 20, SHIPPED: 20}
