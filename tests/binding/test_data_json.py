"""``data_json``: an event's JSON data as a VARIANT in events (and state), on the real
broker and Spark; ``data`` stays the exact bytes; older tables gain the column."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable as DeltaRsTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.warehouse.names import EVENTS, REJECTS
from eventlake.warehouse.schemas import EVENTS_SCHEMA, REJECTS_SCHEMA
from eventlake.warehouse.tables import ensure_table
from tests.helpers import binary_headers, land, read_table

STRUCTURED = [("content-type", b"application/cloudevents+json")]


def _binary(event_id: str, value: bytes | None, content_type: str | None) -> Record:
    headers = binary_headers(event_id)
    if content_type is not None:
        headers.append(("content-type", content_type.encode()))
    return (event_id.encode(), value, headers)


def _structured(event_id: str, **members: object) -> Record:
    event = {"specversion": "1.0", "id": event_id, "source": "/tests", "type": "t.test"}
    event.update(members)
    return (event_id.encode(), json.dumps(event).encode(), STRUCTURED)


def _landed(spark: SparkSession, settings: Settings) -> dict[str, tuple[bytes | None, str | None]]:
    """Per event id, (data, data_json as JSON text)."""
    rows = (
        read_table(spark, settings, EVENTS)
        .select("id", "data", F.to_json("data_json").alias("json"))
        .collect()
    )
    return {r["id"]: (None if r["data"] is None else bytes(r["data"]), r["json"]) for r in rows}


def test_json_data_is_a_variant_in_both_modes_for_every_json_media_type(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    order = b'{"order":"o-1","amount":12.50,"lines":[1,2]}'
    records = [
        _binary("b-json", order, "application/json"),
        _binary("b-charset", order, "application/json; charset=utf-8"),
        _binary("b-text-json", order, "text/json"),
        _binary("b-suffix", order, "application/vnd.example.order+json"),
        _structured("s-object", data={"order": "o-2", "amount": 3}),
        _structured("s-untyped-string", data="hello"),
        _structured("s-json-string", datacontenttype="application/json", data="hi"),
        _structured(
            "s-base64",
            datacontenttype="application/json",
            data_base64=base64.b64encode(order).decode(),
        ),
    ]
    produce_all(warehouse_settings, topic_name, records)

    summary = run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    landed = _landed(spark, warehouse_settings)
    expected_order = '{"amount":12.5,"lines":[1,2],"order":"o-1"}'  # to_json: 12.5
    for event_id in ("b-json", "b-charset", "b-text-json", "b-suffix", "s-base64"):
        assert landed[event_id] == (order, expected_order), event_id
    assert landed["s-object"][1] == '{"amount":3,"order":"o-2"}'
    assert landed["s-untyped-string"][1] == '"hello"'
    assert landed["s-json-string"][1] == '"hi"'
    assert summary.data_json_invalid == 0


def test_data_that_is_not_json_by_its_media_type_has_no_variant(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    summary = land(
        spark,
        warehouse_settings,
        topic_name,
        [
            _binary("b-text", b'{"a":1}', "text/plain"),
            _binary("b-untyped", b'{"a":1}', None),
            _binary("b-octets", b"\x00\xff", "application/octet-stream"),
            _binary("b-no-data", None, "application/json"),
            _structured("s-text", datacontenttype="text/plain", data="{}"),
            _structured("s-base64-untyped", data_base64=base64.b64encode(b"{}").decode()),
        ],
    )

    landed = _landed(spark, warehouse_settings)
    assert len(landed) == 6
    assert {event_id: json_text for event_id, (_, json_text) in landed.items()} == dict.fromkeys(
        landed
    )
    assert landed["b-text"][0] == b'{"a":1}'
    assert summary.data_json_invalid == 0


def test_malformed_json_data_lands_with_its_bytes_and_is_counted(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    broken = [b'{"a":', b"", b'{"a":1,"a":2}', b"1 2", b"\xff"]
    produce_all(
        warehouse_settings,
        topic_name,
        [_binary(f"bad-{n}", value, "application/json") for n, value in enumerate(broken)]
        + [_binary("good", b"[true]", "application/json")],
    )

    summary = run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    landed = _landed(spark, warehouse_settings)
    assert summary.events == 6 and summary.rejects == 0
    assert summary.data_json_invalid == len(broken)
    assert "data_json_invalid=5" in summary.line()
    for n, value in enumerate(broken):
        assert landed[f"bad-{n}"] == (value, None)
    assert landed["good"] == (b"[true]", "[true]")


def test_tables_from_before_data_json_gain_the_column_without_a_rewrite(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    events_path = warehouse_settings.table_path(EVENTS)
    older = StructType([f for f in EVENTS_SCHEMA.fields if f.name != "data_json"])
    ensure_table(spark, str(events_path), older)
    ensure_table(spark, str(warehouse_settings.table_path(REJECTS)), REJECTS_SCHEMA)
    spark.createDataFrame([("old-1", "/old")], "id string, source string").write.format(
        "delta"
    ).mode("append").save(str(events_path))
    files_before = set(DeltaRsTable(str(events_path)).file_uris())
    land(spark, warehouse_settings, topic_name, [_binary("new-1", b'{"x":1}', "application/json")])

    landed = _landed(spark, warehouse_settings)
    assert landed["old-1"] == (None, None)
    assert landed["new-1"] == (b'{"x":1}', '{"x":1}')
    assert files_before <= set(DeltaRsTable(str(events_path)).file_uris())


def test_delta_rs_reads_the_events_table_with_its_variant_as_a_binary_pair(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    land(spark, warehouse_settings, topic_name, [_binary("v-1", b'{"k":"v"}', "application/json")])

    table = DeltaRsTable(str(Path(warehouse_settings.table_path(EVENTS)))).to_pyarrow_table()

    assert pa.types.is_struct(table.schema.field("data_json").type)
    row = table.to_pylist()[0]
    assert row["data"] == b'{"k":"v"}'
    assert set(row["data_json"]) == {"metadata", "value"}
    assert b"k" in row["data_json"]["metadata"] and b"v" in row["data_json"]["value"]


def test_the_state_table_holds_data_json_too(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    from eventlake.warehouse.names import state_path

    land(
        spark,
        warehouse_settings,
        topic_name,
        [
            _binary("k1", b'{"v":1}', "application/json"),
            _binary("k1", b'{"v":2}', "application/json"),
        ],
        state=True,
    )

    state = spark.read.format("delta").load(str(state_path(warehouse_settings, topic_name)))
    assert [r["j"] for r in state.select(F.to_json("data_json").alias("j")).collect()] == [
        '{"v":2}'
    ]
