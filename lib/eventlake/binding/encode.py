"""The binding in the sender's direction: rows of :func:`eventlake.binding.decode.decode_records`
encoded back into Kafka records, in binary or structured (JSON format) content mode,
with the Key Mapper's key and a republish hop's header transforms and routing trail.

The rules run on the JVM, beside the decoder: ``lib/jvm``'s
``io.eventlake.cloudevents.KafkaEncoder``, registered in every eventlake SparkSession as
the SQL function ``cloudevents_to_kafka(event, value, headers, mode[, key_attribute[,
hop]])`` (a Catalyst expression, as spark-avro's ``to_avro`` is beside ``from_avro``).
It is exact, so that converting an event between modes never changes the event:

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

A :class:`Hop` then applies, in this order: a header copied into an extension the event
lacks (as the JSON object's first member; a JSON null member counts as present), headers
dropped by name, attributes copied into headers, literal headers, and the routing
trail's entry (the record's topic, partition, offset and timestamp, the target and the
time of the hop, as Spark's ``to_json`` of that struct writes it).

Example:
    >>> valid = decode_records(kafka_rows).where("reject_reason IS NULL")
    >>> out = valid.transform(encode_as, "structured")  # + encoded_value, encoded_headers
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Final, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    CONTEXT_ATTRIBUTES,
)
from eventlake.warehouse.schemas import KAFKA_HEADERS_TYPE

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
#: Copy every record as it is (only the Key Mapper and the hop run).
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
#: The types of those columns that are not strings (every attribute but time is one).
_NON_STRING_TYPES: Final = {"data": "binary", "data_is_json": "boolean"}
#: The decoded columns that place a record, for the trail.
_PLACE_COLUMNS: Final = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")


@dataclass(frozen=True, kw_only=True)
class Hop:
    """What a republish hop does to every record besides encoding it: header transforms
    and the routing trail (see the module docstring for their order). The options are
    trusted here: :class:`eventlake.republish.request.RepublishRequest` checks them.

    Example:
        >>> Hop(insert_headers=(("team", "payments"),), trail_header="trail", target="b")
    """

    #: (header, extension): the first such header becomes the extension if it is new.
    header_attributes: tuple[tuple[str, str], ...] = ()
    #: Header names removed (every occurrence).
    drop_headers: tuple[str, ...] = ()
    #: (attribute, header): the attribute's text appended as a header when present.
    attribute_headers: tuple[tuple[str, str], ...] = ()
    #: (name, text): headers appended to every record.
    insert_headers: tuple[tuple[str, str], ...] = ()
    #: The routing trail's header; None for no trail.
    trail_header: str | None = None
    #: The target topic, as the trail's entries name it.
    target: str | None = None

    def is_empty(self) -> bool:
        """True when the hop changes nothing."""
        return self.hop() == Hop()

    def hop(self) -> Hop:
        """Just the hop's fields, of a subclass that adds others (a republish request).

        Example:
            >>> Hop(trail_header="trail").hop() == Hop(trail_header="trail")
            True
        """
        return Hop(**{each.name: getattr(self, each.name) for each in fields(Hop)})

    def to_json(self) -> str:
        """The hop as the JVM encoder takes it (``Hop.fromJson``, lib/jvm).

        Example:
            >>> Hop(drop_headers=("debug",)).to_json()[:30]
            '{"header_attributes": [], "dro'
        """
        return json.dumps(
            {
                "header_attributes": [list(pair) for pair in self.header_attributes],
                "drop_headers": list(self.drop_headers),
                "attribute_headers": [list(pair) for pair in self.attribute_headers],
                "insert_headers": [list(pair) for pair in self.insert_headers],
                "trail_header": self.trail_header,
                "target": self.target,
            }
        )


def cloudevents_to_kafka(
    mode: TargetMode, key_attribute: str | None = None, hop: Hop | None = None
) -> Column:
    """Each row of :func:`~eventlake.binding.decode.decode_records` as the Kafka record to write:
    a struct of ``value``, ``headers`` and ``key`` (the ``key_attribute``'s text, null
    without one or when the event lacks it), after the ``hop``'s transforms and trail.

    The rules run on the JVM (``io.eventlake.cloudevents.KafkaEncoder``): no per-record
    Python.

    Example:
        >>> decoded.select(cloudevents_to_kafka("binary", "partitionkey").alias("out"))
    """
    if mode not in (CONTENT_MODE_BINARY, CONTENT_MODE_STRUCTURED, KEEP_MODE):
        raise ValueError(f"content mode must be 'binary', 'structured' or 'keep', not {mode!r}")
    hop = hop or Hop()
    if hop.trail_header is not None and not hop.target:
        raise ValueError("a hop with a routing trail needs its target topic")
    unread = _unread_when_kept(key_attribute, hop) if mode == KEEP_MODE else set()
    fields = [
        F.lit(None).cast(_NON_STRING_TYPES.get(name, "string")).alias(name)
        if name in unread
        else F.col(name)
        for name in _EVENT_COLUMNS
    ]
    if hop.trail_header is not None:
        # The trail's entry: where the record was read, and when this hop ran.
        fields += [F.col(name) for name in _PLACE_COLUMNS]
        fields.append(F.current_timestamp().alias("hop_at"))
    return F.call_function(
        ENCODER_FUNCTION,
        F.struct(*fields),
        F.col("kafka_value"),
        F.col("kafka_headers"),
        F.lit(mode),
        F.lit(key_attribute).cast("string"),
        F.lit(None if hop.is_empty() else hop.to_json()).cast("string"),
    )


def _unread_when_kept(key_attribute: str | None, hop: Hop) -> set[str]:
    """The decoded columns the encoder does not read for a record kept in its mode: it
    is written with its value as read, so neither the data (~1 KB a record, copied into
    the encoder's input otherwise) nor the attributes that neither the Key Mapper nor the
    hop names (each turned into a Java string otherwise).

    Example:
        >>> sorted(_unread_when_kept("subject", Hop()))[:3]
        ['data', 'data_is_json', 'datacontenttype']
    """
    named = {
        key_attribute,
        *(attribute for attribute, _ in hop.attribute_headers),
        *(extension for _, extension in hop.header_attributes),
    }
    attributes = {name for name in CONTEXT_ATTRIBUTES if name not in named}
    return {"data", "data_is_json"} | (attributes & set(_EVENT_COLUMNS))


def encode_as(
    decoded: DataFrame,
    mode: TargetMode,
    *,
    key_attribute: str | None = None,
    hop: Hop | None = None,
) -> DataFrame:
    """Add ``encoded_value`` and ``encoded_headers``: each valid event of ``decoded`` as a
    Kafka record in ``mode`` (``keep``: as it is), then the ``hop``'s header transforms
    and trail. Records already in that mode keep value and headers as-is. With
    ``key_attribute``, also add ``mapped_key``: the Key Mapper's key (null when the event
    lacks the attribute).

    Rows with a ``reject_reason`` (not valid events) are left as they are, but for the
    hop's literal headers and trail; the record key is never touched.

    Example:
        >>> valid = decode_records(raw).where("reject_reason IS NULL")
        >>> valid.transform(encode_as, "binary").select("kafka_key", "encoded_value")
    """
    if mode == KEEP_MODE and key_attribute is None and (hop is None or hop.is_empty()):
        # Nothing to do on the JVM: the record as read.
        empty = F.array().cast(KAFKA_HEADERS_TYPE)
        return decoded.withColumns(
            {
                ENCODED_VALUE: F.col("kafka_value"),
                ENCODED_HEADERS: F.coalesce(F.col("kafka_headers"), empty),
            }
        )
    encoded = decoded.withColumn("_encoded", cloudevents_to_kafka(mode, key_attribute, hop))
    # A projection of its own: the fields below are picked from it, and Spark does not
    # merge the two when that would run the encoder once per field.
    columns = {
        ENCODED_VALUE: F.col("_encoded.value"),
        ENCODED_HEADERS: F.col("_encoded.headers"),
    }
    if key_attribute is not None:
        columns[MAPPED_KEY] = F.col("_encoded.key")
    return encoded.withColumns(columns).drop("_encoded")
