"""A corpus of malformed and hostile Kafka records, mixed into valid traffic, ingested
once on the real broker: the run does not crash, every record lands exactly once in
``events`` or ``rejects`` (with the reason docs/tables.md documents), and the valid events
produced after the hostile ones still arrive.

The records go to ONE single-partition topic, in this order: ``VALID_BEFORE`` valid
events, the ``CORPUS``, ``VALID_AFTER`` valid events, and are identified afterwards by
their (partition, offset), so that records with hostile keys need no readable key.
confluent-kafka writes almost all of them (thousands of headers, huge values, NUL bytes
in values, non-UTF-8 record keys); two producers fill its gaps: kcat for non-UTF-8
header keys (confluent-kafka turns a bytes header key into its ``repr``) and Spark's
Kafka sink, a Java producer, for a NUL inside a header key (librdkafka ends C strings
there). The module fixture ``landed`` runs the ingest once; each test reads what it
needs.

Decisions the corpus pins down (docs/tables.md "rejects" table and lib/eventlake/binding.py):

* years 0001 and 9999 are valid RFC 3339 and land in ``events``; year 0000 is
  ``invalid_time`` (documented), and so is a valid RFC 3339 time whose offset moves its
  UTC instant out of years 0001-9999, Spark's documented timestamp range: before the
  fix it landed in ``events`` as year 0 or +10000 (``collect()`` of such a row raises
  ``year 0 is out of range``). CPython also cannot convert the first day of year 0001
  (``datetime.fromtimestamp`` probes a day earlier), so Python readers of such events
  should select ``unix_micros(time)`` or a string, as the tests here do;
* a trailing newline is part of neither an attribute name nor an RFC 3339 time (Java's
  ``$`` matched before it; the binding now anchors with ``\\z``);
* NUL bytes: the core spec's String type allows no control characters, so a NUL
  inside ``ce_id`` (or ``\\u0000`` in JSON) is ``invalid_characters`` (it landed in
  ``events`` before the type-system rules); a raw NUL inside a JSON string is not JSON
  (``malformed_json``);
* header keys reach Spark as Java strings: a non-UTF-8 key arrives with U+FFFD in place
  of the bad bytes, which makes a ``ce_`` header ``invalid_header_encoding`` and is
  ignored on any other header.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, cast

import pytest
from confluent_kafka import KafkaError, Message
from pyspark.sql import SparkSession

from eventlake.binding.decode import RejectReason, decode_records
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import make_producer
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.kafka.topics import create_topic, topic_offsets
from eventlake.local.broker import LocalBroker
from eventlake.warehouse.names import EVENTS, REJECTS
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA
from tests.helpers import binary_headers, structured_value

Header = tuple[str | bytes, bytes | None]
Coordinate = tuple[int, int]
#: (name, key, value, headers) of one record to produce.
Produced = tuple[str, bytes | None, bytes | None, list[Header]]

VALID_BEFORE: Final = 20
VALID_AFTER: Final = 20
MAX_RECORD_BYTES: Final = 8 * 1024 * 1024
KIB: Final = 1024
MIB: Final = 1024 * 1024
STRUCTURED: Final[list[Header]] = [("content-type", b"application/cloudevents+json")]
SOURCE: Final = "/hostile"
TYPE: Final = "com.example.hostile"
RNG: Final = random.Random(20_251_123)
#: Random bytes that are certainly not UTF-8 (a lone continuation byte leads).
GARBAGE: Final = b"\x80" + RNG.randbytes(64 * KIB)
#: Microseconds since the epoch of the two ends of the representable range.
YEAR_0001_US: Final = -62_135_596_800_000_000
YEAR_9999_END_US: Final = 253_402_300_799_999_999


def ce(event_id: str | bytes, **attributes: str | bytes | None) -> list[Header]:
    """ce_ headers of a valid binary-mode event, attributes added or replaced
    (a value of None is a header without value)."""
    merged: dict[str, str | bytes | None] = {
        "specversion": "1.0",
        "id": event_id,
        "source": SOURCE,
        "type": TYPE,
    }
    merged.update(attributes)
    return [
        (f"ce_{name}", value.encode() if isinstance(value, str) else value)
        for name, value in merged.items()
    ]


def without(headers: list[Header], name: str) -> list[Header]:
    return [h for h in headers if h[0] != name]


def js(event_id: str, **members: Any) -> bytes:
    """A JSON-format event, members added or replaced; raw UTF-8, not ASCII-escaped."""
    body: dict[str, Any] = {"specversion": "1.0", "id": event_id, "source": SOURCE, "type": TYPE}
    body.update(members)
    return json.dumps(body, ensure_ascii=False).encode()


def js_without(event_id: str, member: str) -> bytes:
    body = json.loads(js(event_id))
    del body[member]
    return json.dumps(body).encode()


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@dataclass(frozen=True)
class Accepted:
    """The record lands in ``events`` with this id; ``columns`` are further values of its
    row (see ``EVENT_READ`` for the names, e.g. ``data``, ``time_us``)."""

    id: str
    columns: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One hostile record and where it must land."""

    name: str
    value: bytes | None
    headers: list[Header]
    expect: Accepted | RejectReason
    key: bytes | None = None
    #: confluent-kafka by default; ``kcat`` for non-UTF-8 header keys (confluent-kafka
    #: turns a bytes key into its repr), ``spark`` (the Java producer of Spark's Kafka
    #: sink) for a NUL inside a header key (librdkafka cuts C strings at NUL).
    via: str = "confluent"

    @property
    def record_key(self) -> bytes | None:
        return self.key if self.key is not None else self.name.encode()


R = RejectReason
ONE_MIB_ID: Final = "i" * MIB
HALF_MIB_TEXT: Final = "s" * (512 * KIB)
MANY: Final = 3000

CORPUS: Final[list[Case]] = [
    # --- from the ingest issue: the classic bad inputs ---------------------------------
    Case("missing-id", b"x", without(ce("-"), "ce_id"), R.MISSING_REQUIRED_ATTRIBUTE),
    Case("missing-source", b"x", without(ce("a"), "ce_source"), R.MISSING_REQUIRED_ATTRIBUTE),
    Case(
        "missing-specversion",
        b"x",
        without(ce("a"), "ce_specversion"),
        R.MISSING_REQUIRED_ATTRIBUTE,
    ),
    Case("missing-type", b"x", without(ce("a"), "ce_type"), R.MISSING_REQUIRED_ATTRIBUTE),
    Case("st-missing-source", js_without("a", "source"), STRUCTURED, R.MISSING_REQUIRED_ATTRIBUTE),
    Case("st-null-type", js("a", type=None), STRUCTURED, R.MISSING_REQUIRED_ATTRIBUTE),
    Case("specversion-0.3", b"x", ce("a", specversion="0.3"), R.UNSUPPORTED_SPECVERSION),
    Case("st-specversion-2.0", js("a", specversion="2.0"), STRUCTURED, R.UNSUPPORTED_SPECVERSION),
    Case("empty-id", b"x", ce(""), R.EMPTY_REQUIRED_ATTRIBUTE),
    Case("time-word", b"x", ce("a", time="yesterday"), R.INVALID_TIME),
    Case("time-feb-30", b"x", ce("a", time="2018-02-30T00:00:00Z"), R.INVALID_TIME),
    Case("uppercase-header", b"x", [*ce("a"), ("ce_Subject", b"s")], R.INVALID_ATTRIBUTE_NAME),
    Case("ce-data-header", b"x", ce("a", data="inline"), R.INVALID_ATTRIBUTE_NAME),
    Case(
        "invalid-utf8-header-value", b"x", ce("a", source=b"/\xff\xfe"), R.INVALID_HEADER_ENCODING
    ),
    Case("header-without-value", b"x", ce("a", subject=None), R.INVALID_HEADER_ENCODING),
    Case("malformed-json", b'{"specversion": "1.0", "id": ', STRUCTURED, R.MALFORMED_JSON),
    Case("json-array", b"[" + js("a") + b"]", STRUCTURED, R.MALFORMED_JSON),
    Case(
        "data-and-data-base64",
        js("a", data="x", data_base64="eA=="),
        STRUCTURED,
        R.DATA_AND_DATA_BASE64,
    ),
    Case("invalid-base64", js("a", data_base64="!!!"), STRUCTURED, R.INVALID_DATA_BASE64),
    Case("number-id", js("a", id=5), STRUCTURED, R.INVALID_ATTRIBUTE_TYPE),
    Case(
        "avro-format",
        b"\x02\x06abc",
        [("content-type", b"application/cloudevents+avro")],
        R.UNSUPPORTED_EVENT_FORMAT,
    ),
    Case(
        "batch-mode",
        b"[" + js("a") + b"]",
        [("content-type", b"application/cloudevents-batch+json")],
        R.UNSUPPORTED_BATCH_MODE,
    ),
    Case(
        "structured-with-ce-headers",
        js("st-ce-headers"),
        [*STRUCTURED, *ce("from-header", specversion="0.3")],
        Accepted("st-ce-headers", {"content_mode": "structured"}),
    ),
    Case("duplicate-ce-id", b"x", [*ce("a"), ("ce_id", b"b")], R.DUPLICATE_HEADER),
    Case(
        "conflicting-datacontenttype",
        b"x",
        [*ce("a", datacontenttype="application/json"), ("content-type", b"text/plain")],
        R.CONFLICTING_DATACONTENTTYPE,
    ),
    Case("binary-empty-value", b"", ce("bin-empty"), Accepted("bin-empty", {"data": b""})),
    Case("binary-no-value", None, ce("bin-none"), Accepted("bin-none", {"data": None})),
    Case("plain-tombstone", None, [], R.PLAIN_TOMBSTONE),
    Case("no-ce-headers", b"payload", [("x-trace", b"1")], R.NOT_A_CLOUDEVENT),
    Case(
        "unicode-attributes",
        b"x",
        ce("ünï-✓", source="/größe/日本"),
        Accepted("ünï-✓", {"source": "/größe/日本"}),
    ),
    Case(
        "one-mib-value",
        GARBAGE[:1] + RNG.randbytes(MIB),
        ce("big-value"),
        Accepted("big-value", {"data_len": MIB + 1}),
    ),
    # --- empty values with a CloudEvents content type -----------------------------------
    Case("st-empty-value", b"", STRUCTURED, R.MALFORMED_JSON),
    Case("st-no-value", None, STRUCTURED, R.MALFORMED_JSON),
    # --- huge headers -------------------------------------------------------------------
    Case(
        "half-mib-subject",
        b"x",
        ce("big-subject", subject=HALF_MIB_TEXT),
        Accepted("big-subject", {"subject_len": len(HALF_MIB_TEXT)}),
    ),
    Case(
        "half-mib-foreign-header",
        b"x",
        [*ce("big-foreign"), ("x-blob", RNG.randbytes(512 * KIB))],
        Accepted("big-foreign"),
    ),
    Case(
        "half-mib-invalid-utf8-ce-header",
        b"x",
        ce("a", comexample=GARBAGE + RNG.randbytes(448 * KIB)),
        R.INVALID_HEADER_ENCODING,
    ),
    Case(
        "half-mib-content-type",
        js("a"),
        [("content-type", b"application/cloudevents+json" + b"x" * (512 * KIB))],
        R.UNSUPPORTED_EVENT_FORMAT,
    ),
    # --- thousands of headers -----------------------------------------------------------
    Case(
        "3000-foreign-headers",
        b"x",
        [*ce("many-foreign"), *[(f"x-h{n}", b"v") for n in range(MANY)]],
        Accepted("many-foreign", {"extensions_count": 0}),
    ),
    Case(
        "3000-extension-headers",
        b"x",
        [*ce("many-extensions"), *[(f"ce_ext{n}", b"v") for n in range(MANY)]],
        Accepted("many-extensions", {"extensions_count": MANY}),
    ),
    Case(
        "3000-copies-of-ce-id",
        b"x",
        [*ce("a"), *[("ce_id", b"%d" % n) for n in range(MANY)]],
        R.DUPLICATE_HEADER,
    ),
    # --- binary garbage ---------------------------------------------------------------------
    Case("st-garbage-not-utf8", GARBAGE, STRUCTURED, R.MALFORMED_JSON),
    Case(
        "st-garbage-utf8",
        "".join(chr(RNG.randrange(0x20, 0xD7FF)) for _ in range(4096)).encode(),
        STRUCTURED,
        R.MALFORMED_JSON,
    ),
    Case("st-single-nul", b"\x00", STRUCTURED, R.MALFORMED_JSON),
    Case(
        "binary-garbage-json-content-type",
        GARBAGE,
        [*ce("bin-garbage"), ("content-type", b"application/json")],
        Accepted("bin-garbage", {"data": GARBAGE}),
    ),
    # --- deep nesting -------------------------------------------------------------------
    Case(
        "st-data-depth-5000",
        js("a")[:-1] + b',"data":' + nested(5000) + b"}",
        STRUCTURED,
        R.MALFORMED_JSON,
    ),
    Case(
        "st-extension-depth-5000",
        js("a")[:-1] + b',"ext":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
        STRUCTURED,
        R.MALFORMED_JSON,
    ),
    Case(
        "st-data-depth-100",
        js("a")[:-1] + b',"data":' + nested(100) + b"}",
        STRUCTURED,
        Accepted("a", {"data": nested(100)}),
    ),
    Case(
        "binary-depth-5000",
        nested(5000),
        [*ce("bin-deep"), ("content-type", b"application/json")],
        Accepted("bin-deep", {"data": nested(5000)}),
    ),
    Case("st-one-mib-open-brackets", b"[" * MIB, STRUCTURED, R.MALFORMED_JSON),
    Case(
        # A JSON string of 200,000 escapes: the shape check's string regex must not recurse.
        "st-escape-heavy-string",
        js("escapes", data='\n\t"\\' * 50_000),
        STRUCTURED,
        Accepted("escapes", {"data_len": len(json.dumps('\n\t"\\' * 50_000))}),
    ),
    Case(
        "st-unterminated-escape-heavy-string",
        b'{"specversion":"1.0","id":"' + b'\\"' * 100_000,
        STRUCTURED,
        R.MALFORMED_JSON,
    ),
    # --- NUL bytes ------------------------------------------------------------------------
    Case("nul-in-ce-id", b"x", ce(b"nul\x00id"), R.INVALID_CHARACTERS),
    Case(
        "nul-bytes-value",
        b"\x00" * 1000,
        ce("nul-value"),
        Accepted("nul-value", {"data": b"\x00" * 1000}),
    ),
    Case("st-escaped-nul-id", js("nul\x00json"), STRUCTURED, R.INVALID_CHARACTERS),
    Case(
        "st-raw-nul-in-string",
        js("rawnul").replace(b"rawnul", b"raw\x00nul"),
        STRUCTURED,
        R.MALFORMED_JSON,
    ),
    Case(
        "nul-in-header-name",
        b"x",
        [*ce("a"), ("ce_i\x00d", b"v")],
        R.INVALID_ATTRIBUTE_NAME,
        via="spark",
    ),
    # --- very long attribute values ---------------------------------------------------------
    Case("one-mib-id", b"x", ce(ONE_MIB_ID), Accepted(ONE_MIB_ID, {"data": b"x"})),
    Case("st-one-mib-id", js("j" * MIB), STRUCTURED, Accepted("j" * MIB)),
    Case("one-mib-bad-time", b"x", ce("a", time="2018-04-05T03:56:24Z" * 50_000), R.INVALID_TIME),
    # --- non-UTF-8 header keys and record keys ----------------------------------------
    Case(
        "non-utf8-ce-header-key",
        b"x",
        [*ce("a"), (b"ce_\xff", b"v")],
        R.INVALID_HEADER_ENCODING,
        via="kcat",
    ),
    Case(
        "non-utf8-foreign-header-key",
        b"x",
        [*ce("foreign-key-ok"), (b"x-\xfe\xff", b"v")],
        Accepted("foreign-key-ok"),
        via="kcat",
    ),
    Case(
        "non-utf8-record-key",
        b"x",
        ce("bad-record-key"),
        Accepted("bad-record-key", {"kafka_key": b"\xff\xfe\x00k"}),
        key=b"\xff\xfe\x00k",
    ),
    Case(
        "non-utf8-record-key-reject",
        b"x",
        ce(""),
        R.EMPTY_REQUIRED_ATTRIBUTE,
        key=b"\xc3\x28\x00",
    ),
    # --- trailing line terminators ----------------------------------------------------
    Case("header-name-newline", b"x", [*ce("a"), ("ce_foo\n", b"v")], R.INVALID_ATTRIBUTE_NAME),
    Case("st-member-name-newline", js("a", **{"foo\n": "v"}), STRUCTURED, R.INVALID_ATTRIBUTE_NAME),
    Case("time-newline", b"x", ce("a", time="2018-04-05T03:56:24Z\n"), R.INVALID_TIME),
    # --- time at the ends of RFC 3339 -------------------------------------------------
    Case(
        "time-year-0001",
        b"x",
        ce("y0001", time="0001-01-01T00:00:00Z"),
        Accepted("y0001", {"time_us": YEAR_0001_US}),
    ),
    Case(
        "time-year-9999",
        b"x",
        ce("y9999", time="9999-12-31T23:59:59.999999Z"),
        Accepted("y9999", {"time_us": YEAR_9999_END_US}),
    ),
    Case(
        "st-time-year-9999",
        js("st-y9999", time="9999-12-31T23:59:59Z"),
        STRUCTURED,
        Accepted("st-y9999", {"time_us": YEAR_9999_END_US - 999_999}),
    ),
    Case("time-year-0000", b"x", ce("a", time="0000-06-01T00:00:00Z"), R.INVALID_TIME),
    Case("time-year-10000", b"x", ce("a", time="10000-01-01T00:00:00Z"), R.INVALID_TIME),
    Case("time-utc-before-0001", b"x", ce("a", time="0001-01-01T00:30:00+01:00"), R.INVALID_TIME),
    Case("time-utc-after-9999", b"x", ce("a", time="9999-12-31T23:59:59-01:00"), R.INVALID_TIME),
]

#: Columns read back from ``events`` (``Accepted.columns`` names some of them).
EVENT_READ: Final = (
    "id",
    "source",
    "data",
    "content_mode",
    "kafka_key",
    "unix_micros(time) AS time_us",
    "length(data) AS data_len",
    "length(subject) AS subject_len",
    "size(extensions) AS extensions_count",
)


def valid_record(n: int) -> tuple[bytes, bytes, list[Header]]:
    """A plain valid event, alternating binary and structured mode; id ``valid-<n>``."""
    key = f"valid-{n}".encode()
    if n % 2:
        return key, b"%d" % n, list(binary_headers(f"valid-{n}"))
    return key, structured_value(f"valid-{n}", data={"n": n}), list(STRUCTURED)


@dataclass(repr=False)
class Landed:
    """The module's topic after one ingest, read back once, keyed by coordinates."""

    summary: IngestSummary
    #: (partition, offset) of each produced record -> its name (a case or ``valid-<n>``).
    produced: dict[Coordinate, str]
    events: list[dict[str, Any]]
    rejects: list[dict[str, Any]]
    settings: Settings

    def by_name(self) -> dict[str, Coordinate]:
        return {name: coordinate for coordinate, name in self.produced.items()}

    def event_at(self, coordinate: Coordinate) -> dict[str, Any] | None:
        rows = [r for r in self.events if (r["kafka_partition"], r["kafka_offset"]) == coordinate]
        assert len(rows) <= 1
        return rows[0] if rows else None

    def reject_at(self, coordinate: Coordinate) -> dict[str, Any] | None:
        rows = [r for r in self.rejects if (r["kafka_partition"], r["kafka_offset"]) == coordinate]
        assert len(rows) <= 1
        return rows[0] if rows else None


def _plain(row: Any) -> dict[str, Any]:
    values: dict[str, Any] = row.asDict()
    for name in ("data", "kafka_key", "kafka_value"):
        if values.get(name) is not None:
            values[name] = bytes(values[name])
    return values


def _confluent(
    settings: Settings, topic: str, records: Sequence[Produced]
) -> dict[Coordinate, str]:
    """Produce (name, key, value, headers) in order; coordinates from delivery reports."""
    # Idempotence keeps the order of the log equal to the order of produce() calls.
    producer = make_producer(
        settings, **{"message.max.bytes": MAX_RECORD_BYTES, "enable.idempotence": True}
    )
    coordinates: dict[Coordinate, str] = {}
    failures: list[str] = []

    def report(name: str) -> Any:
        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                failures.append(f"{name}: {error}")
            else:
                coordinates[(cast(int, message.partition()), cast(int, message.offset()))] = name

        return on_delivery

    for name, key, value, headers in records:
        producer.produce(
            topic, key=key, value=value, headers=cast(Any, headers), on_delivery=report(name)
        )
        producer.poll(0)
    assert producer.flush(120) == 0
    assert failures == []
    assert len(coordinates) == len(records)
    return coordinates


def _kcat(settings: Settings, topic: str, case: Case) -> None:
    """One record with kcat; argv carries the header keys' bytes unchanged."""
    kcat = shutil.which("kcat")
    assert kcat, "kcat is not on PATH: apt-get install -y kcat"
    assert case.value is not None and b"\n" not in case.value and case.record_key is not None
    command: list[bytes] = [kcat.encode(), b"-P", b"-b", settings.bootstrap_servers.encode()]
    command += [b"-t", topic.encode(), b"-k", case.record_key]
    for name, value in case.headers:
        assert value is not None
        command += [b"-H", (name if isinstance(name, bytes) else name.encode()) + b"=" + value]
    subprocess.run(command, input=case.value, check=True, timeout=60, capture_output=True)


def _spark_sink(spark: SparkSession, settings: Settings, topic: str, case: Case) -> None:
    """One record through Spark's Kafka sink (the Java producer)."""
    headers = [(k if isinstance(k, str) else k.decode(), v) for k, v in case.headers]
    frame = spark.createDataFrame(
        [(case.record_key, case.value, headers)],
        "key binary, value binary, headers array<struct<key:string,value:binary>>",
    )
    frame.write.format("kafka").options(**spark_kafka_options(settings)).option(
        "topic", topic
    ).save()


def _produce(spark: SparkSession, settings: Settings, topic: str) -> dict[Coordinate, str]:
    """Produce valid-before, the corpus, valid-after in this order; return coordinates.

    The topic has one partition and each step waits for its records, so a record that
    kcat or Spark writes takes the offset just below the end offset after it."""
    before = [(f"valid-{n}", *valid_record(n)) for n in range(VALID_BEFORE)]
    after = [
        (f"valid-{n}", *valid_record(n)) for n in range(VALID_BEFORE, VALID_BEFORE + VALID_AFTER)
    ]
    corpus = [(c.name, c.record_key, c.value, c.headers) for c in CORPUS if c.via == "confluent"]
    coordinates = _confluent(settings, topic, [*before, *corpus])
    for case in CORPUS:
        if case.via == "confluent":
            continue
        end = topic_offsets(settings, topic)[1][0]
        if case.via == "kcat":
            _kcat(settings, topic, case)
        else:
            _spark_sink(spark, settings, topic, case)
        assert topic_offsets(settings, topic)[1][0] == end + 1
        coordinates[(0, end)] = case.name
    coordinates.update(_confluent(settings, topic, after))
    return coordinates


@pytest.fixture(scope="module")
def landed(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Landed]:
    topic = f"hostile-{uuid.uuid4().hex[:10]}"
    create_topic(settings, topic, config={"max.message.bytes": str(MAX_RECORD_BYTES)})
    produced = _produce(spark, settings, topic)
    warehouse = settings.model_copy(
        update={"warehouse": tmp_path_factory.mktemp("hostile") / "warehouse"}
    )
    summary = run_ingest(spark, warehouse, IngestRequest(topics=(topic,)))

    def read(table: str, *columns: str) -> list[dict[str, Any]]:
        frame = spark.read.format("delta").load(str(warehouse.table_path(table)))
        return [
            _plain(r)
            for r in frame.selectExpr("kafka_partition", "kafka_offset", *columns).collect()
        ]

    yield Landed(
        summary=summary,
        produced=produced,
        events=read(EVENTS, *EVENT_READ),
        rejects=read(REJECTS, "reason", "detail", "kafka_key", "kafka_value", "kafka_headers"),
        settings=warehouse,
    )


# ---------------------------------------------------------------------------------------
# The corpus itself
# ---------------------------------------------------------------------------------------


def test_corpus_has_at_least_40_hostile_records_with_unique_names() -> None:
    names = [case.name for case in CORPUS]
    assert len(names) >= 40
    assert len(set(names)) == len(names)
    assert not any(name.startswith("valid-") for name in names)


def test_valid_records_surround_the_corpus_in_the_log(landed: Landed) -> None:
    offsets = {name: offset for (_, offset), name in landed.produced.items()}
    corpus = [offsets[case.name] for case in CORPUS]
    before = [offsets[f"valid-{n}"] for n in range(VALID_BEFORE)]
    after = [offsets[f"valid-{n}"] for n in range(VALID_BEFORE, VALID_BEFORE + VALID_AFTER)]
    assert max(before) < min(corpus) and max(corpus) < min(after)


# ---------------------------------------------------------------------------------------
# The run: no crash, every record accounted for exactly once
# ---------------------------------------------------------------------------------------


def test_run_completes_and_reads_every_produced_record(landed: Landed) -> None:
    assert landed.summary.records_read == len(landed.produced)
    assert landed.summary.events + landed.summary.rejects == len(landed.produced)


def test_every_record_lands_in_exactly_one_table(landed: Landed) -> None:
    events = [(r["kafka_partition"], r["kafka_offset"]) for r in landed.events]
    rejects = [(r["kafka_partition"], r["kafka_offset"]) for r in landed.rejects]
    assert len(events) + len(rejects) == len(landed.produced)
    assert len(set(events)) == len(events), "duplicate rows in events"
    assert len(set(rejects)) == len(rejects), "duplicate rows in rejects"
    assert set(events).isdisjoint(rejects)
    assert set(events) | set(rejects) == set(landed.produced)


def test_summary_counts_match_the_tables(landed: Landed) -> None:
    assert landed.summary.events == len(landed.events)
    assert dict(landed.summary.rejects_by_reason) == dict(
        Counter(r["reason"] for r in landed.rejects)
    )


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_hostile_record_lands_as_expected(landed: Landed, case: Case) -> None:
    coordinate = landed.by_name()[case.name]
    event, reject = landed.event_at(coordinate), landed.reject_at(coordinate)
    if isinstance(case.expect, RejectReason):
        assert event is None, f"{case.name} landed in events"
        assert reject is not None, f"{case.name} is in neither table"
        assert reject["reason"] == case.expect.value, reject["detail"]
        assert reject["kafka_key"] == case.record_key
    else:
        assert reject is None, f"{case.name} rejected: {reject and reject['detail']}"
        assert event is not None, f"{case.name} is in neither table"
        assert event["id"] == case.expect.id
        assert event["kafka_key"] == case.record_key
        for column, expected in case.expect.columns.items():
            assert event[column] == expected, column


def test_valid_events_before_and_after_the_corpus_all_arrive(landed: Landed) -> None:
    names = landed.by_name()
    for n in range(VALID_BEFORE + VALID_AFTER):
        event = landed.event_at(names[f"valid-{n}"])
        assert event is not None, f"valid-{n} missing"
        assert event["id"] == f"valid-{n}"


def test_rejects_keep_the_raw_hostile_record(landed: Landed) -> None:
    """Value bytes and header order, duplicates and values are kept; header keys come
    through Spark as strings, so a non-UTF-8 key is kept with U+FFFD for its bad bytes."""
    names = landed.by_name()
    for case in CORPUS:
        if not isinstance(case.expect, RejectReason):
            continue
        row = landed.reject_at(names[case.name])
        assert row is not None
        headers = [
            (h["key"], None if h["value"] is None else bytes(h["value"]))
            for h in row["kafka_headers"] or []
        ]
        expected = [
            (k.decode(errors="replace") if isinstance(k, bytes) else k, v) for k, v in case.headers
        ]
        assert row["kafka_value"] == case.value, case.name
        assert headers == expected, case.name


def test_event_times_stay_within_sparks_timestamp_range(landed: Landed) -> None:
    """Times at both ends of years 0001-9999 land; none outside (Spark's documented
    TimestampType range; before the fix a time of year 0 in UTC landed here)."""
    times = [r["time_us"] for r in landed.events if r["time_us"] is not None]
    assert min(times) == YEAR_0001_US
    assert max(times) == YEAR_9999_END_US


# ---------------------------------------------------------------------------------------
# Focused tests of the two decoder fixes the corpus exposed (no broker needed)
# ---------------------------------------------------------------------------------------


def _decode(spark: SparkSession, records: list[tuple[list[Header], bytes]]) -> list[str | None]:
    """Decode (headers, value) records in memory in one Spark job; per record its reject
    reason, or None for a valid event."""
    rows = [
        (b"k", value, "t", 0, offset, datetime(2024, 1, 1), 0, headers)
        for offset, (headers, value) in enumerate(records)
    ]
    decoded = decode_records(spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA))
    rows_back = decoded.select("kafka_offset", "reject_reason").collect()
    landed = {r["kafka_offset"]: r["reject_reason"] for r in rows_back}
    assert sorted(landed) == list(range(len(records)))
    return [landed[offset] for offset in range(len(records))]


def test_time_is_valid_only_within_years_0001_to_9999_in_utc(spark: SparkSession) -> None:
    expected = {
        "0001-01-01T00:00:00Z": None,
        "0001-01-01T00:30:00+00:30": None,
        "9999-12-31T23:59:59.999999Z": None,
        "9999-12-31T23:30:00-00:29": None,
        "0001-01-01T00:30:00+01:00": "invalid_time",
        "9999-12-31T23:59:59-01:00": "invalid_time",
    }
    reasons = _decode(spark, [(ce("t", time=time), b"x") for time in expected])
    assert dict(zip(expected, reasons, strict=True)) == expected


def test_trailing_line_terminator_breaks_names_and_times(spark: SparkSession) -> None:
    records: list[tuple[list[Header], bytes]] = []
    expected: list[str | None] = []
    for end in ["\n", "\r\n", "\r", "\u2028"]:
        records.append(([*ce("t"), (f"ce_ext{end}", b"v")], b"x"))
        records.append((ce("t", time=f"2018-04-05T03:56:24Z{end}"), b"x"))
        records.append((STRUCTURED, js("t", **{f"ext{end}": "v"})))
        expected += ["invalid_attribute_name", "invalid_time", "invalid_attribute_name"]
    records.append(([*ce("t"), ("ce_ext", b"v")], b"x"))  # the same without: valid
    expected.append(None)
    assert _decode(spark, records) == expected
