"""The CloudEvents Kafka protocol binding (v1.0.3): its reason codes, the tables' column
lists and the Python side of the decoder.

The rules themselves live on the JVM, in one place: ``lib/jvm``'s
``io.eventlake.cloudevents.KafkaBinding``, registered in every eventlake SparkSession as
the SQL function ``cloudevents_from_kafka(value, headers)`` (a Catalyst expression, as
spark-avro's ``from_avro`` is). In short:

* content mode (3): a ``content-type`` header starting with ``application/cloudevents``
  means structured mode, anything else binary mode. ce_ headers on a structured record
  do not make it binary (3.3.3).
* structured mode (3.3): only the JSON event format (1.4) is decoded; another format or
  the batch media type is a reject (the raw record stays in the rejects table).
* binary mode (3.2): attributes from ``ce_`` headers with UTF-8 keys and values,
  ``content-type`` is ``datacontenttype``, the record value is the data as-is; no value
  means an event with no data (a tombstone on a compacted topic, 3.2.2).
* validation: required attributes present and non-empty, optional ones non-empty when
  present, specversion 1.0, RFC 3339 time within years 0001-9999, attribute names of
  lowercase letters and digits, no control characters, noncharacters or unpaired
  surrogates in strings, Integer extensions whole and 32-bit. Nothing is defaulted.

One pass per record on the JVM: no per-record Python. Every input row gets either a
null ``reject_reason`` (a valid event) or one of the stable codes in
:class:`RejectReason`.

Example:
    >>> raw = spark.read.format("kafka").option("includeHeaders", "true")...load()
    >>> decoded = decode_records(raw)
    >>> events, rejects = to_events(decoded), to_rejects(decoded)
"""

from __future__ import annotations

from enum import StrEnum
from functools import partial
from typing import Final

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from eventlake.binding.reason_counts import observe_reasons, optimizer_barrier
from eventlake.spark.columns import built_once
from eventlake.warehouse.names import INGEST_JOB
from eventlake.warehouse.schemas import EVENTS_SCHEMA, REJECTS_SCHEMA

CE_PREFIX: Final = "ce_"
CONTENT_TYPE_HEADER: Final = "content-type"
SPEC_VERSION: Final = "1.0"

REQUIRED_ATTRIBUTES: Final = ("id", "source", "specversion", "type")
OPTIONAL_ATTRIBUTES: Final = ("datacontenttype", "dataschema", "subject", "time")
CONTEXT_ATTRIBUTES: Final = REQUIRED_ATTRIBUTES + OPTIONAL_ATTRIBUTES
#: Members of a JSON-format event that carry the data rather than an attribute.
DATA_MEMBERS: Final = ("data", "data_base64")
#: The Partitioning extension, whose value the binding's Key Mapper puts in the record
#: key (Kafka binding 3.1).
PARTITIONKEY: Final = "partitionkey"

ATTRIBUTE_NAME_PATTERN: Final = "^[a-z0-9]+$"
#: Longest detail text stored with a reject (the decoder cuts it; republish's own
#: details too): hostile records can have huge names.
DETAIL_MAX_CHARS: Final = 500
#: The Kafka source's columns of a record the decoder reads and keeps (the rejects
#: table keeps each as ``kafka_<name>``).
KAFKA_RECORD_FIELDS: Final = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "key",
    "value",
    "headers",
)


CONTENT_MODE_BINARY: Final = "binary"
CONTENT_MODE_STRUCTURED: Final = "structured"


class RejectReason(StrEnum):
    """Stable, machine-readable reasons a Kafka record is not a valid CloudEvent, in the
    order the decoder checks them (the first that applies is the record's reason)."""

    PLAIN_TOMBSTONE = "plain_tombstone"
    UNSUPPORTED_BATCH_MODE = "unsupported_batch_mode"
    UNSUPPORTED_EVENT_FORMAT = "unsupported_event_format"
    INVALID_HEADER_ENCODING = "invalid_header_encoding"
    DUPLICATE_HEADER = "duplicate_header"
    MALFORMED_JSON = "malformed_json"
    INVALID_ATTRIBUTE_NAME = "invalid_attribute_name"
    INVALID_ATTRIBUTE_TYPE = "invalid_attribute_type"
    NOT_A_CLOUDEVENT = "not_a_cloudevent"
    MISSING_REQUIRED_ATTRIBUTE = "missing_required_attribute"
    EMPTY_REQUIRED_ATTRIBUTE = "empty_required_attribute"
    EMPTY_OPTIONAL_ATTRIBUTE = "empty_optional_attribute"
    INVALID_CHARACTERS = "invalid_characters"
    UNSUPPORTED_SPECVERSION = "unsupported_specversion"
    INVALID_TIME = "invalid_time"
    DATA_AND_DATA_BASE64 = "data_and_data_base64"
    INVALID_DATA_BASE64 = "invalid_data_base64"
    CONFLICTING_DATACONTENTTYPE = "conflicting_datacontenttype"


#: The events and rejects tables' columns, in order (the schemas:
#: :mod:`eventlake.warehouse.schemas`).
EVENT_COLUMNS: Final = tuple(EVENTS_SCHEMA.fieldNames())
REJECT_COLUMNS: Final = tuple(REJECTS_SCHEMA.fieldNames())

#: The JVM side of the binding (lib/jvm): one Catalyst expression, one pass per record.
DECODER_FUNCTION: Final = "cloudevents_from_kafka"


def cloudevents_from_kafka(
    value: Column, headers: Column, *, data_json: bool = True, data: bool = True
) -> Column:
    """The binding applied to one Kafka record: a struct of the context attributes,
    ``time``, ``data``, ``data_json``, ``data_is_json``, ``data_json_invalid``,
    ``extensions``, ``content_mode``, ``reject_reason`` and ``reject_detail`` (null
    reason for a valid event). With ``data_json=False`` the VARIANT is not built (null,
    never flagged): for a job that forwards events and does not store them (republish).
    With ``data=False`` neither is ``data`` (null), though it is checked as ever: for a
    job that needs each record's fate and attributes only (republish keeping the content
    mode, the rejects' pass).

    The rules run on the JVM (``io.eventlake.cloudevents.KafkaBinding``, registered by
    the session extension that :func:`eventlake.spark.session.build_spark_session` configures),
    as spark-avro's ``from_avro`` does for Avro: no per-record Python.

    Example:
        >>> raw.select(cloudevents_from_kafka(F.col("value"), F.col("headers")).alias("ce"))
    """
    if data_json and data:
        return F.call_function(DECODER_FUNCTION, value, headers)
    return F.call_function(DECODER_FUNCTION, value, headers, F.lit(data_json), F.lit(data))


#: Counted per batch, not a table column: the event's data is JSON by its media type
#: but does not parse, so ``data_json`` is null (the event lands with its bytes).
DATA_JSON_INVALID: Final = "data_json_invalid"

#: Columns taken from the decoder's struct. ``data_is_json`` and :data:`DATA_JSON_INVALID`
#: (decoded frames only, not table columns): data is the JSON text of a JSON-format
#: event's ``data`` member; data that should be JSON did not parse.
_DECODED_ATTRIBUTES: Final = (
    *CONTEXT_ATTRIBUTES,
    "data",
    "data_json",
    "data_is_json",
    DATA_JSON_INVALID,
    "extensions",
    "content_mode",
)


def decode_records(
    records: DataFrame,
    observation: Observation | None = None,
    *,
    data_json: bool = True,
    data: bool = True,
    barrier: bool = True,
) -> DataFrame:
    """Apply the binding to Kafka source rows (``includeHeaders=true``).

    The result keeps the raw columns and adds the event attributes (``data_json``: the
    data as a VARIANT when it is JSON; always null with ``data_json=False``, and ``data``
    too with ``data=False``: see :func:`cloudevents_from_kafka`), ``reject_reason`` and
    ``reject_detail``. Split it
    with :func:`to_events` and :func:`to_rejects`. With ``observation``, the first
    action over the result also counts its rows per reason
    (:func:`eventlake.binding.reason_counts.reason_counts` with :class:`RejectReason`) and the
    events
    whose JSON data did not parse (:func:`eventlake.binding.reason_counts.flag_counts` with
    :data:`DATA_JSON_INVALID`). ``barrier=False`` (without ``observation``) leaves out
    the node that keeps filters above the decoder: only for a caller that puts an
    observation of its own over the result before any filter, as republish does (each
    such node copies every row).

    Example:
        >>> decoded = decode_records(spark.read.format("kafka")...load())
        >>> decoded.groupBy("reject_reason").count().show()
    """
    # One projection computes the struct; the next only picks its fields (Spark does not
    # merge the two when that would evaluate the decoder once per field).
    decoded = records.select(
        *built_once(("decoder", data_json, data), partial(_decoding, data_json, data))
    )
    decoded = decoded.select(*built_once(("decoded",), _decoded_fields))
    # Behind an observation: a filter on reject_reason would otherwise be pushed below
    # the decoding projection and run the decoder a second time for every row.
    if observation is None:
        return optimizer_barrier(decoded) if barrier else decoded
    return observe_decoded(decoded, observation)


def _decoding(data_json: bool, data: bool) -> list[Column]:
    """The first projection of :func:`decode_records`: the decoder's struct and the raw
    columns."""
    decoder = cloudevents_from_kafka(
        F.col("value"), F.col("headers"), data_json=data_json, data=data
    )
    return [
        decoder.alias("_ce"),
        *[F.col(c) for c in KAFKA_RECORD_FIELDS],
    ]


def _decoded_fields() -> list[Column]:
    """The second projection of :func:`decode_records`: the struct's fields as columns."""
    return [
        *[F.col(f"_ce.{name}").alias(name) for name in _DECODED_ATTRIBUTES],
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").alias("kafka_key"),
        F.col("value").alias("kafka_value"),
        F.col("headers").alias("kafka_headers"),
        F.col("_ce.reject_reason").alias("reject_reason"),
        F.col("_ce.reject_detail").alias("reject_detail"),
        F.current_timestamp().alias("ingested_at"),
    ]


def observe_decoded(
    decoded: DataFrame, observation: Observation, extra_reasons: tuple[str, ...] = ()
) -> DataFrame:
    """``decoded`` unchanged, counting its rows per reason (:class:`RejectReason` and
    ``extra_reasons``, such as ingest's ``duplicate_event``) and its events whose JSON
    data did not parse, into ``observation`` during the first action over it.

    Example:
        >>> observe_decoded(mark_duplicates(decoded, landed, horizon), seen, ("duplicate_event",))
    """
    return observe_reasons(
        decoded,
        observation,
        "reject_reason",
        [*RejectReason, *extra_reasons],
        flags=(DATA_JSON_INVALID,),
    )


def to_events(decoded: DataFrame) -> DataFrame:
    """Rows of :func:`decode_records` that are valid CloudEvents, in events-table shape."""
    (valid,) = built_once(("valid",), lambda: [F.col("reject_reason").isNull()])
    return decoded.where(valid).select(*built_once(("events",), _event_columns))


def _event_columns() -> list[Column]:
    return [F.col(c) for c in EVENT_COLUMNS]


def to_rejects(decoded: DataFrame, rejected_by: str = INGEST_JOB) -> DataFrame:
    """Rows of :func:`decode_records` that are not valid CloudEvents, in rejects-table shape.

    ``rejected_by`` names the job that read the record: ingest and republish may both
    read (and reject) one record, and each of their reads must be accounted for once.

    Example:
        >>> to_rejects(decoded, "republish:orders").select("rejected_by").first()[0]
        'republish:orders'
    """
    renamed = {"reason": "reject_reason", "detail": "reject_detail"}
    return decoded.where(F.col("reject_reason").isNotNull()).select(
        *[
            F.lit(rejected_by).alias(c)
            if c == "rejected_by"
            else F.col(renamed[c]).alias(c)
            if c in renamed
            else F.col(c)
            for c in REJECT_COLUMNS
        ]
    )
