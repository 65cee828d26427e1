"""The source topic of the republish tests: a small corpus of hand-made records and
events made by the official CloudEvents SDK, every record distinct so that it can be
found again in a target topic.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cloudevents.core.base import BaseCloudEvent
from cloudevents.core.bindings import kafka as ce_kafka
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent

Headers = list[tuple[str, bytes | None]]
SDK_TIME = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def ce_headers(event_id: str, type_: str, source: bytes = b"/shop", **extra: bytes) -> Headers:
    headers: Headers = [
        ("ce_specversion", b"1.0"),
        ("ce_id", event_id.encode()),
        ("ce_source", source),
        ("ce_type", type_.encode()),
    ]
    return headers + [(f"ce_{name}", value) for name, value in extra.items()]


def structured_value(members: dict[str, Any]) -> bytes:
    return json.dumps(members).encode()  # the SDK's style: ", " and ": " separators


JSON_CT: Headers = [("content-type", b"application/cloudevents+json")]

#: name -> (key, value, headers). Every record is distinct, so it can be found again.
CORPUS: dict[str, tuple[bytes | None, bytes | None, Headers]] = {
    "bin-json": (
        b"r1",
        b'{"amount": 1.50, "items": [1, 2]}',
        [
            ("trace", b"\x00\x01"),
            *ce_headers(
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
        [
            *ce_headers("b2", "blob", partitionkey=b"cust-2"),
            ("content-type", b"application/octet-stream"),
        ],
    ),
    "bin-text": (
        b"r3",
        "héllo\n".encode(),
        [
            *ce_headers("b3", "note", partitionkey=b"cust-1"),
            ("content-type", b"text/plain; charset=utf-8"),
        ],
    ),
    "bin-tombstone": (b"r4", None, ce_headers("b4", "deleted", partitionkey=b"cust-2")),
    "st-json": (
        b"r5",
        structured_value(
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
        structured_value(
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
        structured_value(
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
        [*ce_headers("b8", "order.viewed"), ("content-type", b"application/json")],
    ),
    "not-a-cloudevent": (b"r9", b"plain bytes", [("x", b"1")]),
    "plain-tombstone": (b"r10", None, []),
    "no-key": (
        None,
        b'"text"',
        [
            *ce_headers("b11", "order.noted", subject=b"order-11", partitionkey=b"cust-5"),
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
