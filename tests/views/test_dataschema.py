"""eventlake.views.dataschema: which dataschema URIs are read, within what bounds, and the
JSON Schema -> Spark type mapping."""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlake.views.dataschema import (
    DataschemaError,
    decimal_scale,
    parse_schema,
    read_dataschema,
    schema_fields,
    spark_type,
)
from tests.helpers import http_server

ORDER_SCHEMA: dict[str, object] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "order": {"type": "string"},
        "paid_at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "amount": {"type": "number", "multipleOf": 0.01},
        "rate": {"type": "number"},
        "count": {"type": "integer"},
        "express": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
        "lines": {"type": "array", "items": {"type": "object"}},
        "customer": {"type": "object"},
        "code": {"type": ["string", "integer"]},
        "any": {},
        "ref": {"$ref": "#/$defs/x"},
    },
}


def _file(tmp_path: Path, text: str | bytes, name: str = "schema.json") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path.as_uri()


def test_each_json_schema_type_maps_to_a_spark_type_in_the_schemas_order() -> None:
    assert schema_fields(parse_schema(json.dumps(ORDER_SCHEMA).encode())) == {
        "order": "STRING",
        "paid_at": "TIMESTAMP",
        "day": "DATE",
        "amount": "DECIMAL(38,2)",
        "rate": "DOUBLE",
        "count": "BIGINT",
        "express": "BOOLEAN",
        "note": "STRING",
        "lines": "VARIANT",
        "customer": "VARIANT",
        "code": "VARIANT",
        "any": "VARIANT",
        "ref": "VARIANT",
    }


def test_a_number_is_a_decimal_only_when_its_multiple_is_a_power_of_ten() -> None:
    assert [decimal_scale(m) for m in (0.01, 0.1, 1e-6, 0.05, 1, 10, -0.01, True, "0.01")] == [
        2,
        1,
        6,
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    assert spark_type({"type": "number", "multipleOf": 0.05}) == "DOUBLE"


def test_a_property_that_is_not_a_schema_object_is_a_variant() -> None:
    assert [spark_type(p) for p in (True, None, {"type": 3}, {"type": ["null"]})] == ["VARIANT"] * 4


def test_a_file_uri_is_read(tmp_path: Path) -> None:
    uri = _file(tmp_path, json.dumps(ORDER_SCHEMA))

    assert read_dataschema(uri)["properties"]["count"] == {"type": "integer"}
    assert read_dataschema(uri.replace("file://", "file://localhost"))["type"] == "object"


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("/schemas/order.json", "a relative reference (no scheme) is not read"),
        ("order.json", "a relative reference (no scheme) is not read"),
        ("urn:example:order", "the scheme urn: is not read"),
        ("ftp://example.com/order.json", "the scheme ftp: is not read"),
        ("file://server/order.json", "a file on another host (server) is not read"),
        ("file:order.json", "a file: URI without an absolute path is not read"),
        ("https://example.com/order.json", "http(s) dataschemas are not fetched"),
        ("http://127.0.0.1:9/order.json", "http(s) dataschemas are not fetched"),
    ],
)
def test_other_uris_are_not_read_by_default(uri: str, reason: str) -> None:
    with pytest.raises(DataschemaError) as raised:
        read_dataschema(uri)

    assert str(raised.value).startswith(reason), raised.value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not json", "not JSON: Expecting value at line 1"),
        ("[1]", "not a JSON Schema: not a JSON object"),
        ('{"type": "array", "properties": {}}', "not a JSON Schema of an object"),
        ('{"type": "object"}', "not a JSON Schema with top-level properties"),
        ('{"properties": []}', "not a JSON Schema with top-level properties"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_a_file_that_is_no_json_schema_says_why(
    tmp_path: Path, text: str | bytes, reason: str
) -> None:
    with pytest.raises(DataschemaError) as raised:
        read_dataschema(_file(tmp_path, text))

    assert str(raised.value).startswith(reason), raised.value


def test_a_missing_file_a_folder_and_a_fifo_are_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    for path, reason in (
        (tmp_path / "missing.json", "cannot open the file: No such file or directory"),
        (tmp_path, "not a regular file"),
        (fifo, "not a regular file"),  # and no wait for a writer
    ):
        with pytest.raises(DataschemaError) as raised:
            read_dataschema(path.as_uri())
        assert str(raised.value) == reason


def test_a_file_larger_than_the_bound_is_not_read(tmp_path: Path) -> None:
    uri = _file(tmp_path, json.dumps({"properties": {"pad": {"description": "x" * 100}}}))

    with pytest.raises(DataschemaError, match=r"^larger than 64 bytes$"):
        read_dataschema(uri, max_bytes=64)
    assert "pad" in read_dataschema(uri, max_bytes=1000)["properties"]


@pytest.fixture
def schema_server() -> Iterator[str]:
    """A local HTTP server on 127.0.0.1 (no other network): its base URL."""
    routes = {
        "/order.json": (200, {}, json.dumps(ORDER_SCHEMA).encode()),
        "/moved": (302, {"Location": "/order.json"}, b""),
        "/to-file": (302, {"Location": "file:///etc/hostname"}, b""),
        "/to-ftp": (302, {"Location": "ftp://127.0.0.1:9/order.json"}, b""),
        "/big": (200, {}, b" " * 2048),
        "/gzip": (
            200,
            {"Content-Encoding": "gzip"},
            gzip.compress(json.dumps(ORDER_SCHEMA).encode()),
        ),
        # /hop/n: n + 1 redirects to the schema.
        "/hop/0": (302, {"Location": "/order.json"}, b""),
        **{f"/hop/{n}": (302, {"Location": f"/hop/{n - 1}"}, b"") for n in range(1, 11)},
    }
    with http_server(routes) as base:
        yield base


def test_an_http_dataschema_is_fetched_only_when_allowed(schema_server: str) -> None:
    with pytest.raises(DataschemaError, match="not fetched"):
        read_dataschema(f"{schema_server}/order.json")

    schema = read_dataschema(f"{schema_server}/order.json", fetch_http=True)

    assert schema_fields(schema)["amount"] == "DECIMAL(38,2)"
    assert "count" in read_dataschema(f"{schema_server}/moved", fetch_http=True)["properties"]


def test_a_failed_fetch_says_why(schema_server: str) -> None:
    for path, reason in (
        ("/missing", "HTTP 404"),
        ("/to-file", "HTTP 302 (a redirect to another scheme than http(s))"),
        ("/to-ftp", "redirected to another scheme than http(s)"),
        ("/big", "larger than 1024 bytes"),
    ):
        with pytest.raises(DataschemaError) as raised:
            read_dataschema(f"{schema_server}{path}", fetch_http=True, max_bytes=1024)
        assert str(raised.value) == reason


def test_a_fetch_follows_at_most_ten_redirects(schema_server: str) -> None:
    assert "count" in read_dataschema(f"{schema_server}/hop/9", fetch_http=True)["properties"]
    with pytest.raises(DataschemaError, match=r"^HTTP 302\b"):
        read_dataschema(f"{schema_server}/hop/10", fetch_http=True)


def test_a_body_is_read_as_sent_never_decompressed(schema_server: str) -> None:
    # The bound counts the bytes on the wire: a small compressed body cannot unpack to more.
    with pytest.raises(DataschemaError, match=r"^not UTF-8 text$"):
        read_dataschema(f"{schema_server}/gzip", fetch_http=True)


def test_a_server_that_does_not_answer_is_given_up_after_the_timeout() -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        with pytest.raises(DataschemaError) as raised:
            read_dataschema(
                f"http://127.0.0.1:{silent.getsockname()[1]}/order.json",
                fetch_http=True,
                timeout=0.5,
            )
    assert str(raised.value) == "cannot fetch it: timed out"
    assert time.monotonic() - started < 5
