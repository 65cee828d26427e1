"""A type's ``dataschema`` as the typed view's columns: reading the JSON Schema an event
names, and mapping its top-level ``properties`` to Spark types.

The URI comes from event data, so what is read is narrow by default:

* ``file:`` URIs (no host, or ``localhost``) are read: a regular file only (never a
  FIFO or a device, which could block or never end).
* ``http:`` and ``https:`` URIs only when the caller allows it (the setting
  ``fetch_dataschemas``, off by default): fetching a URL that any producer chose would
  let a producer make the query host send requests into its own network (server-side
  request forgery). A redirect is followed only to another ``http(s):`` URL.
* Anything else is not read: another scheme (``urn:``, ``ftp:``), and a relative
  reference (``/schemas/order.json``, ``order.json``), whose base the event does not
  give; a local path is not a guess we make for it.

Every read is bounded (:data:`MAX_SCHEMA_BYTES`, :data:`READ_TIMEOUT_SECONDS`). A schema
that cannot be read or is not a JSON Schema object with ``properties`` raises
:class:`DataschemaError`, whose message says why in one line (no stack trace, no
content of the file).

Types (:func:`spark_type`): ``integer`` BIGINT; ``number`` DOUBLE, or DECIMAL(38,s) when
its ``multipleOf`` is 10^-s (``0.01``: DECIMAL(38,2), exact amounts, as inference reads
a sample's decimals); ``string`` STRING, with ``format`` ``date-time`` TIMESTAMP and
``date`` DATE; ``boolean`` BOOLEAN; one of these with ``"null"`` (``["string", "null"]``,
a nullable field) that type; anything else (``object``, ``array``, several types, none,
a ``$ref``) VARIANT.

Example:
    >>> schema_fields(read_dataschema("file:///schemas/order.json"))
    {'order': 'STRING', 'amount': 'DECIMAL(38,2)', 'paid_at': 'TIMESTAMP'}
"""

from __future__ import annotations

import http.client
import json
import os
import stat
import urllib.error
import urllib.request
from decimal import Decimal, InvalidOperation
from typing import IO, Any, Final
from urllib.parse import unquote, urlsplit

from eventlake.core.errors import EventlakeError

#: The largest schema read, in bytes; a larger one is not used.
MAX_SCHEMA_BYTES: Final = 1 << 20
#: How long an http(s) read may take, in seconds (connect, and each wait for bytes).
READ_TIMEOUT_SECONDS: Final = 5.0
#: Spark type of a field the schema gives no single scalar type.
VARIANT: Final = "VARIANT"

_SCALARS: Final = {"integer": "BIGINT", "boolean": "BOOLEAN", "number": "DOUBLE"}
_STRING_FORMATS: Final = {"date-time": "TIMESTAMP", "date": "DATE"}
_HTTP: Final = frozenset({"http", "https"})


class DataschemaError(EventlakeError):
    """Why a dataschema was not used, in one line (e.g. ``not JSON: ...``)."""


def decimal_scale(multiple_of: object) -> int | None:
    """The digits after the point of a ``multipleOf`` that is 10^-s (1 <= s <= 37);
    None for any other value (``0.05``, ``2``, ``1``).

    Example:
        >>> decimal_scale(0.01), decimal_scale(0.05), decimal_scale("0.01")
        (2, None, None)
    """
    if isinstance(multiple_of, bool) or not isinstance(multiple_of, int | float | Decimal):
        return None
    try:
        # str() first: 0.01 as a float is not exactly a hundredth, its shortest text is.
        value = Decimal(str(multiple_of)).normalize()
    except InvalidOperation:
        return None
    sign, digits, exponent = value.as_tuple()
    if sign or digits != (1,) or not isinstance(exponent, int) or not -37 <= exponent <= -1:
        return None
    return -exponent


def spark_type(prop: object) -> str:
    """The Spark type a view reads one property of a JSON Schema as (see the module
    docstring for the mapping).

    Example:
        >>> spark_type({"type": "string", "format": "date-time"}), spark_type({"type": "array"})
        ('TIMESTAMP', 'VARIANT')
    """
    if not isinstance(prop, dict):
        return VARIANT  # `true`, `false` or garbage: any value
    declared = prop.get("type")
    kinds = [declared] if isinstance(declared, str) else declared
    if not isinstance(kinds, list):
        return VARIANT
    # ["integer", "null"] is a nullable integer: a NULL column value already says null.
    kinds = [k for k in kinds if k != "null"]
    if len(kinds) != 1:
        return VARIANT
    (kind,) = kinds
    if kind == "number":
        scale = decimal_scale(prop.get("multipleOf"))
        return "DOUBLE" if scale is None else f"DECIMAL(38,{scale})"
    if kind == "string":
        return _STRING_FORMATS.get(str(prop.get("format")), "STRING")
    return _SCALARS.get(str(kind), VARIANT)


def schema_fields(schema: dict[str, Any]) -> dict[str, str]:
    """The top-level ``properties`` of a JSON Schema, in the schema's order, each with
    its Spark type (:func:`spark_type`).

    Example:
        >>> schema_fields({"properties": {"n": {"type": "integer"}, "tags": {}}})
        {'n': 'BIGINT', 'tags': 'VARIANT'}
    """
    return {str(name): spark_type(prop) for name, prop in schema["properties"].items()}


def parse_schema(raw: bytes) -> dict[str, Any]:
    """A JSON Schema document's object, when it is one with top-level ``properties``.

    Example:
        >>> parse_schema(b'{"type": "object", "properties": {}}')
        {'type': 'object', 'properties': {}}
    """
    try:
        schema = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DataschemaError("not UTF-8 text") from None
    except json.JSONDecodeError as error:
        # The message gives a position only, never the content.
        raise DataschemaError(f"not JSON: {error.msg} at line {error.lineno}") from None
    if not isinstance(schema, dict):
        raise DataschemaError("not a JSON Schema: not a JSON object")
    if schema.get("type", "object") != "object":
        raise DataschemaError("not a JSON Schema of an object: its type is not object")
    if not isinstance(schema.get("properties"), dict):
        raise DataschemaError("not a JSON Schema with top-level properties")
    return schema


def _bounded(stream: IO[bytes], max_bytes: int) -> bytes:
    raw = stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise DataschemaError(f"larger than {max_bytes} bytes")
    return raw


def _read_file(path: str, max_bytes: int) -> bytes:
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise DataschemaError(f"cannot open the file: {error.strerror}") from None
    except ValueError:  # a NUL byte in the path
        raise DataschemaError("not a file path") from None
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise DataschemaError("not a regular file")
    with os.fdopen(handle, "rb") as stream:
        try:
            return _bounded(stream, max_bytes)
        except OSError as error:
            raise DataschemaError(f"cannot read the file: {error.strerror}") from None


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to another http(s) URL (urllib would follow ftp: too)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme.lower() not in _HTTP:
            raise DataschemaError("redirected to another scheme than http(s)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _read_http(uri: str, max_bytes: int, timeout: float) -> bytes:
    opener = urllib.request.build_opener(_HttpOnlyRedirects)
    request = urllib.request.Request(uri, headers={"Accept": "application/schema+json, */*"})
    try:
        with opener.open(request, timeout=timeout) as response:
            return _bounded(response, max_bytes)
    except urllib.error.HTTPError as error:
        # urllib itself refuses a redirect to file: (and others) with the 3xx status.
        moved = " (a redirect to another scheme than http(s))" if 300 <= error.code < 400 else ""
        raise DataschemaError(f"HTTP {error.code}{moved}") from None
    except urllib.error.URLError as error:
        raise DataschemaError(f"cannot fetch it: {error.reason}") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        # Timeouts, resets, a malformed response or host name.
        raise DataschemaError(f"cannot fetch it: {error or type(error).__name__}") from None


def read_dataschema(
    uri: str,
    *,
    fetch_http: bool = False,
    max_bytes: int = MAX_SCHEMA_BYTES,
    timeout: float = READ_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """The JSON Schema at ``uri`` (:func:`parse_schema`), read as the module docstring
    says; ``fetch_http``: http(s) URIs too. Raises :class:`DataschemaError` saying why
    it was not read.

    Example:
        >>> read_dataschema("file:///schemas/order.json")["properties"]["order"]
        {'type': 'string'}
        >>> read_dataschema("https://example.com/order.json")
        Traceback (most recent call last):
        DataschemaError: http(s) dataschemas are not fetched (EVENTLAKE_FETCH_DATASCHEMAS)
    """
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise DataschemaError("not a URI") from None
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise DataschemaError(f"a file on another host ({parts.netloc}) is not read")
        if not parts.path.startswith("/"):
            raise DataschemaError("a file: URI without an absolute path is not read")
        return parse_schema(_read_file(unquote(parts.path), max_bytes))
    if scheme in _HTTP:
        if not fetch_http:
            raise DataschemaError(
                "http(s) dataschemas are not fetched (EVENTLAKE_FETCH_DATASCHEMAS)"
            )
        return parse_schema(_read_http(uri, max_bytes, timeout))
    if not scheme:
        raise DataschemaError("a relative reference (no scheme) is not read")
    raise DataschemaError(f"the scheme {scheme}: is not read")
