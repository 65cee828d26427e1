"""Re-key and republish on the real broker: Key Mappers, content modes, tombstones,
header transforms, the routing trail, rejects, and a chain into a state table.

One source topic holds a small corpus (hand-made records and events made by the
official CloudEvents SDK); each republish configuration runs once per module and the
tests read its target topic back and compare it with the source byte for byte.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cloudevents.core.base import BaseCloudEvent
from cloudevents.core.bindings import kafka as ce_kafka
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.binding import decode_records
from eventlake.broker import LocalBroker
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.json_shape import single_json_value
from eventlake.kafka import Record, create_topic, produce_all, spark_kafka_options
from eventlake.republish import (
    DEFAULT_TRAIL_HEADER,
    RepublishError,
    RepublishRequest,
    RepublishSummary,
    run_republish,
)
from eventlake.republish import run as run_module
from eventlake.republish.encode import encode_as
from eventlake.settings import Settings
from eventlake.tables import state_path
from tests.helpers import read_table
from tests.test_partitioner import java_partition

Headers = list[tuple[str, bytes | None]]
TARGET_PARTITIONS = 3
STRUCTURED_CT = b"application/cloudevents+json; charset=UTF-8"
SDK_TIME = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def _ce(event_id: str, type_: str, source: bytes = b"/shop", **extra: bytes) -> Headers:
    headers: Headers = [
        ("ce_specversion", b"1.0"),
        ("ce_id", event_id.encode()),
        ("ce_source", source),
        ("ce_type", type_.encode()),
    ]
    return headers + [(f"ce_{name}", value) for name, value in extra.items()]


def _structured(members: dict[str, Any]) -> bytes:
    return json.dumps(members).encode()  # the SDK's style: ", " and ": " separators


JSON_CT: Headers = [("content-type", b"application/cloudevents+json")]

#: name -> (key, value, headers). Every record is distinct, so it can be found again.
CORPUS: dict[str, tuple[bytes | None, bytes | None, Headers]] = {
    "bin-json": (
        b"r1",
        b'{"amount": 1.50, "items": [1, 2]}',
        [
            ("trace", b"\x00\x01"),
            *_ce(
                "b1",
                "order.created",
                time=b"2024-05-06T07:08:09.123456789+02:00",
                subject=b"order-1",
                partitionkey=b"cust-1",
            ),
            ("content-type", b"application/json"),
            ("trace", b"dup"),
        ],
    ),
    "bin-bytes": (
        b"r2",
        b"\xff\x00\x10",
        [*_ce("b2", "blob", partitionkey=b"cust-2"), ("content-type", b"application/octet-stream")],
    ),
    "bin-text": (
        b"r3",
        "héllo\n".encode(),
        [
            *_ce("b3", "note", partitionkey=b"cust-1"),
            ("content-type", b"text/plain; charset=utf-8"),
        ],
    ),
    "bin-tombstone": (b"r4", None, _ce("b4", "deleted", partitionkey=b"cust-2")),
    "st-json": (
        b"r5",
        _structured(
            {
                "specversion": "1.0",
                "id": "s5",
                "source": "/crm",
                "type": "customer.updated",
                "datacontenttype": "application/json",
                "partitionkey": "cust-3",
                "priority": 5,
                "data": {"name": "Zoë", "tags": ["a", "b"]},
            }
        ),
        [*JSON_CT, ("origin", b"eu")],
    ),
    "st-base64": (
        b"r6",
        _structured(
            {
                "specversion": "1.0",
                "id": "s6",
                "source": "/crm",
                "type": "avatar",
                "datacontenttype": "image/png",
                "partitionkey": "cust-1",
                "data_base64": "iVBORw==",
            }
        ),
        JSON_CT,
    ),
    "st-nodata": (
        b"r7",
        _structured(
            {
                "specversion": "1.0",
                "id": "s7",
                "source": "/crm",
                "type": "customer.ping",
                "partitionkey": "cust-4",
            }
        ),
        JSON_CT,
    ),
    "bin-no-partitionkey": (
        b"r8",
        b"{}",
        [*_ce("b8", "order.viewed"), ("content-type", b"application/json")],
    ),
    "not-a-cloudevent": (b"r9", b"plain bytes", [("x", b"1")]),
    "plain-tombstone": (b"r10", None, []),
    "no-key": (
        None,
        b'"text"',
        [
            *_ce("b11", "order.noted", subject=b"order-11", partitionkey=b"cust-5"),
            ("content-type", b"application/json"),
        ],
    ),
}


def _sdk_events() -> dict[str, tuple[BaseCloudEvent, bool]]:
    """Events made with the official SDK: name -> (event, sent in binary mode)."""

    def event(event_id: str, key: str, content_type: str, data: Any) -> CloudEvent:
        attributes = {
            "type": "sdk.test",
            "source": "/sdk",
            "id": event_id,
            "time": SDK_TIME,
            "subject": f"subject-{event_id}",
            "partitionkey": key,
            "datacontenttype": content_type,
        }
        return CloudEvent(attributes, data)

    return {
        "sdk-bin-json": (
            event("k1", "cust-7", "application/json", {"message": "Hello", "n": [1, 2.5]}),
            True,
        ),
        "sdk-st-text": (event("k2", "cust-8", "text/plain", "plain text"), False),
        "sdk-bin-bytes": (event("k3", "cust-9", "application/octet-stream", b"\xff\xfe\x00"), True),
        "sdk-st-json": (event("k4", "cust-7", "application/json", {"a": {"b": None}}), False),
    }


def _sdk_record(event: BaseCloudEvent, binary: bool) -> tuple[bytes | None, bytes | None, Headers]:
    message = (ce_kafka.to_binary if binary else ce_kafka.to_structured)(event, JSONFormat())
    key = message.key.encode() if isinstance(message.key, str) else message.key
    return key, message.value, list(message.headers.items())


SDK_EVENTS = _sdk_events()
SOURCE_RECORDS = CORPUS | {name: _sdk_record(e, b) for name, (e, b) in SDK_EVENTS.items()}


@dataclass(frozen=True)
class Out:
    """One record of a target topic, with the source record it came from."""

    source: str
    key: bytes | None
    value: bytes | None
    headers: Headers
    partition: int
    offset: int
    trail: list[dict[str, Any]]

    @property
    def headers_without_trail(self) -> Headers:
        return [(k, v) for k, v in self.headers if k != DEFAULT_TRAIL_HEADER]


@dataclass(frozen=True)
class Republished:
    summary: RepublishSummary
    request: RepublishRequest
    settings: Settings
    records: dict[str, Out]
    rejects: dict[str, tuple[str, str]]

    @property
    def target(self) -> str:
        return self.request.target


@dataclass(frozen=True)
class Source:
    topic: str
    by_coordinates: dict[tuple[int, int], str]


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def read_topic(spark: SparkSession, settings: Settings, topic: str) -> list[Any]:
    return (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .orderBy("partition", "offset")
        .collect()
    )


def _headers(row: Any) -> Headers:
    return [(h.key, _bytes(h.value)) for h in (row.headers or [])]


@pytest.fixture(scope="module")
def source(broker: LocalBroker, spark: SparkSession, settings: Settings) -> Source:
    topic = f"republish-src-{uuid.uuid4().hex[:6]}"
    create_topic(settings, topic, partitions=2)
    records: list[Record] = [
        (key, value, [(k, v or b"") for k, v in headers])
        for key, value, headers in SOURCE_RECORDS.values()
    ]
    produce_all(settings, topic, records)
    names = {(k, v, tuple(h)): name for name, (k, v, h) in SOURCE_RECORDS.items()}
    by_coordinates = {
        (row.partition, row.offset): names[
            (_bytes(row.key), _bytes(row.value), tuple(_headers(row)))
        ]
        for row in read_topic(spark, settings, topic)
    }
    assert len(by_coordinates) == len(SOURCE_RECORDS)
    return Source(topic=topic, by_coordinates=by_coordinates)


RUNS: dict[str, dict[str, Any]] = {
    "keep": {"streaming": True},
    "partitionkey": {"key_mapper": "partitionkey"},
    "subject": {"key_mapper": "attribute:subject", "on_missing": "null-key"},
    "to-binary": {"key_mapper": "partitionkey", "to_mode": "binary"},
    "to-structured": {"key_mapper": "partitionkey", "to_mode": "structured"},
    "reject-and-transforms": {
        "key_mapper": "partitionkey",
        "on_missing": "reject",
        "drop_headers": ("trace",),
        "attribute_headers": (("subject", "x-subject"), ("id", "x-id")),
        "insert_headers": (("team", "payments"),),
    },
    "structured-allowing-tombstones": {
        "key_mapper": "partitionkey",
        "to_mode": "structured",
        "allow_tombstone_to_structured": True,
        "header_attributes": (("origin", "origin"),),
    },
    "compacted-keep": {"cleanup_policy": "compact"},
}


Runner = Callable[..., Republished]


@pytest.fixture(scope="module")
def republished(
    spark: SparkSession,
    settings: Settings,
    source: Source,
    tmp_path_factory: pytest.TempPathFactory,
) -> Runner:
    """Run a configuration of RUNS once (memoized) and read its target back."""
    base = tmp_path_factory.mktemp("republish")
    done: dict[str, Republished] = {}

    def run(label: str, *, from_topic: str | None = None, **extra: Any) -> Republished:
        if label in done:
            return done[label]
        options = dict(RUNS.get(label, {})) | extra
        streaming = options.pop("streaming", False)
        run_settings = settings.model_copy(update={"warehouse": base / label})
        request = RepublishRequest(
            source=from_topic or source.topic,
            target=f"{source.topic}-{label}",
            partitions=TARGET_PARTITIONS,
            ending_offsets=None if streaming else "latest",
            **options,
        )
        summary = run_republish(spark, run_settings, request)
        records: dict[str, Out] = {}
        for row in read_topic(spark, settings, request.target):
            headers = _headers(row)
            trail = [json.loads(v or b"") for k, v in headers if k == DEFAULT_TRAIL_HEADER]
            name = source.by_coordinates[(trail[0]["partition"], trail[0]["offset"])]
            out = Out(
                name, _bytes(row.key), _bytes(row.value), headers, row.partition, row.offset, trail
            )
            records[name] = out
        rejects = {
            _source_name(source, r): (r.reason, r.detail)
            for r in (
                read_table(spark, run_settings, "rejects").collect() if summary.rejected else []
            )
        }
        done[label] = Republished(summary, request, run_settings, records, rejects)
        return done[label]

    return run


def _source_name(source: Source, reject: Any) -> str:
    """The corpus record a reject row comes from: by its first trail entry when an
    earlier hop republished it, else by its coordinates in the source topic."""
    trail = [
        json.loads(h.value) for h in reject.kafka_headers or [] if h.key == DEFAULT_TRAIL_HEADER
    ]
    if trail:
        return source.by_coordinates[(trail[0]["partition"], trail[0]["offset"])]
    return source.by_coordinates[(reject.kafka_partition, reject.kafka_offset)]


def _original(name: str) -> tuple[bytes | None, bytes | None, Headers]:
    return SOURCE_RECORDS[name]


def _binary_mode(name: str) -> bool:
    content_type = dict(_original(name)[2]).get("content-type") or b""
    return _is_cloudevent(name) and not content_type.startswith(b"application/cloudevents")


def _is_cloudevent(name: str) -> bool:
    return name not in ("not-a-cloudevent", "plain-tombstone")


# --- request validation -------------------------------------------------------------


@pytest.mark.parametrize("name", ["ce_id", "content-type", "CE_type", "Content-Type"])
def test_cloudevents_headers_cannot_be_dropped(name: str) -> None:
    with pytest.raises(RepublishError, match="carry the event"):
        RepublishRequest(source="a", target="b", drop_headers=(name,))


@pytest.mark.parametrize(
    "option",
    [
        {"insert_headers": (("ce_id", "x"),)},
        {"attribute_headers": (("subject", "content-type"),)},
    ],
)
def test_cloudevents_headers_cannot_be_written_by_transforms(option: dict[str, Any]) -> None:
    with pytest.raises(RepublishError, match="carry the event"):
        RepublishRequest(source="a", target="b", **option)


def test_trail_header_cannot_be_dropped() -> None:
    with pytest.raises(RepublishError, match="append-only"):
        RepublishRequest(source="a", target="b", drop_headers=(DEFAULT_TRAIL_HEADER,))


def test_source_and_target_must_differ() -> None:
    with pytest.raises(RepublishError, match="same topic"):
        RepublishRequest(source="a", target="a")


def test_unknown_key_mapper_is_refused_with_the_accepted_forms() -> None:
    with pytest.raises(RepublishError, match="attribute:<name>"):
        RepublishRequest(source="a", target="b", key_mapper="subject")


def test_header_to_attribute_needs_the_structured_conversion() -> None:
    with pytest.raises(RepublishError, match="--to-mode structured"):
        RepublishRequest(source="a", target="b", header_attributes=(("origin", "origin"),))


def test_single_json_value_refuses_what_spark_parses_leniently(spark: SparkSession) -> None:
    texts = {
        '{"a":1}': True,
        ' [1, {"b": "}{"}]\n': True,
        '"x"': True,
        "-1.5e3": True,
        '{"a":1}}': False,  # Spark's parser stops after the object
        '{"a":1} {"b":2}': False,
        "1 2": False,
        "[1]]": False,
        "nul": False,
        "": False,
    }
    frame = spark.createDataFrame([(t,) for t in texts], "text string")
    rows = frame.select("text", single_json_value(F.col("text")).alias("ok")).collect()
    assert {r.text: r.ok for r in rows} == texts


def test_cli_refuses_dropping_a_cloudevents_header_with_exit_code_2() -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    result = CliRunner().invoke(
        app, ["republish", "--source", "a", "--target", "b", "--drop-header", "ce_id"]
    )
    assert result.exit_code == 2
    assert "carry the event" in result.output


# --- Key Mappers with the content mode kept -------------------------------------------


def test_keep_mapper_republishes_every_record_byte_for_byte(republished: Runner) -> None:
    run = republished("keep")
    assert set(run.records) == set(SOURCE_RECORDS)
    for name, out in run.records.items():
        key, value, headers = _original(name)
        assert (out.key, out.value, out.headers_without_trail) == (key, value, headers), name
        assert out.headers[-1][0] == DEFAULT_TRAIL_HEADER


@pytest.mark.parametrize(
    ("label", "attribute"), [("partitionkey", "partitionkey"), ("subject", "subject")]
)
def test_mapper_sets_the_key_from_the_attribute(
    republished: Runner, label: str, attribute: str
) -> None:
    run = republished(label)
    with_attribute = 0
    for name, out in run.records.items():
        text = dict(_original(name)[2]).get(f"ce_{attribute}")
        if text is None and name.startswith(("st-", "sdk-st-")):
            text = _structured_attribute(name, attribute)
        if text is not None:
            with_attribute += 1
            assert out.key == text, name
    assert with_attribute >= 4


def _structured_attribute(name: str, attribute: str) -> bytes | None:
    value = json.loads(_original(name)[1] or b"{}").get(attribute)
    return None if value is None else str(value).encode()


@pytest.mark.parametrize("label", ["partitionkey", "subject"])
def test_mapper_leaves_value_and_headers_untouched(republished: Runner, label: str) -> None:
    run = republished(label)
    assert set(run.records) == {n for n in SOURCE_RECORDS if _is_cloudevent(n)}
    for name, out in run.records.items():
        _, value, headers = _original(name)
        assert (out.value, out.headers_without_trail) == (value, headers), name


@pytest.mark.parametrize("label", ["keep", "partitionkey", "subject", "to-binary", "to-structured"])
def test_records_land_on_the_java_partitioners_partition(
    spark: SparkSession, republished: Runner, label: str
) -> None:
    run = republished(label)
    keyed = [out for out in run.records.values() if out.key is not None]
    assert keyed
    for out in keyed:
        assert out.partition == java_partition(spark, out.key or b"", TARGET_PARTITIONS)


def test_records_that_are_not_cloudevents_go_to_rejects_when_the_mapper_needs_an_event(
    republished: Runner,
) -> None:
    run = republished("partitionkey")
    assert {n: r for n, (r, _) in run.rejects.items()} == {
        "not-a-cloudevent": "not_a_cloudevent",
        "plain-tombstone": "plain_tombstone",
    }
    assert dict(run.summary.rejects_by_reason) == {"not_a_cloudevent": 1, "plain_tombstone": 1}


def test_republish_rejects_name_the_route_that_read_them(
    republished: Runner, spark: SparkSession
) -> None:
    run = republished("partitionkey")
    rows = read_table(spark, run.settings, "rejects").select("rejected_by").distinct().collect()
    assert [row.rejected_by for row in rows] == [f"republish:{run.target}"]


def test_binary_tombstone_stays_a_tombstone_under_its_new_key(republished: Runner) -> None:
    out = republished("partitionkey").records["bin-tombstone"]
    assert (out.key, out.value) == (b"cust-2", None)


# --- missing key attribute ----------------------------------------------------------


def test_missing_attribute_keeps_the_old_key_by_default(republished: Runner) -> None:
    assert republished("partitionkey").records["bin-no-partitionkey"].key == b"r8"


def test_missing_attribute_gives_a_null_key_when_asked(republished: Runner) -> None:
    assert republished("subject").records["bin-no-partitionkey"].key is None


def test_missing_attribute_is_rejected_when_asked(republished: Runner) -> None:
    run = republished("reject-and-transforms")
    assert "bin-no-partitionkey" not in run.records
    reason, detail = run.rejects["bin-no-partitionkey"]
    assert reason == "missing_key_attribute"
    assert "partitionkey" in detail


# --- content modes ------------------------------------------------------------------

EXPECTED_STRUCTURED = {
    "bin-json": (
        b'{"specversion":"1.0","id":"b1","source":"/shop","type":"order.created",'
        b'"datacontenttype":"application/json","subject":"order-1",'
        b'"time":"2024-05-06T07:08:09.123456789+02:00","partitionkey":"cust-1",'
        b'"data":{"amount": 1.50, "items": [1, 2]}}',
        [("content-type", STRUCTURED_CT), ("trace", b"\x00\x01"), ("trace", b"dup")],
    ),
    "bin-bytes": (
        b'{"specversion":"1.0","id":"b2","source":"/shop","type":"blob",'
        b'"datacontenttype":"application/octet-stream","partitionkey":"cust-2",'
        b'"data_base64":"/wAQ"}',
        [("content-type", STRUCTURED_CT)],
    ),
    "bin-text": (
        '{"specversion":"1.0","id":"b3","source":"/shop","type":"note",'
        '"datacontenttype":"text/plain; charset=utf-8","partitionkey":"cust-1",'
        '"data":"héllo\\n"}'.encode(),
        [("content-type", STRUCTURED_CT)],
    ),
}

EXPECTED_BINARY = {
    "st-json": (
        b'{"name": "Zo\\u00eb", "tags": ["a", "b"]}',
        [
            ("ce_specversion", b"1.0"),
            ("ce_id", b"s5"),
            ("ce_source", b"/crm"),
            ("ce_type", b"customer.updated"),
            ("ce_partitionkey", b"cust-3"),
            ("ce_priority", b"5"),
            ("content-type", b"application/json"),
            ("origin", b"eu"),
        ],
    ),
    "st-base64": (
        b"\x89PNG",
        [
            ("ce_specversion", b"1.0"),
            ("ce_id", b"s6"),
            ("ce_source", b"/crm"),
            ("ce_type", b"avatar"),
            ("ce_partitionkey", b"cust-1"),
            ("content-type", b"image/png"),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_STRUCTURED))
def test_to_structured_converts_binary_events_exactly(republished: Runner, name: str) -> None:
    out = republished("to-structured").records[name]
    assert (out.value, out.headers_without_trail) == EXPECTED_STRUCTURED[name]


def test_to_structured_copies_structured_records(republished: Runner) -> None:
    out = republished("to-structured").records["st-json"]
    assert (out.value, out.headers_without_trail) == _original("st-json")[1:]


def test_to_structured_refuses_a_tombstone(republished: Runner) -> None:
    run = republished("to-structured")
    assert "bin-tombstone" not in run.records
    reason, detail = run.rejects["bin-tombstone"]
    assert reason == "tombstone_not_convertible"
    assert "--allow-tombstone-to-structured" in detail


def test_to_structured_converts_a_tombstone_when_allowed(republished: Runner) -> None:
    out = republished("structured-allowing-tombstones").records["bin-tombstone"]
    assert out.value == (
        b'{"specversion":"1.0","id":"b4","source":"/shop","type":"deleted","partitionkey":"cust-2"}'
    )


def test_header_becomes_an_extension_when_asked(republished: Runner) -> None:
    out = republished("structured-allowing-tombstones").records["st-json"]
    original = _original("st-json")[1] or b""
    assert out.value == b'{"origin":"eu",' + original[1:]


@pytest.mark.parametrize("name", sorted(EXPECTED_BINARY))
def test_to_binary_converts_structured_events_exactly(republished: Runner, name: str) -> None:
    out = republished("to-binary").records[name]
    assert (out.value, out.headers_without_trail) == EXPECTED_BINARY[name]


def test_to_binary_copies_binary_records_and_tombstones(republished: Runner) -> None:
    run = republished("to-binary")
    for name in ("bin-json", "bin-tombstone"):
        out = run.records[name]
        assert (out.value, out.headers_without_trail) == _original(name)[1:]


def test_to_binary_refuses_a_structured_event_without_data(republished: Runner) -> None:
    run = republished("to-binary")
    assert run.rejects["st-nodata"][0] == "no_data_not_convertible"


#: name -> (structured value, content-type expected on the binary record or None).
UNTYPED_DATA = {
    "json-object": (
        b'{"specversion":"1.0","id":"u1","source":"/u","type":"t","data":{"a":1}}',
        b"application/json",
    ),
    "json-string": (
        b'{"specversion":"1.0","id":"u2","source":"/u","type":"t","data":"hi"}',
        b"application/json",
    ),
    "json-beside-null-base64": (
        b'{"specversion":"1.0","id":"u3","source":"/u","type":"t","data_base64":null,"data":[1]}',
        b"application/json",
    ),
    # The base64 of {"a":1}: bytes that look like JSON, but are not the JSON data member.
    "base64": (
        b'{"specversion":"1.0","id":"u4","source":"/u","type":"t","data_base64":"eyJhIjoxfQ=="}',
        None,
    ),
    "base64-escaped-name": (
        b'{"specversion":"1.0","id":"u5","source":"/u","type":"t",'
        b'"data_b\\u0061se64":"eyJhIjoxfQ=="}',
        None,
    ),
    "data-null": (b'{"specversion":"1.0","id":"u6","source":"/u","type":"t","data":null}', None),
    "no-data": (b'{"specversion":"1.0","id":"u7","source":"/u","type":"t"}', None),
    "typed": (
        b'{"specversion":"1.0","id":"u8","source":"/u","type":"t",'
        b'"datacontenttype":"text/plain","data":"hi"}',
        b"text/plain",
    ),
}


def test_to_binary_types_untyped_json_data_as_application_json(spark: SparkSession) -> None:
    """JSON format 3.1.2: JSON data without datacontenttype is application/json, so the
    binary record says so; data from data_base64 (or no data) gets no content-type."""
    records = spark.createDataFrame(
        [
            (
                name.encode(),
                value,
                "untyped",
                0,
                offset,
                None,
                0,
                [("content-type", b"application/cloudevents+json")],
            )
            for offset, (name, (value, _)) in enumerate(UNTYPED_DATA.items())
        ],
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>",
    )

    rows = decode_records(records).transform(encode_as, "binary").collect()

    assert {bytes(r.kafka_key).decode(): r.reject_reason for r in rows} == dict.fromkeys(
        UNTYPED_DATA
    )
    content_types = {
        bytes(r.kafka_key).decode(): [
            bytes(h.value) for h in r.encoded_headers if h.key == "content-type"
        ]
        for r in rows
    }
    assert content_types == {
        name: [] if expected is None else [expected] for name, (_, expected) in UNTYPED_DATA.items()
    }


def test_binary_to_structured_to_binary_gives_back_the_same_event(republished: Runner) -> None:
    first = republished("to-structured")
    back = republished("round-trip", from_topic=first.target, to_mode="binary")
    converted = [n for n in first.records if _binary_mode(n)]
    assert "bin-json" in converted and "sdk-bin-bytes" in converted
    for name in converted:
        _, value, headers = _original(name)
        out = back.records[name]
        assert out.value == value, name
        assert sorted(out.headers_without_trail) == sorted(headers), name
        assert len(out.trail) == 2


@pytest.mark.parametrize("label", ["keep", "to-binary", "to-structured"])
def test_sdk_events_read_back_with_the_sdk_equal_the_originals(
    republished: Runner, label: str
) -> None:
    run = republished(label)
    for name, (event, _) in SDK_EVENTS.items():
        out = run.records[name]
        message = ce_kafka.KafkaMessage(
            headers={k: v or b"" for k, v in out.headers_without_trail},
            key=out.key,
            value=out.value or b"",
        )
        read = ce_kafka.from_kafka(message, JSONFormat())
        assert read.get_attributes() == event.get_attributes(), name
        assert read.get_data() == event.get_data(), name


# --- header transforms and the trail ------------------------------------------------


def test_header_transforms_drop_copy_and_insert_but_leave_the_event(republished: Runner) -> None:
    out = republished("reject-and-transforms").records["bin-json"]
    _, value, headers = _original("bin-json")
    assert out.value == value
    assert out.headers_without_trail == [
        *[(k, v) for k, v in headers if k != "trace"],
        ("x-subject", b"order-1"),
        ("x-id", b"b1"),
        ("team", b"payments"),
    ]


def test_trail_gets_one_entry_per_hop(republished: Runner, source: Source) -> None:
    first = republished("keep")
    second = republished("second-hop", from_topic=first.target)
    assert set(second.records) == set(SOURCE_RECORDS)
    for name, out in second.records.items():
        hop1, hop2 = out.trail
        assert (hop1["topic"], hop1["target"]) == (source.topic, first.target)
        assert (hop2["topic"], hop2["target"]) == (first.target, second.target)
        at_first = first.records[name]
        assert (hop2["partition"], hop2["offset"]) == (at_first.partition, at_first.offset)


def test_second_streaming_run_republishes_nothing_new(
    spark: SparkSession, republished: Runner
) -> None:
    first = republished("keep")
    again = run_republish(spark, first.settings, first.request)  # same checkpoint
    assert first.summary.republished == len(SOURCE_RECORDS)
    assert again.records_read == 0


def test_replayed_batch_writes_rejects_once_and_kafka_records_again(
    spark: SparkSession,
    settings: Settings,
    source: Source,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A crash after the rejects commit, before the Kafka write: the restart replays the
    batch, Delta skips the rejects (same app id and batch id), Kafka gets the records."""
    run_settings = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    request = RepublishRequest(
        source=source.topic, target=f"{source.topic}-replay", key_mapper="partitionkey"
    )

    def crash(*_: Any) -> None:
        raise RuntimeError("simulated crash before the Kafka write")

    monkeypatch.setattr(run_module, "_write_kafka", crash)
    with pytest.raises(Exception, match="simulated crash"):
        run_republish(spark, run_settings, request)
    monkeypatch.undo()
    replay = run_republish(spark, run_settings, request)
    assert replay.rejected == 2
    assert read_table(spark, run_settings, "rejects").count() == 2
    assert len(read_topic(spark, settings, request.target)) == len(SOURCE_RECORDS) - 2


def test_compacted_target_rejects_records_without_a_key(republished: Runner) -> None:
    run = republished("compacted-keep")
    assert {n: r for n, (r, _) in run.rejects.items()} == {"no-key": "null_key_on_compacted_topic"}
    assert set(run.records) == set(SOURCE_RECORDS) - {"no-key"}


def test_summary_line_counts_read_republished_and_rejected(republished: Runner) -> None:
    line = republished("to-structured").summary.line()
    assert f"read={len(SOURCE_RECORDS)}" in line
    assert "rejected=3 (not_a_cloudevent=1, plain_tombstone=1, tombstone_not_convertible=1)" in line


# --- the chain: random keys -> entity keys on a compacted topic -> state ------------


def test_chain_republish_by_partitionkey_then_ingest_gives_latest_state(
    broker: LocalBroker, spark: SparkSession, settings: Settings, tmp_path: Path
) -> None:
    run_settings = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    raw, entities = f"chain-raw-{uuid.uuid4().hex[:6]}", f"chain-entities-{uuid.uuid4().hex[:6]}"
    create_topic(settings, raw)  # one partition: the order of each entity's events is known
    history = [
        ("e1", "1", b'{"v": 1}'),
        ("e2", "2", b'{"v": 1}'),
        ("e1", "3", b'{"v": 2}'),
        ("e3", "4", b'{"v": 1}'),
        ("e2", "5", b'{"v": 2}'),
        ("e3", "6", None),  # binary event without data: deletes e3
        ("e4", "7", b'{"v": 1}'),
        ("e1", "8", b'{"v": 3}'),
    ]
    produce_all(
        settings,
        raw,
        [
            (uuid.uuid4().bytes, data, _ce(event_id, "t", partitionkey=entity.encode()))
            for entity, event_id, data in history
        ],
    )
    request = RepublishRequest(
        source=raw, target=entities, key_mapper="partitionkey", cleanup_policy="compact"
    )
    run_republish(spark, run_settings, request)
    # At-least-once: a replay writes every record again; state must not care.
    run_republish(
        spark,
        run_settings,
        RepublishRequest(
            source=raw, target=entities, key_mapper="partitionkey", ending_offsets="latest"
        ),
    )
    run_ingest(spark, run_settings, IngestRequest(topics=(entities,), state=True))
    rows = spark.read.format("delta").load(str(state_path(run_settings, entities))).collect()
    assert {bytes(r.kafka_key): r.id for r in rows} == {b"e1": "8", b"e2": "5", b"e4": "7"}
