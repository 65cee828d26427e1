"""Re-key and republish on the real broker: Key Mappers, content modes, tombstones,
header transforms, the routing trail, rejects, and a chain into a state table.

One source topic holds the corpus (:mod:`tests.republish.corpus`); each republish
configuration runs once per module and the tests read its target topic back and compare
it with the source byte for byte. What the plan and the mode conversion do to a record
is checked here, through those runs, not in modules of their own: each module would
run the configurations over the broker again.
"""

from __future__ import annotations

import json
import signal
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from cloudevents.core.bindings import kafka as ce_kafka
from cloudevents.core.formats.json import JSONFormat
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, make_admin, produce_all
from eventlake.kafka.topics import UnknownTopicError, create_topic
from eventlake.local.broker import LocalBroker
from eventlake.republish import run as run_module
from eventlake.republish.request import DEFAULT_TRAIL_HEADER, RepublishRequest
from eventlake.republish.run import RepublishSummary, run_republish
from eventlake.warehouse.names import state_path
from tests.helpers import interrupted_spark_job, read_table, read_topic
from tests.kafka.test_partitioner import java_partition
from tests.republish.corpus import SDK_EVENTS, SOURCE_RECORDS, Headers, ce_headers

TARGET_PARTITIONS = 3
STRUCTURED_CT = b"application/cloudevents+json; charset=UTF-8"


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


def test_a_bounded_run_stopped_by_a_signal_commits_nothing_and_the_rerun_sends_all(
    spark: SparkSession,
    settings: Settings,
    source: Source,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_settings = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    request = RepublishRequest(
        source=source.topic,
        target=f"{source.topic}-stopped",
        key_mapper="partitionkey",
        ending_offsets="latest",
    )
    handler = signal.getsignal(signal.SIGINT)
    with monkeypatch.context() as patched:
        patched.setattr(run_module, "_send", partial(interrupted_spark_job, spark))
        stopped = run_republish(spark, run_settings, request)

    assert (stopped.stopped_by, stopped.records_read) == ("SIGINT", 0)
    assert signal.getsignal(signal.SIGINT) is handler
    rerun = run_republish(spark, run_settings, request)
    assert (rerun.stopped_by, rerun.republished) == (None, len(SOURCE_RECORDS) - 2)
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
            (uuid.uuid4().bytes, data, ce_headers(event_id, "t", partitionkey=entity.encode()))
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


def test_a_misspelt_source_topic_is_refused_and_not_created(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    target = topic_name + "-rekeyed"
    request = RepublishRequest(source=topic_name, target=target, key_mapper="partitionkey")

    with pytest.raises(UnknownTopicError, match=f"'{topic_name}' does not exist"):
        run_republish(spark, warehouse_settings, request)

    assert not {topic_name, target} & set(
        make_admin(warehouse_settings).list_topics(timeout=10).topics
    )
