"""The binding in the sender's direction: rows of :func:`eventlake.binding.decode_records`
encoded back into Kafka records, in binary or structured (JSON format) content mode.

This is the inverse of the decoder, as Spark column expressions (no Python UDFs). It is
exact, so that converting an event between modes never changes the event:

* binary -> structured: attributes and extensions become JSON string members with
  their header text as-is (``time`` keeps its original text, not a re-formatted
  timestamp); ``content-type`` becomes ``datacontenttype``. The data is written

  - as ``data`` holding the data bytes verbatim, when the media type is JSON (or
    absent, which the JSON format reads as JSON) and the bytes are exactly one JSON
    value (without leading whitespace, which the way back trims);
  - as ``data`` holding a JSON string, when the media type says text (``text/*``,
    XML) and the bytes are UTF-8: the JSON format's rule for non-binary data (3.1);
  - as ``data_base64`` otherwise.

* structured -> binary: ``ce_`` headers for the attributes and extensions,
  ``content-type`` for ``datacontenttype``, the data bytes as the value. An event with
  JSON data in ``data`` and no datacontenttype gets ``content-type: application/json``,
  which is what the JSON format says its data is (3.1.2); so a binary event without
  content-type whose value is one JSON value comes back from structured mode with that
  header, the one change a round trip makes. For JSON data the member's text is cut
  out of the record verbatim where it provably is that same JSON value, so binary ->
  structured -> binary gives back the same bytes; otherwise the decoder's bytes
  (compact JSON) are used. Extension values that were JSON numbers or booleans become
  their JSON text (binary mode has only strings).

Headers that are not CloudEvents headers (neither ``ce_*`` nor ``content-type``) are
carried over in their order, duplicates included. A record already in the wanted mode
is copied byte for byte.

Example:
    >>> valid = decode_records(kafka_rows).where("reject_reason IS NULL")
    >>> out = valid.transform(encode_as, "structured")  # + encoded_value, encoded_headers
"""

from __future__ import annotations

from typing import Final, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.binding import (
    CE_PREFIX,
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    CONTENT_TYPE_HEADER,
    OPTIONAL_ATTRIBUTES,
    REQUIRED_ATTRIBUTES,
)
from eventlake.json_shape import JSON_WHITESPACE, single_json_value
from eventlake.tables import KAFKA_HEADERS_TYPE

#: content-type of the structured records written here (the binding's example, 3.3.1).
STRUCTURED_CONTENT_TYPE: Final = "application/cloudevents+json; charset=UTF-8"
#: content-type of binary records whose structured event had JSON data and no
#: datacontenttype (JSON format 3.1.2).
JSON_MEDIA_TYPE: Final = "application/json"
ENCODED_VALUE: Final = "encoded_value"
ENCODED_HEADERS: Final = "encoded_headers"

ContentMode = Literal["binary", "structured"]

#: Header order of binary records written here: the required attributes first.
_HEADER_ATTRIBUTES: Final = (
    "specversion",
    "id",
    "source",
    "type",
    "dataschema",
    "subject",
    "time",
)
#: Member order of structured records written here.
_MEMBER_ATTRIBUTES: Final = (
    "specversion",
    "id",
    "source",
    "type",
    "datacontenttype",
    "dataschema",
    "subject",
    "time",
)
#: The text after the last ``"data":`` that follows ``{`` or ``,``, up to the final brace.
#: A ``,"`` or ``{"`` never occurs inside a JSON string (a quote there is escaped).
_DATA_MEMBER_TAIL: Final = (
    f'(?s)^.*[{{,]{JSON_WHITESPACE}*"data"{JSON_WHITESPACE}*:(.*)}}{JSON_WHITESPACE}*$'
)


def record_headers() -> Column:
    """The decoded record's Kafka headers; an empty array when it has none.

    Example:
        >>> decoded.select(F.size(record_headers()).alias("headers"))
    """
    return F.coalesce(F.col("kafka_headers"), F.array().cast(KAFKA_HEADERS_TYPE))


def header(name: str, value: Column) -> Column:
    """One Kafka header as the struct Spark's Kafka sink takes (``value`` as binary).

    Example:
        >>> F.array(header("origin", F.encode(F.lit("eu"), "UTF-8")))
    """
    return F.struct(F.lit(name).alias("key"), value.cast("binary").alias("value"))


def header_text(name: str) -> Column:
    """First header called ``name`` of the decoded record as a string; null when absent.

    Example:
        >>> decoded.select(header_text("origin").alias("origin"))
    """
    first = F.try_element_at(F.filter(record_headers(), lambda h: h["key"] == name), F.lit(1))
    return first["value"].cast("string")


def other_headers() -> Column:
    """The record's headers that do not carry the event (neither ``ce_*`` nor
    content-type), in their order, duplicates included."""
    return F.filter(
        record_headers(),
        lambda h: ~h["key"].startswith(CE_PREFIX) & (h["key"] != CONTENT_TYPE_HEADER),
    )


def event_time_text() -> Column:
    """The ``time`` attribute as sent: the decoder's ``time`` column is a parsed
    timestamp, which would lose the UTC offset and digits beyond microseconds.

    Example:
        >>> decoded.select(event_time_text().alias("time_text"))
    """
    structured = F.expr(
        "try_variant_get(try_parse_json(cast(kafka_value as string)), '$.time', 'string')"
    )
    return F.when(F.col("content_mode") == CONTENT_MODE_STRUCTURED, structured).otherwise(
        header_text(f"{CE_PREFIX}time")
    )


def attribute_text(name: str) -> Column:
    """An attribute or extension of a decoded row as text; null when the event lacks it.

    Example:
        >>> decoded.select(attribute_text("partitionkey"), attribute_text("subject"))
    """
    if name == "time":
        return event_time_text()
    if name in REQUIRED_ATTRIBUTES + OPTIONAL_ATTRIBUTES:
        return F.col(name)
    return F.try_element_at(F.col("extensions"), F.lit(name))


def _media_base(media_type: Column) -> Column:
    return F.lower(F.trim(F.split(media_type, ";").getItem(0)))


def is_json_media_type(media_type: Column) -> Column:
    """The JSON format's rule: the data is JSON when datacontenttype is JSON or absent."""
    base = _media_base(media_type)
    return F.coalesce(
        media_type.isNull() | base.isin("application/json", "text/json") | base.endswith("+json"),
        F.lit(False),
    )


def is_text_media_type(media_type: Column) -> Column:
    """Media types whose data is text: ``text/*`` (not JSON) and XML."""
    base = _media_base(media_type)
    return F.coalesce(
        (base.startswith("text/") | (base == "application/xml") | base.endswith("+xml"))
        & ~is_json_media_type(media_type),
        F.lit(False),
    )


def _with_structured(staged: DataFrame) -> DataFrame:
    """Adds ``_enc_value``/``_enc_headers``: the JSON-format record of a binary event."""
    attributes = F.map_from_entries(
        F.filter(
            F.array(
                *[
                    F.struct(
                        F.lit(name).alias("k"),
                        (F.col("_enc_time") if name == "time" else F.col(name)).alias("v"),
                    )
                    for name in _MEMBER_ATTRIBUTES
                ]
            ),
            lambda e: e["v"].isNotNull(),
        )
    )
    extensions = F.coalesce(F.col("extensions"), F.create_map().cast("map<string,string>"))
    staged = staged.withColumns(
        {
            "_enc_members": F.to_json(F.map_concat(attributes, extensions)),
            "_enc_text": F.col("data").cast("string"),
            "_enc_string": F.to_json(F.create_map(F.lit("data"), F.col("data").cast("string"))),
        }
    )
    utf8 = F.coalesce(F.is_valid_utf8(F.col("_enc_text")), F.lit(False))
    media_type = F.col("datacontenttype")
    verbatim_json = (
        is_json_media_type(media_type)
        & utf8
        & ~F.col("_enc_text").rlike(f"^{JSON_WHITESPACE}")
        & single_json_value(F.col("_enc_text"))
    )
    data_member = (
        F.when(F.col("data").isNull(), F.lit(""))
        .when(verbatim_json, F.concat(F.lit(',"data":'), F.col("_enc_text")))
        # {"data":"..."} without its braces
        .when(
            is_text_media_type(media_type) & utf8,
            F.concat(F.lit(","), F.expr("substring(_enc_string, 2, length(_enc_string) - 2)")),
        )
        .otherwise(F.concat(F.lit(',"data_base64":"'), F.base64(F.col("data")), F.lit('"')))
    )
    # The members object without its closing brace, then the data member, then the brace.
    body = F.concat(
        F.expr("substring(_enc_members, 1, length(_enc_members) - 1)"), data_member, F.lit("}")
    )
    content_type = header(CONTENT_TYPE_HEADER, F.encode(F.lit(STRUCTURED_CONTENT_TYPE), "UTF-8"))
    return staged.withColumns(
        {
            "_enc_value": F.encode(body, "UTF-8"),
            "_enc_headers": F.concat(F.array(content_type), other_headers()),
        }
    )


def _untyped_json_data() -> Column:
    """A structured event whose data is its JSON ``data`` member and that has no
    datacontenttype: the JSON format (3.1.2) says such data is application/json. The
    decoder tells ``data`` from ``data_base64`` (``data_is_json``)."""
    return F.coalesce(
        (F.col("content_mode") == CONTENT_MODE_STRUCTURED)
        & F.col("datacontenttype").isNull()
        & F.col("data_is_json"),
        F.lit(False),
    )


def _with_binary(staged: DataFrame) -> DataFrame:
    """Adds ``_enc_value``/``_enc_headers``: the binary-mode record of a structured event."""
    staged = staged.withColumn(
        "_enc_candidate",
        F.regexp_replace(
            F.regexp_extract(F.col("kafka_value").cast("string"), _DATA_MEMBER_TAIL, 1),
            f"^{JSON_WHITESPACE}+",
            "",
        ),
    )
    candidate = F.col("_enc_candidate")
    # Verbatim only when the cut-out text is one JSON value equal to the data member. The
    # decoder renders JSON data compact with members sorted, keeping number text; both
    # sides are rendered by Spark's parser here so that only the JSON value counts.
    verbatim = F.coalesce(
        (candidate != "")
        & single_json_value(candidate)
        & (
            F.to_json(F.try_parse_json(candidate))
            == F.to_json(F.try_parse_json(F.col("data").cast("string")))
        ),
        F.lit(False),
    )
    attribute_headers = F.filter(
        F.array(
            *[
                header(
                    f"{CE_PREFIX}{name}",
                    F.encode(F.col("_enc_time") if name == "time" else F.col(name), "UTF-8"),
                )
                for name in _HEADER_ATTRIBUTES
            ]
        ),
        lambda h: h["value"].isNotNull(),
    )
    extension_headers = F.transform(
        F.array_sort(
            F.map_keys(F.coalesce(F.col("extensions"), F.create_map().cast("map<string,string>")))
        ),
        lambda k: F.struct(
            F.concat(F.lit(CE_PREFIX), k).alias("key"),
            F.encode(F.col("extensions")[k], "UTF-8").alias("value"),
        ),
    )
    # JSON data without datacontenttype is application/json (JSON format 3.1.2); a binary
    # record without content-type would leave its data untyped.
    media_type = F.coalesce(
        F.col("datacontenttype"),
        F.when(_untyped_json_data(), F.lit(JSON_MEDIA_TYPE)),
    )
    content_type = F.when(
        media_type.isNotNull(),
        F.array(header(CONTENT_TYPE_HEADER, F.encode(media_type, "UTF-8"))),
    ).otherwise(F.array().cast(KAFKA_HEADERS_TYPE))
    return staged.withColumns(
        {
            "_enc_value": F.when(verbatim, F.encode(candidate, "UTF-8")).otherwise(F.col("data")),
            "_enc_headers": F.concat(
                attribute_headers, extension_headers, content_type, other_headers()
            ),
        }
    )


def encode_as(decoded: DataFrame, mode: ContentMode) -> DataFrame:
    """Add ``encoded_value`` and ``encoded_headers``: each valid event of ``decoded`` as a
    Kafka record in ``mode``. Records already in that mode keep value and headers as-is.

    Rows with a ``reject_reason`` (not valid events) are left as they are; the record
    key is never touched.

    Example:
        >>> valid = decode_records(raw).where("reject_reason IS NULL")
        >>> valid.transform(encode_as, "binary").select("kafka_key", "encoded_value")
    """
    if mode not in (CONTENT_MODE_BINARY, CONTENT_MODE_STRUCTURED):
        raise ValueError(f"content mode must be 'binary' or 'structured', not {mode!r}")
    staged = decoded.withColumn("_enc_time", event_time_text())
    if mode == CONTENT_MODE_STRUCTURED:
        staged = _with_structured(staged)
        convert = F.col("content_mode") == CONTENT_MODE_BINARY
    else:
        staged = _with_binary(staged)
        convert = F.col("content_mode") == CONTENT_MODE_STRUCTURED
    # Rows that are not valid events have nothing to encode: they stay as they are.
    convert = convert & F.col("reject_reason").isNull()
    helpers = [c for c in staged.columns if c.startswith("_enc_")]
    return staged.withColumns(
        {
            ENCODED_VALUE: F.when(convert, F.col("_enc_value")).otherwise(F.col("kafka_value")),
            ENCODED_HEADERS: F.when(convert, F.col("_enc_headers")).otherwise(record_headers()),
        }
    ).drop(*helpers)
