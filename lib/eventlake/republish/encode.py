"""The binding in the sender's direction: rows of :func:`eventlake.binding.decode_records`
encoded back into Kafka records, in binary or structured (JSON format) content mode,
with the Key Mapper's key.

The rules run on the JVM, beside the decoder: ``lib/jvm``'s
``io.eventlake.cloudevents.KafkaEncoder``, registered in every eventlake SparkSession as
the SQL function ``cloudevents_to_kafka(event, value, headers, mode[, key_attribute])``
(a Catalyst expression, as spark-avro's ``to_avro`` is beside ``from_avro``). It is
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

* structured -> binary: ``ce_`` headers for the attributes and extensions (these
  sorted by name), ``content-type`` for ``datacontenttype``, the data bytes as the
  value. An event with JSON data in ``data`` and no datacontenttype gets
  ``content-type: application/json``, which is what the JSON format says its data is
  (3.1.2); so a binary event without content-type whose value is one JSON value comes
  back from structured mode with that header, the one change a round trip makes. JSON
  data is the ``data`` member's text cut out of the record verbatim (located by the
  JSON parser), so binary -> structured -> binary gives back the same bytes. Extension
  values that were JSON numbers or booleans become their JSON text (binary mode has
  only strings).

Headers that are not CloudEvents headers (neither ``ce_*`` nor ``content-type``) are
carried over in their order, duplicates included. A record already in the wanted mode,
and a row that is not a valid event, is copied byte for byte.

Example:
    >>> valid = decode_records(kafka_rows).where("reject_reason IS NULL")
    >>> out = valid.transform(encode_as, "structured")  # + encoded_value, encoded_headers
"""

from __future__ import annotations

from typing import Final, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.binding import (
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    CONTEXT_ATTRIBUTES,
)
from eventlake.tables import KAFKA_HEADERS_TYPE

#: content-type of the structured records written here (the binding's example, 3.3.1).
STRUCTURED_CONTENT_TYPE: Final = "application/cloudevents+json; charset=UTF-8"
#: content-type of binary records whose structured event had JSON data and no
#: datacontenttype (JSON format 3.1.2).
JSON_MEDIA_TYPE: Final = "application/json"
ENCODED_VALUE: Final = "encoded_value"
ENCODED_HEADERS: Final = "encoded_headers"
#: The Key Mapper's key (the attribute's UTF-8 text; null when the event lacks it).
MAPPED_KEY: Final = "mapped_key"

#: The JVM side of the sender (lib/jvm): one Catalyst expression, one pass per record.
ENCODER_FUNCTION: Final = "cloudevents_to_kafka"
#: Copy every record as it is (only the Key Mapper runs).
KEEP_MODE: Final = "keep"

ContentMode = Literal["binary", "structured"]
TargetMode = Literal["binary", "structured", "keep"]

#: The decoded columns the encoder reads (``time`` it reads from the record: the
#: decoded timestamp lost the original text).
_EVENT_COLUMNS: Final = (
    *(name for name in CONTEXT_ATTRIBUTES if name != "time"),
    "data",
    "data_is_json",
    "extensions",
    "content_mode",
    "reject_reason",
)


def cloudevents_to_kafka(mode: TargetMode, key_attribute: str | None = None) -> Column:
    """Each row of :func:`~eventlake.binding.decode_records` as the Kafka record to write:
    a struct of ``value``, ``headers`` and ``key`` (the ``key_attribute``'s text, null
    without one or when the event lacks it).

    The rules run on the JVM (``io.eventlake.cloudevents.KafkaEncoder``): no per-record
    Python.

    Example:
        >>> decoded.select(cloudevents_to_kafka("binary", "partitionkey").alias("out"))
    """
    if mode not in (CONTENT_MODE_BINARY, CONTENT_MODE_STRUCTURED, KEEP_MODE):
        raise ValueError(f"content mode must be 'binary', 'structured' or 'keep', not {mode!r}")
    event = F.struct(*[F.col(name) for name in _EVENT_COLUMNS])
    return F.call_function(
        ENCODER_FUNCTION,
        event,
        F.col("kafka_value"),
        F.col("kafka_headers"),
        F.lit(mode),
        F.lit(key_attribute).cast("string"),
    )


def encode_as(
    decoded: DataFrame, mode: TargetMode, *, key_attribute: str | None = None
) -> DataFrame:
    """Add ``encoded_value`` and ``encoded_headers``: each valid event of ``decoded`` as a
    Kafka record in ``mode`` (``keep``: as it is). Records already in that mode keep
    value and headers as-is. With ``key_attribute``, also add ``mapped_key``: the Key
    Mapper's key (null when the event lacks the attribute).

    Rows with a ``reject_reason`` (not valid events) are left as they are; the record
    key is never touched.

    Example:
        >>> valid = decode_records(raw).where("reject_reason IS NULL")
        >>> valid.transform(encode_as, "binary").select("kafka_key", "encoded_value")
    """
    encoded = decoded.withColumn("_encoded", cloudevents_to_kafka(mode, key_attribute))
    # A projection of its own: the fields below are picked from it, and Spark does not
    # merge the two when that would run the encoder once per field.
    columns = {
        ENCODED_VALUE: F.col("_encoded.value"),
        ENCODED_HEADERS: F.col("_encoded.headers"),
    }
    if key_attribute is not None:
        columns[MAPPED_KEY] = F.col("_encoded.key")
    return encoded.withColumns(columns).drop("_encoded")


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


def attribute_text(name: str) -> Column:
    """An attribute or extension of a decoded row as text; null when the event lacks it.

    ``time`` is its text as sent, which the encoder reads from the record (the decoded
    ``time`` column is a timestamp: it lost the UTC offset and digits beyond
    microseconds).

    Example:
        >>> decoded.select(attribute_text("partitionkey"), attribute_text("subject"))
    """
    if name == "time":
        return cloudevents_to_kafka(KEEP_MODE, name)["key"].cast("string")
    if name in CONTEXT_ATTRIBUTES:
        return F.col(name)
    return F.try_element_at(F.col("extensions"), F.lit(name))
