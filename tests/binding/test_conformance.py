"""Conformance of the ingest decoder to the CloudEvents Kafka protocol binding (v1.0.3),
on the real broker, with records written by independent producers.

Every record of this module goes to ONE topic and is ingested ONCE (module fixture
``landed``); each test then looks up its own record by Kafka key in the events or
rejects table. Producers:

* confluent-kafka with hand-built headers and values: the table of bad and unusual
  inputs (``CASES``) and the two examples of the binding document (3.2.5, 3.3.4);
* the official CloudEvents Python SDK (``cloudevents.core.bindings.kafka``), binary and
  structured mode;
* kcat, the librdkafka command-line client, with headers written by hand.

The events table is also read with an independent Delta reader (delta-rs).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

import deltalake
import pytest
from cloudevents.core.bindings import kafka as ce_kafka
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import RejectReason
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import make_producer
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.warehouse.names import EVENTS, REJECTS

Header = tuple[str, bytes | None]

SOURCE: Final = "/conformance"
TYPE: Final = "com.example.conformance"
STRUCTURED: Final[list[Header]] = [("content-type", b"application/cloudevents+json")]
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: A 1 MiB value; the topic allows larger records than the broker default (1 MB).
BIG_VALUE: Final = random.Random(20240505).randbytes(1024 * 1024)
MAX_RECORD_BYTES: Final = 4 * 1024 * 1024


class _Drop:
    """Marker: leave this attribute out of the record."""


DROP: Final = _Drop()


# ---------------------------------------------------------------------------------------
# Expected landings
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """The record lands in ``events`` with exactly these attributes."""

    id: str
    source: str = SOURCE
    type: str = TYPE
    specversion: str = "1.0"
    datacontenttype: str | None = None
    dataschema: str | None = None
    subject: str | None = None
    time: datetime | None = None
    data: bytes | None = None
    extensions: dict[str, str] = field(default_factory=dict)
    content_mode: str = "binary"


@dataclass(frozen=True)
class Reject:
    """The record lands in ``rejects`` with this reason."""

    reason: RejectReason


@dataclass(frozen=True)
class Case:
    """One Kafka record (key = ``id``) and where it must land."""

    id: str
    value: bytes | None
    headers: list[Header]
    expect: Event | Reject

    @property
    def key(self) -> bytes:
        return self.id.encode()


def ce_headers(event_id: str, **attributes: str | bytes | _Drop | None) -> list[Header]:
    """Binary-mode ce_ headers of a valid event, with attributes replaced, added or dropped."""
    merged: dict[str, str | bytes | _Drop | None] = {
        "specversion": "1.0",
        "id": event_id,
        "source": SOURCE,
        "type": TYPE,
    }
    merged.update(attributes)
    return [
        (f"ce_{name}", value.encode() if isinstance(value, str) else value)
        for name, value in merged.items()
        if not isinstance(value, _Drop)
    ]


def ce_json(event_id: str, **members: Any) -> bytes:
    """A JSON-format event, members replaced, added or dropped; raw UTF-8, not escaped."""
    merged: dict[str, Any] = {
        "specversion": "1.0",
        "id": event_id,
        "source": SOURCE,
        "type": TYPE,
    }
    merged.update(members)
    kept = {name: value for name, value in merged.items() if not isinstance(value, _Drop)}
    return json.dumps(kept, ensure_ascii=False).encode()


def canonical_json(value: Any) -> bytes:
    """JSON text as the decoder renders a JSON data value: compact, members sorted."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def micros(moment: datetime | None) -> int | None:
    """A timestamp as microseconds since the epoch (independent of any local time zone)."""
    return None if moment is None else (moment - EPOCH) // timedelta(microseconds=1)


DATA_OBJECT: Final = {"b": [1, "two", True, None], "a": {"nested": "ü"}}
UNICODE_SOURCE: Final = "/größe/日本"

CASES: Final[list[Case]] = [
    # --- binary mode: valid events ----------------------------------------------------
    Case(
        "bin-minimal",
        b"hello",
        [*ce_headers("bin-minimal"), ("content-type", b"text/plain")],
        Event("bin-minimal", datacontenttype="text/plain", data=b"hello"),
    ),
    Case(
        "bin-all-attributes",
        b"{}",
        [
            *ce_headers(
                "bin-all-attributes",
                time="2018-04-05T03:56:24Z",
                subject="sub",
                dataschema="https://example.com/schema.json",
            ),
            ("content-type", b"application/json"),
        ],
        Event(
            "bin-all-attributes",
            datacontenttype="application/json",
            subject="sub",
            dataschema="https://example.com/schema.json",
            time=utc(2018, 4, 5, 3, 56, 24),
            data=b"{}",
        ),
    ),
    Case(
        "bin-time-offset-fraction",
        b"x",
        ce_headers("bin-time-offset-fraction", time="2018-04-05T03:56:24.123456+02:00"),
        Event(
            "bin-time-offset-fraction",
            time=utc(2018, 4, 5, 1, 56, 24, 123456),
            data=b"x",
        ),
    ),
    Case(
        # RFC 3339 5.6: "T" and "Z" may alternatively be lower case.
        "bin-time-lowercase-t-z",
        b"x",
        ce_headers("bin-time-lowercase-t-z", time="2018-04-05t03:56:24.5z"),
        Event("bin-time-lowercase-t-z", time=utc(2018, 4, 5, 3, 56, 24, 500000), data=b"x"),
    ),
    Case(
        "bin-unicode-attributes",
        b"x",
        ce_headers("bin-unicode-attributes", source=UNICODE_SOURCE, subject="ünïcødé ✓"),
        Event("bin-unicode-attributes", source=UNICODE_SOURCE, subject="ünïcødé ✓", data=b"x"),
    ),
    Case(
        "bin-extensions",
        b"x",
        ce_headers(
            "bin-extensions",
            partitionkey="order-17",
            traceparent="00-abc-def-01",
            comexampleextension1="value",
            count="5",
        ),
        Event(
            "bin-extensions",
            data=b"x",
            extensions={
                "partitionkey": "order-17",
                "traceparent": "00-abc-def-01",
                "comexampleextension1": "value",
                "count": "5",
            },
        ),
    ),
    Case(
        "bin-empty-value",
        b"",
        ce_headers("bin-empty-value"),
        Event("bin-empty-value", data=b""),
    ),
    Case(
        # 3.2.2: a binary CloudEvent with no data is a record with no value.
        "bin-no-value",
        None,
        ce_headers("bin-no-value"),
        Event("bin-no-value", data=None),
    ),
    Case(
        "bin-1mib-value",
        BIG_VALUE,
        [*ce_headers("bin-1mib-value"), ("content-type", b"application/octet-stream")],
        Event("bin-1mib-value", datacontenttype="application/octet-stream", data=BIG_VALUE),
    ),
    Case(
        "bin-ce-datacontenttype-only",
        b"[1]",
        ce_headers("bin-ce-datacontenttype-only", datacontenttype="application/json"),
        Event("bin-ce-datacontenttype-only", datacontenttype="application/json", data=b"[1]"),
    ),
    Case(
        # A media type that is not application/cloudevents* is binary mode, kept as-is.
        "bin-content-type-with-params",
        b"hi",
        [
            *ce_headers("bin-content-type-with-params"),
            ("content-type", b"text/plain; charset=utf-8"),
        ],
        Event(
            "bin-content-type-with-params",
            datacontenttype="text/plain; charset=utf-8",
            data=b"hi",
        ),
    ),
    # --- binary mode: rejects ---------------------------------------------------------
    Case(
        "bin-missing-id",
        b"x",
        ce_headers("-", id=DROP),
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "bin-missing-source",
        b"x",
        ce_headers("bin-missing-source", source=DROP),
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "bin-missing-specversion",
        b"x",
        ce_headers("bin-missing-specversion", specversion=DROP),
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "bin-missing-type",
        b"x",
        ce_headers("bin-missing-type", type=DROP),
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "bin-specversion-0.3",
        b"x",
        ce_headers("bin-specversion-0.3", specversion="0.3"),
        Reject(RejectReason.UNSUPPORTED_SPECVERSION),
    ),
    Case(
        "bin-specversion-2.0",
        b"x",
        ce_headers("bin-specversion-2.0", specversion="2.0"),
        Reject(RejectReason.UNSUPPORTED_SPECVERSION),
    ),
    Case(
        "bin-empty-id", b"x", ce_headers("", id=""), Reject(RejectReason.EMPTY_REQUIRED_ATTRIBUTE)
    ),
    Case(
        "bin-time-space-separator",
        b"x",
        ce_headers("bin-time-space-separator", time="2018-04-05 03:56:24"),
        Reject(RejectReason.INVALID_TIME),
    ),
    Case(
        "bin-time-word",
        b"x",
        ce_headers("bin-time-word", time="yesterday"),
        Reject(RejectReason.INVALID_TIME),
    ),
    Case(
        "bin-time-impossible-date",
        b"x",
        ce_headers("bin-time-impossible-date", time="2018-02-30T00:00:00Z"),
        Reject(RejectReason.INVALID_TIME),
    ),
    Case(
        "bin-time-no-offset",
        b"x",
        ce_headers("bin-time-no-offset", time="2018-04-05T03:56:24"),
        Reject(RejectReason.INVALID_TIME),
    ),
    Case(
        # Kafka header keys are case-sensitive; attribute names are lowercase only.
        "bin-uppercase-header",
        b"x",
        ce_headers("bin-uppercase-header", type=DROP, Type=TYPE),
        Reject(RejectReason.INVALID_ATTRIBUTE_NAME),
    ),
    Case(
        "bin-ce-data-header",
        b"x",
        ce_headers("bin-ce-data-header", data="inline"),
        Reject(RejectReason.INVALID_ATTRIBUTE_NAME),
    ),
    Case(
        "bin-invalid-utf8-header",
        b"x",
        ce_headers("bin-invalid-utf8-header", source=b"/bad\xff\xfe"),
        Reject(RejectReason.INVALID_HEADER_ENCODING),
    ),
    Case(
        "bin-null-header-value",
        b"x",
        ce_headers("bin-null-header-value", subject=None),
        Reject(RejectReason.INVALID_HEADER_ENCODING),
    ),
    Case(
        "bin-duplicate-ce-header",
        b"x",
        [*ce_headers("bin-duplicate-ce-header"), ("ce_id", b"other-id")],
        Reject(RejectReason.DUPLICATE_HEADER),
    ),
    Case(
        "bin-duplicate-content-type",
        b"x",
        [
            *ce_headers("bin-duplicate-content-type"),
            ("content-type", b"text/plain"),
            ("content-type", b"application/json"),
        ],
        Reject(RejectReason.DUPLICATE_HEADER),
    ),
    Case(
        "bin-conflicting-datacontenttype",
        b"x",
        [
            *ce_headers("bin-conflicting-datacontenttype", datacontenttype="application/json"),
            ("content-type", b"text/plain"),
        ],
        Reject(RejectReason.CONFLICTING_DATACONTENTTYPE),
    ),
    # The core specification's type system (String characters, non-empty optionals).
    Case(
        "bin-control-character-subject",
        b"x",
        ce_headers("bin-control-character-subject", subject="tab\there"),
        Reject(RejectReason.INVALID_CHARACTERS),
    ),
    Case(
        "bin-noncharacter-extension",
        b"x",
        ce_headers("bin-noncharacter-extension", comexample="\ufdd0"),
        Reject(RejectReason.INVALID_CHARACTERS),
    ),
    Case(
        "bin-empty-subject",
        b"x",
        ce_headers("bin-empty-subject", subject=""),
        Reject(RejectReason.EMPTY_OPTIONAL_ATTRIBUTE),
    ),
    Case(
        "bin-empty-content-type",
        b"x",
        [*ce_headers("bin-empty-content-type"), ("content-type", b"")],
        Reject(RejectReason.EMPTY_OPTIONAL_ATTRIBUTE),
    ),
    Case("plain-tombstone", None, [], Reject(RejectReason.PLAIN_TOMBSTONE)),
    Case(
        "plain-value-no-ce-headers",
        b"just some bytes",
        [("x-trace", b"1")],
        Reject(RejectReason.NOT_A_CLOUDEVENT),
    ),
    # --- structured mode: valid events ------------------------------------------------
    Case(
        "st-object-data",
        ce_json("st-object-data", data=DATA_OBJECT),
        STRUCTURED,
        Event("st-object-data", data=canonical_json(DATA_OBJECT), content_mode="structured"),
    ),
    Case(
        "st-string-data-text-plain",
        ce_json("st-string-data-text-plain", datacontenttype="text/plain", data="héllo <b>"),
        STRUCTURED,
        Event(
            "st-string-data-text-plain",
            datacontenttype="text/plain",
            data="héllo <b>".encode(),
            content_mode="structured",
        ),
    ),
    Case(
        # With a JSON datacontenttype the string is the JSON value: its JSON text.
        "st-string-data-json",
        ce_json("st-string-data-json", datacontenttype="application/json", data="hello"),
        STRUCTURED,
        Event(
            "st-string-data-json",
            datacontenttype="application/json",
            data=b'"hello"',
            content_mode="structured",
        ),
    ),
    Case(
        "st-data-base64",
        ce_json("st-data-base64", data_base64="aGVsbG8gd29ybGQ="),
        STRUCTURED,
        Event("st-data-base64", data=b"hello world", content_mode="structured"),
    ),
    Case(
        "st-data-null",
        ce_json("st-data-null", data=None),
        STRUCTURED,
        Event("st-data-null", data=None, content_mode="structured"),
    ),
    Case(
        "st-time-offset-fraction",
        ce_json("st-time-offset-fraction", time="2018-04-05T03:56:24.25-05:30"),
        STRUCTURED,
        Event(
            "st-time-offset-fraction",
            time=utc(2018, 4, 5, 9, 26, 24, 250000),
            content_mode="structured",
        ),
    ),
    Case(
        "st-extensions",
        ce_json(
            "st-extensions",
            partitionkey="pk-1",
            comexampleextension1="value",
            count=5,
            flag=True,
        ),
        STRUCTURED,
        Event(
            "st-extensions",
            content_mode="structured",
            extensions={
                "partitionkey": "pk-1",
                "comexampleextension1": "value",
                "count": "5",
                "flag": "true",
            },
        ),
    ),
    Case(
        # An Integer extension reaches both ends of the 32-bit range.
        "st-extension-int32-bounds",
        ce_json("st-extension-int32-bounds", high=2**31 - 1, low=-(2**31)),
        STRUCTURED,
        Event(
            "st-extension-int32-bounds",
            content_mode="structured",
            extensions={"high": "2147483647", "low": "-2147483648"},
        ),
    ),
    Case(
        "st-null-subject",
        ce_json("st-null-subject", subject=None),
        STRUCTURED,
        Event("st-null-subject", subject=None, content_mode="structured"),
    ),
    Case(
        "st-unicode-attributes",
        ce_json("st-unicode-attributes", source=UNICODE_SOURCE),
        STRUCTURED,
        Event("st-unicode-attributes", source=UNICODE_SOURCE, content_mode="structured"),
    ),
    Case(
        "st-content-type-case-and-params",
        ce_json("st-content-type-case-and-params"),
        [("content-type", b"Application/CloudEvents+JSON; charset=utf-8")],
        Event("st-content-type-case-and-params", content_mode="structured"),
    ),
    Case(
        # 3.3.3: headers beside a structured value do not make it binary; the JSON wins.
        "st-with-ce-headers",
        ce_json("st-with-ce-headers", subject="from-json"),
        [
            *STRUCTURED,
            *ce_headers(
                "from-header",
                specversion="0.3",
                type="header.type",
                subject="from-header",
                headeronly="x",
            ),
        ],
        Event("st-with-ce-headers", subject="from-json", content_mode="structured"),
    ),
    # --- structured mode: rejects -----------------------------------------------------
    Case(
        # JSON format 2.2: an Integer is a number with only an integer component.
        "st-extension-fraction",
        ce_json("st-extension-fraction", ratio=1.5),
        STRUCTURED,
        Reject(RejectReason.INVALID_ATTRIBUTE_TYPE),
    ),
    Case(
        "st-extension-beyond-int32",
        ce_json("st-extension-beyond-int32", count=2**31),
        STRUCTURED,
        Reject(RejectReason.INVALID_ATTRIBUTE_TYPE),
    ),
    Case(
        "st-empty-dataschema",
        ce_json("st-empty-dataschema", dataschema=""),
        STRUCTURED,
        Reject(RejectReason.EMPTY_OPTIONAL_ATTRIBUTE),
    ),
    Case(
        "st-control-character-subject",
        ce_json("st-control-character-subject", subject="a\u0001b"),
        STRUCTURED,
        Reject(RejectReason.INVALID_CHARACTERS),
    ),
    Case(
        # A lone surrogate can only be written as a JSON escape.
        "st-unpaired-surrogate-extension",
        ce_json("st-unpaired-surrogate-extension", comexample="SURROGATE").replace(
            b"SURROGATE", b"\\ud800"
        ),
        STRUCTURED,
        Reject(RejectReason.INVALID_CHARACTERS),
    ),
    Case(
        "st-missing-id",
        ce_json("-", id=DROP),
        STRUCTURED,
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "st-missing-source",
        ce_json("st-missing-source", source=DROP),
        STRUCTURED,
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "st-missing-specversion",
        ce_json("st-missing-specversion", specversion=DROP),
        STRUCTURED,
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "st-missing-type",
        ce_json("st-missing-type", type=DROP),
        STRUCTURED,
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "st-null-id",
        ce_json("-", id=None),
        STRUCTURED,
        Reject(RejectReason.MISSING_REQUIRED_ATTRIBUTE),
    ),
    Case(
        "st-specversion-0.3",
        ce_json("st-specversion-0.3", specversion="0.3"),
        STRUCTURED,
        Reject(RejectReason.UNSUPPORTED_SPECVERSION),
    ),
    Case(
        "st-specversion-2.0",
        ce_json("st-specversion-2.0", specversion="2.0"),
        STRUCTURED,
        Reject(RejectReason.UNSUPPORTED_SPECVERSION),
    ),
    Case(
        "st-empty-id", ce_json("", id=""), STRUCTURED, Reject(RejectReason.EMPTY_REQUIRED_ATTRIBUTE)
    ),
    Case(
        "st-time-space-separator",
        ce_json("st-time-space-separator", time="2018-04-05 03:56:24"),
        STRUCTURED,
        Reject(RejectReason.INVALID_TIME),
    ),
    Case(
        "st-number-id", ce_json("-", id=5), STRUCTURED, Reject(RejectReason.INVALID_ATTRIBUTE_TYPE)
    ),
    Case(
        "st-object-extension",
        ce_json("st-object-extension", ext={"a": 1}),
        STRUCTURED,
        Reject(RejectReason.INVALID_ATTRIBUTE_TYPE),
    ),
    Case(
        "st-uppercase-member",
        ce_json("st-uppercase-member", type=DROP, Type=TYPE),
        STRUCTURED,
        Reject(RejectReason.INVALID_ATTRIBUTE_NAME),
    ),
    Case(
        "st-malformed-json",
        b'{"specversion": "1.0", "id": ',
        STRUCTURED,
        Reject(RejectReason.MALFORMED_JSON),
    ),
    Case(
        "st-trailing-garbage",
        ce_json("st-trailing-garbage") + b"}junk",
        STRUCTURED,
        Reject(RejectReason.MALFORMED_JSON),
    ),
    Case(
        "st-two-objects",
        ce_json("st-two-objects") + ce_json("st-two-objects-2"),
        STRUCTURED,
        Reject(RejectReason.MALFORMED_JSON),
    ),
    Case(
        "st-whitespace-around-object",
        b"  \n" + ce_json("st-whitespace-around-object") + b" \n",
        STRUCTURED,
        Event("st-whitespace-around-object", content_mode="structured"),
    ),
    Case(
        "st-json-array",
        b"[" + ce_json("st-json-array") + b"]",
        STRUCTURED,
        Reject(RejectReason.MALFORMED_JSON),
    ),
    Case(
        "st-duplicate-member",
        b'{"specversion":"1.0","id":"a","id":"b","source":"/s","type":"t"}',
        STRUCTURED,
        Reject(RejectReason.MALFORMED_JSON),
    ),
    Case(
        "st-invalid-utf8-value",
        ce_json("st-invalid-utf8-value", subject="x").replace(b'"x"', b'"\xff"'),
        STRUCTURED,
        Reject(RejectReason.MALFORMED_JSON),
    ),
    Case("st-no-value", None, STRUCTURED, Reject(RejectReason.MALFORMED_JSON)),
    Case(
        "st-data-and-data-base64",
        ce_json("st-data-and-data-base64", data="x", data_base64="eA=="),
        STRUCTURED,
        Reject(RejectReason.DATA_AND_DATA_BASE64),
    ),
    Case(
        "st-invalid-base64",
        ce_json("st-invalid-base64", data_base64="!!!!"),
        STRUCTURED,
        Reject(RejectReason.INVALID_DATA_BASE64),
    ),
    Case(
        "st-avro-format",
        b"\x02\x06abc",
        [("content-type", b"application/cloudevents+avro")],
        Reject(RejectReason.UNSUPPORTED_EVENT_FORMAT),
    ),
    Case(
        "st-batch-mode",
        b"[" + ce_json("st-batch-mode") + b"]",
        [("content-type", b"application/cloudevents-batch+json")],
        Reject(RejectReason.UNSUPPORTED_BATCH_MODE),
    ),
    Case(
        # Two content-type headers leave the content mode undecided, whichever comes first.
        "st-duplicate-content-type-structured-first",
        ce_json("st-dup-ct-1"),
        [*STRUCTURED, ("content-type", b"text/plain")],
        Reject(RejectReason.DUPLICATE_HEADER),
    ),
    Case(
        "st-duplicate-content-type-binary-first",
        ce_json("st-dup-ct-2"),
        [("content-type", b"text/plain"), *STRUCTURED, *ce_headers("st-dup-ct-2")],
        Reject(RejectReason.DUPLICATE_HEADER),
    ),
]

# --- the examples of the binding document, elided parts filled in --------------------

#: An Avro binary datum of record {name: string, count: long} = {"hello", 42}.
AVRO_DATUM: Final = b"\x0ahello\x54"
XML_DATA: Final = '<much wow="xml"/>'

SPEC_BINARY_EXAMPLE: Final = Case(
    "mykey-3.2.5",
    AVRO_DATUM,
    [
        ("ce_specversion", b"1.0"),
        ("ce_type", b"com.example.someevent"),
        ("ce_source", b"/mycontext/subcontext"),
        ("ce_id", b"1234-1234-1234"),
        ("ce_time", b"2018-04-05T03:56:24Z"),
        ("content-type", b"application/avro"),
        ("ce_subject", b"mysubject"),
        ("ce_dataschema", b"https://example.com/schemas/someevent.avsc"),
        ("ce_comexampleextension1", b"value"),
    ],
    Event(
        "1234-1234-1234",
        source="/mycontext/subcontext",
        type="com.example.someevent",
        datacontenttype="application/avro",
        subject="mysubject",
        dataschema="https://example.com/schemas/someevent.avsc",
        time=utc(2018, 4, 5, 3, 56, 24),
        data=AVRO_DATUM,
        extensions={"comexampleextension1": "value"},
    ),
)
SPEC_STRUCTURED_EXAMPLE: Final = Case(
    "mykey-3.3.4",
    b"""{
    "specversion" : "1.0",
    "type" : "com.example.someevent",
    "source" : "/mycontext/subcontext",
    "id" : "1234-1234-1234",
    "time" : "2018-04-05T03:56:24Z",
    "datacontenttype" : "application/xml",
    "subject" : "mysubject",
    "comexampleextension1" : "value",
    "comexampleothervalue" : 5,
    "data" : "<much wow=\\"xml\\"/>"
}""",
    [("content-type", b"application/cloudevents+json; charset=UTF-8")],
    Event(
        "1234-1234-1234",
        source="/mycontext/subcontext",
        type="com.example.someevent",
        datacontenttype="application/xml",
        subject="mysubject",
        time=utc(2018, 4, 5, 3, 56, 24),
        data=XML_DATA.encode(),
        extensions={"comexampleextension1": "value", "comexampleothervalue": "5"},
        content_mode="structured",
    ),
)

# --- the CloudEvents Python SDK --------------------------------------------------------

SDK_TIME: Final = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=2)))


def sdk_events() -> dict[str, tuple[CloudEvent, str]]:
    """SDK events by Kafka key, each with the content mode to send it in.

    The key is the event's ``partitionkey``: the SDK's default key mapper (3.1) sets it.
    """

    def make(key: str, data: Any, **attributes: Any) -> CloudEvent:
        base = {
            "type": "com.example.sdk",
            "source": "/sdk/größe",
            "id": f"id-{key}",
            "time": SDK_TIME,
            "partitionkey": key,
        }
        return CloudEvent({**base, **attributes}, data)

    return {
        "sdk-binary-json": (
            make(
                "sdk-binary-json",
                {"msg": "hello", "n": 1, "list": [1, 2]},
                datacontenttype="application/json",
                subject="s1",
                count=5,
                comexampleextension1="value",
            ),
            "binary",
        ),
        "sdk-binary-bytes": (
            make(
                "sdk-binary-bytes",
                b"\x00\x01\xfe\xffraw",
                datacontenttype="application/octet-stream",
                dataschema="https://example.com/raw",
            ),
            "binary",
        ),
        "sdk-structured-json": (
            make(
                "sdk-structured-json",
                {"msg": "hello", "nested": {"z": 1, "a": [True, None]}},
                datacontenttype="application/json",
                subject="s2",
                count=5,
                flag=True,
            ),
            "structured",
        ),
        "sdk-structured-bytes": (
            make(
                "sdk-structured-bytes",
                b"\x00\x01\xfe\xffraw",
                datacontenttype="application/octet-stream",
                comexampleextension1="value",
            ),
            "structured",
        ),
        "sdk-structured-text": (
            make(
                "sdk-structured-text",
                "plain text ✓",
                datacontenttype="text/plain",
            ),
            "structured",
        ),
    }


def sdk_message(event: CloudEvent, mode: str) -> ce_kafka.KafkaMessage:
    if mode == "binary":
        return ce_kafka.to_binary(event, JSONFormat())
    return ce_kafka.to_structured(event, JSONFormat())


SDK_EVENTS: Final = sdk_events()

# --- kcat --------------------------------------------------------------------------------

KCAT_OK_HEADERS: Final = [
    "ce_specversion=1.0",
    "ce_id=k1",
    "ce_source=/kcat/größe",
    "ce_type=t",
    "ce_subject=from kcat",
    "ce_time=2018-04-05T03:56:24Z",
    "content-type=text/plain",
]
KCAT_RECORDS: Final[dict[str, tuple[list[str], bytes]]] = {
    "kcat-binary": (KCAT_OK_HEADERS, b"hello from kcat"),
    "kcat-missing-id": (
        ["ce_specversion=1.0", "ce_source=/kcat", "ce_type=t", "content-type=text/plain"],
        b"no id",
    ),
    "kcat-structured": (
        ["content-type=application/cloudevents+json"],
        json.dumps(
            {
                "specversion": "1.0",
                "id": "k3",
                "source": "/kcat",
                "type": "t",
                "data": {"from": "kcat"},
            }
        ).encode(),
    ),
}


def kcat_produce(
    settings: Settings, topic: str, key: str, headers: list[str], value: bytes
) -> None:
    """Produce one record with kcat: value on stdin (one line), headers as -H k=v."""
    kcat = shutil.which("kcat")
    assert kcat, "kcat is not on PATH: apt-get install -y kcat"
    assert b"\n" not in value
    command = [kcat, "-P", "-b", settings.bootstrap_servers, "-t", topic, "-k", key]
    for name, option in settings.kafka_options.items():
        command += ["-X", f"{name}={option}"]
    for header in headers:
        command += ["-H", header]
    subprocess.run(command, input=value, check=True, timeout=60, capture_output=True)


# ---------------------------------------------------------------------------------------
# One topic, one ingest
# ---------------------------------------------------------------------------------------

EVENT_READ_COLUMNS: Final = (
    "id",
    "source",
    "type",
    "specversion",
    "datacontenttype",
    "dataschema",
    "subject",
    "data",
    "extensions",
    "content_mode",
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
)


@dataclass(repr=False)
class Landed:
    """The module's topic after one ingest, read back once."""

    topic: str
    settings: Settings
    produced: dict[str, tuple[bytes | None, list[Header]]]
    summary: IngestSummary
    events: dict[str, dict[str, Any]]
    rejects: dict[str, dict[str, Any]]
    event_rows: list[dict[str, Any]]
    reject_rows: list[dict[str, Any]]


def _as_dict(row: Any) -> dict[str, Any]:
    values = row.asDict()
    for name in ("data", "kafka_key", "kafka_value"):
        if values.get(name) is not None:
            values[name] = bytes(values[name])
    return values


@pytest.fixture(scope="module")
def landed(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Landed]:
    topic = f"conformance-{uuid.uuid4().hex[:10]}"
    create_topic(settings, topic, partitions=2, config={"max.message.bytes": str(MAX_RECORD_BYTES)})

    produced: dict[str, tuple[bytes | None, list[Header]]] = {}
    for case in [*CASES, SPEC_BINARY_EXAMPLE, SPEC_STRUCTURED_EXAMPLE]:
        produced[case.id] = (case.value, case.headers)
    for key, (event, mode) in SDK_EVENTS.items():
        message = sdk_message(event, mode)
        assert message.key == key  # the SDK's partitionkey key mapper
        produced[key] = (message.value, list(message.headers.items()))
    assert not set(produced) & set(KCAT_RECORDS)

    producer = make_producer(settings, **{"message.max.bytes": MAX_RECORD_BYTES})
    failures: list[str] = []

    def on_delivery(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for key, (value, headers) in produced.items():
        producer.produce(
            topic, key=key.encode(), value=value, headers=headers, on_delivery=on_delivery
        )
    assert producer.flush(60) == 0
    assert failures == []
    for key, (headers_text, value) in KCAT_RECORDS.items():
        kcat_produce(settings, topic, key, headers_text, value)
        produced[key] = (value, [])  # counted; kcat's headers are checked by the tests

    warehouse = settings.model_copy(
        update={"warehouse": tmp_path_factory.mktemp("conformance") / "warehouse"}
    )
    summary = run_ingest(spark, warehouse, IngestRequest(topics=(topic,)))

    def read(table: str, columns: tuple[str, ...], *extra: Any) -> list[dict[str, Any]]:
        frame = spark.read.format("delta").load(str(warehouse.table_path(table)))
        return [_as_dict(r) for r in frame.select(*columns, "kafka_key", *extra).collect()]

    event_rows = read(EVENTS, EVENT_READ_COLUMNS, F.expr("unix_micros(time)").alias("time_us"))
    reject_rows = read(
        REJECTS,
        (
            "reason",
            "detail",
            "kafka_value",
            "kafka_headers",
            "kafka_topic",
            "kafka_partition",
            "kafka_offset",
        ),
    )
    yield Landed(
        topic=topic,
        settings=warehouse,
        produced=produced,
        summary=summary,
        events={r["kafka_key"].decode(): r for r in event_rows},
        rejects={r["kafka_key"].decode(): r for r in reject_rows},
        event_rows=event_rows,
        reject_rows=reject_rows,
    )


def actual_event(landed: Landed, key: str) -> dict[str, Any]:
    """The events row of ``key`` in the shape of :class:`Event` (time as epoch micros)."""
    assert key not in landed.rejects, f"{key} rejected: {landed.rejects[key]['detail']}"
    assert key in landed.events, f"{key} is in neither table"
    row = landed.events[key]
    shaped = {name: row[name] for name in Event.__dataclass_fields__ if name != "time"}
    shaped["time"] = row["time_us"]
    return shaped


def expected_event(event: Event) -> dict[str, Any]:
    shaped = asdict(event)
    shaped["time"] = micros(event.time)
    return shaped


def assert_landing(landed: Landed, case: Case) -> None:
    if isinstance(case.expect, Reject):
        assert case.id not in landed.events, f"{case.id} landed in events, not rejected"
        assert case.id in landed.rejects, f"{case.id} is in neither table"
        row = landed.rejects[case.id]
        assert row["reason"] == case.expect.reason.value, row["detail"]
    else:
        assert actual_event(landed, case.id) == expected_event(case.expect)


# ---------------------------------------------------------------------------------------
# 1. The table of bad and unusual inputs
# ---------------------------------------------------------------------------------------


def test_case_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_record_lands_as_the_binding_says(landed: Landed, case: Case) -> None:
    assert_landing(landed, case)


def test_every_record_lands_in_exactly_one_table(landed: Landed) -> None:
    coordinates = ("kafka_topic", "kafka_partition", "kafka_offset")
    events = {tuple(r[c] for c in coordinates) for r in landed.event_rows}
    rejects = {tuple(r[c] for c in coordinates) for r in landed.reject_rows}
    assert len(landed.event_rows) + len(landed.reject_rows) == len(landed.produced)
    assert len(events) == len(landed.event_rows)
    assert len(rejects) == len(landed.reject_rows)
    assert events.isdisjoint(rejects)
    assert set(landed.events) | set(landed.rejects) == set(landed.produced)


def test_ingest_summary_counts_match_the_tables(landed: Landed) -> None:
    summary = landed.summary
    assert summary.records_read == len(landed.produced)
    assert summary.events == len(landed.event_rows)
    by_reason: dict[str, int] = {}
    for row in landed.reject_rows:
        by_reason[row["reason"]] = by_reason.get(row["reason"], 0) + 1
    assert dict(summary.rejects_by_reason) == by_reason


def test_rejects_keep_the_raw_record(landed: Landed) -> None:
    rejected = [case for case in CASES if isinstance(case.expect, Reject)]
    for case in rejected:
        row = landed.rejects[case.id]
        headers = [
            (h["key"], None if h["value"] is None else bytes(h["value"]))
            for h in (row["kafka_headers"] or [])
        ]
        assert (row["kafka_value"], headers) == (case.value, case.headers), case.id


# ---------------------------------------------------------------------------------------
# 2. The examples of the binding document
# ---------------------------------------------------------------------------------------


def test_binary_mode_example_of_section_3_2_5(landed: Landed) -> None:
    assert_landing(landed, SPEC_BINARY_EXAMPLE)


def test_structured_mode_example_of_section_3_3_4(landed: Landed) -> None:
    assert_landing(landed, SPEC_STRUCTURED_EXAMPLE)


# ---------------------------------------------------------------------------------------
# 3a. The CloudEvents Python SDK as producer
# ---------------------------------------------------------------------------------------


def _ce_string(value: Any) -> str:
    """An extension value as the CloudEvents type system's canonical string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _sdk_expected(event: CloudEvent, mode: str) -> dict[str, Any]:
    attributes = event.get_attributes()
    core = {
        "id",
        "source",
        "type",
        "specversion",
        "datacontenttype",
        "dataschema",
        "subject",
        "time",
    }
    return {
        "id": event.get_id(),
        "source": event.get_source(),
        "type": event.get_type(),
        "specversion": event.get_specversion(),
        "datacontenttype": event.get_datacontenttype(),
        "dataschema": event.get_dataschema(),
        "subject": event.get_subject(),
        "time": micros(event.get_time()),
        "extensions": {k: _ce_string(v) for k, v in attributes.items() if k not in core},
        "content_mode": mode,
    }


def _decoded_data(data: bytes | None, content_type: str | None) -> Any:
    """The event's data as the SDK models it: JSON value, text, or bytes."""
    assert data is not None
    if content_type == "application/json":
        return json.loads(data)
    if content_type is not None and content_type.startswith("text/"):
        return data.decode()
    return data


@pytest.mark.parametrize("key", list(SDK_EVENTS))
def test_sdk_event_lands_with_its_attributes(landed: Landed, key: str) -> None:
    event, mode = SDK_EVENTS[key]
    actual = actual_event(landed, key)
    data = actual.pop("data")
    assert actual == _sdk_expected(event, mode)
    assert _decoded_data(data, event.get_datacontenttype()) == event.get_data()


def test_sdk_binary_value_is_kept_byte_for_byte(landed: Landed) -> None:
    for key, (event, mode) in SDK_EVENTS.items():
        if mode == "binary":
            assert landed.events[key]["data"] == sdk_message(event, mode).value, key


# ---------------------------------------------------------------------------------------
# 3b. kcat as producer
# ---------------------------------------------------------------------------------------


def test_kcat_binary_record_lands_in_events(landed: Landed) -> None:
    assert actual_event(landed, "kcat-binary") == expected_event(
        Event(
            "k1",
            source="/kcat/größe",
            type="t",
            subject="from kcat",
            datacontenttype="text/plain",
            time=utc(2018, 4, 5, 3, 56, 24),
            data=b"hello from kcat",
        )
    )


def test_kcat_record_without_id_is_rejected(landed: Landed) -> None:
    assert "kcat-missing-id" not in landed.events
    row = landed.rejects["kcat-missing-id"]
    assert row["reason"] == RejectReason.MISSING_REQUIRED_ATTRIBUTE.value
    assert "id" in row["detail"]


def test_kcat_structured_record_lands_in_events(landed: Landed) -> None:
    assert actual_event(landed, "kcat-structured") == expected_event(
        Event(
            "k3",
            source="/kcat",
            type="t",
            data=b'{"from":"kcat"}',
            content_mode="structured",
        )
    )


# ---------------------------------------------------------------------------------------
# 4. An independent Delta reader
# ---------------------------------------------------------------------------------------


def test_delta_rs_reads_the_same_events_as_spark(landed: Landed) -> None:
    columns = ["kafka_topic", "kafka_partition", "kafka_offset", "id"]
    table = deltalake.DeltaTable(str(landed.settings.table_path(EVENTS)))
    from_delta_rs = {
        tuple(row[c] for c in columns)
        for row in table.to_pyarrow_table(columns=columns).to_pylist()
    }
    from_spark = {tuple(row[c] for c in columns) for row in landed.event_rows}
    assert from_delta_rs == from_spark
    assert len(from_spark) == len(landed.event_rows)


def test_delta_rs_reads_event_data_byte_for_byte(landed: Landed) -> None:
    table = deltalake.DeltaTable(str(landed.settings.table_path(EVENTS)))
    rows = table.to_pyarrow_table(columns=["kafka_key", "data"]).to_pylist()
    big = [row["data"] for row in rows if row["kafka_key"] == b"bin-1mib-value"]
    assert big == [BIG_VALUE]


def test_topic_is_this_modules_own(landed: Landed) -> None:
    topics = {row["kafka_topic"] for row in landed.event_rows + landed.reject_rows}
    assert topics == {landed.topic}
