"""A type's ``dataschema`` as the typed view's columns: reading the JSON Schema an event
names, and mapping its top-level ``properties`` to Spark types.

The URI comes from event data, so what is read is narrow by default:

* ``file:`` URIs (no host, or ``localhost``) are read: a regular file only (never a
  FIFO or a device, which could block or never end).
* ``http:`` and ``https:`` URIs only when the caller allows it (the setting
  ``fetch_dataschemas``, off by default): fetching a URL that any producer chose would
  let a producer make the query host send requests into its own network (server-side
  request forgery). A redirect is followed only to another ``http(s):`` URL, at most
  :data:`MAX_REDIRECTS` of them. httpx fetches, trusting the system's certificates.
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

import json
import os
import ssl
import stat
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import IO, TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from eventlake.core.errors import EventlakeError

if TYPE_CHECKING:
    import httpx

#: The largest schema read, in bytes; a larger one is not used.
MAX_SCHEMA_BYTES: Final = 1 << 20
#: How long an http(s) read may take, in seconds (connect, and each wait for bytes).
READ_TIMEOUT_SECONDS: Final = 5.0
#: How many redirects an http(s) read follows at most.
MAX_REDIRECTS: Final = 10
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


def _bounded_chunks(chunks: Iterator[bytes], max_bytes: int) -> bytes:
    raw = bytearray()
    for chunk in chunks:
        raw += chunk
        if len(raw) > max_bytes:
            raise DataschemaError(f"larger than {max_bytes} bytes")
    return bytes(raw)


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


#: What a refused redirect's status is followed by.
_MOVED: Final = " (a redirect to another scheme than http(s))"


def _read_http(uri: str, max_bytes: int, timeout: float) -> bytes:
    import httpx  # imported for a fetch only (it is off by default): ~0.3 s

    redirects: list[int] = []  # the status of each redirect response

    def follow_only_http(response: httpx.Response) -> None:
        # Before httpx follows a redirect (it would refuse other schemes with an error of
        # its own): the same sentences as before httpx, for ftp: and for the rest.
        if not response.has_redirect_location:
            return
        redirects.append(response.status_code)
        scheme = urlsplit(response.headers["Location"]).scheme.lower()
        if scheme == "ftp":
            raise DataschemaError("redirected to another scheme than http(s)")
        if scheme and scheme not in _HTTP:
            raise DataschemaError(f"HTTP {response.status_code}{_MOVED}")

    if not urlsplit(uri).hostname:
        raise DataschemaError("cannot fetch it: no host given")
    client = httpx.Client(
        headers={"Accept": "application/schema+json, */*", "Accept-Encoding": "identity"},
        timeout=timeout,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        verify=ssl.create_default_context(),  # the system's certificates, not certifi's
        event_hooks={"response": [follow_only_http]},
    )
    try:
        with client, client.stream("GET", uri) as response:
            if not 200 <= response.status_code < 300:
                moved = _MOVED if 300 <= response.status_code < 400 else ""
                raise DataschemaError(f"HTTP {response.status_code}{moved}")
            # The bytes as sent: no decompression, whose output the bound would not limit.
            return _bounded_chunks(response.iter_raw(), max_bytes)
    except httpx.TooManyRedirects:
        raise DataschemaError(f"HTTP {redirects[-1]}{_MOVED}") from None
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as error:
        # Timeouts, refused connections, resets, a malformed response or host name.
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
