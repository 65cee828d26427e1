"""What happens to each source record, as Spark expressions: :func:`plan_republish`
gives every decoded record its new key, value and headers, or the reason it is not
republished; :func:`planned_records` and :func:`planned_rejects` split the plan.

* the key comes from the Key Mapper (binding 3.1): ``keep`` (default: the record key
  as-is), ``partitionkey`` (the Partitioning extension), or ``attribute:<name>`` (any
  attribute or extension, e.g. ``attribute:subject``). When the event lacks the
  attribute, ``on_missing`` decides: ``keep-key`` (default: the record keeps its old
  key, so nothing is lost or reordered), ``null-key``, or ``reject``;
* the event is untouched: with ``to_mode="keep"`` the value and every header (order and
  duplicates included) are copied byte for byte. ``binary``/``structured`` convert
  events exactly; events already in that mode are copied. Conversion and Key Mapper are
  the JVM encoder's (:mod:`eventlake.republish.encode`);
* header transforms can never touch the event's own headers (``ce_*`` and
  ``content-type``): drop headers by name, copy an attribute into a header, insert a
  literal header, and (to structured only) copy a header into an extension attribute
  the event does not have yet. They run in that order, after the mode conversion;
* a routing-trail header (``eventlake-trail`` by default, one JSON entry appended per
  hop: source topic, partition, offset, record timestamp, target, time of the hop), so
  a record's path across topics reads back with :func:`trail_entries`.

A record is not republished (:class:`RepublishReason`, or the decoder's reason) when it
is not a valid CloudEvent and the mapper or the conversion needs an event, lacks the key
attribute with ``on_missing="reject"``, is a binary tombstone that would become a
structured update, a structured event without data that would become a binary
tombstone, or has no key for a compacted target (the broker would refuse it).

Example:
    >>> plan = plan_republish(decode_records(raw), RepublishRequest(source="a", target="b"))
    >>> planned_records(plan).write.format("kafka").option("topic", "b").save()
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, cast

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.binding import (
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    DETAIL_MAX_CHARS,
    RejectReason,
    to_rejects,
)
from eventlake.republish.encode import (
    ENCODED_HEADERS,
    ENCODED_VALUE,
    MAPPED_KEY,
    TargetMode,
    attribute_text,
    encode_as,
    header,
    header_text,
    record_headers,
)
from eventlake.republish.request import DEFAULT_TRAIL_HEADER, KEEP, RepublishRequest
from eventlake.tables import KAFKA_HEADERS_TYPE

#: Spark schema of one routing-trail entry (the header value is this as JSON).
TRAIL_ENTRY_SCHEMA: Final = (
    "topic string, partition int, offset long, timestamp timestamp, target string, at timestamp"
)


class RepublishReason(StrEnum):
    """Reasons, beside the decoder's, why a record is not republished."""

    MISSING_KEY_ATTRIBUTE = "missing_key_attribute"
    TOMBSTONE_NOT_CONVERTIBLE = "tombstone_not_convertible"
    NO_DATA_NOT_CONVERTIBLE = "no_data_not_convertible"
    NULL_KEY_ON_COMPACTED_TOPIC = "null_key_on_compacted_topic"


#: Every reason a record is not republished: the decoder's, then republish's own.
REPUBLISH_REASONS: Final = (*RejectReason, *RepublishReason)


def trail_entries(headers: Column, name: str = DEFAULT_TRAIL_HEADER) -> Column:
    """The routing trail of a record, oldest hop first, as an array of structs.

    Example:
        >>> target_rows.select(trail_entries(F.col("headers")).alias("trail"))
    """
    return F.transform(
        F.filter(headers, lambda h: h["key"] == name),
        lambda h: F.from_json(h["value"].cast("string"), TRAIL_ENTRY_SCHEMA),
    )


def _when_all(pairs: list[tuple[Column, Column]], default: Column) -> Column:
    """First matching condition's value (a chained CASE WHEN)."""
    result = default
    for condition, value in reversed(pairs):
        result = F.when(condition, value).otherwise(result)
    return result


def _insert_member(value: Column, name: str, text: Column) -> Column:
    """``value`` (a JSON object's bytes) with ``"name":"text",`` as its first member."""
    member = F.to_json(F.create_map(F.lit(name), text))  # {"name":"text"}
    json_text = value.cast("string")
    brace = F.instr(json_text, "{")
    return F.encode(
        F.concat(
            json_text.substr(F.lit(1), brace),
            member.substr(F.lit(2), F.length(member) - 2),
            F.lit(","),
            json_text.substr(brace + 1, F.lit(1 << 30)),
        ),
        "UTF-8",
    )


def _json_member_present(name: str) -> Column:
    """Whether a structured record's JSON object has the member, even as null."""
    members = F.expr(
        "try_variant_get(try_parse_json(cast(kafka_value as string)), '$', 'map<string,variant>')"
    )
    return F.coalesce(F.try_element_at(members, F.lit(name)).isNotNull(), F.lit(False))


def plan_republish(
    decoded: DataFrame, request: RepublishRequest, *, target_compacted: bool = False
) -> DataFrame:
    """What happens to each decoded source record: adds ``out_key``, ``out_value``,
    ``out_headers`` and ``republish_reason``/``republish_detail`` (null: republish).

    Example:
        >>> plan = plan_republish(decode_records(raw), RepublishRequest(source="a", target="b"))
        >>> plan.groupBy("republish_reason").count().show()
    """
    valid = F.col("reject_reason").isNull()
    binary = F.col("content_mode") == CONTENT_MODE_BINARY
    structured = F.col("content_mode") == CONTENT_MODE_STRUCTURED
    staged = decoded

    # Content mode and Key Mapper in one pass of the JVM encoder: value and headers as-is
    # unless the event changes mode; the key from the attribute (the event itself is
    # never changed for the key).
    attribute = request.key_attribute
    if request.to_mode == KEEP and attribute is None:
        staged = staged.withColumns(
            {
                ENCODED_VALUE: F.col("kafka_value"),
                ENCODED_HEADERS: record_headers(),
            }
        )
    else:
        staged = encode_as(staged, cast(TargetMode, request.to_mode), key_attribute=attribute)
    if attribute is None:
        key: Column = F.col("kafka_key")
        missing: Column = F.lit(False)
    else:
        mapped = F.col(MAPPED_KEY)
        missing = valid & mapped.isNull()
        fallback = (
            F.lit(None).cast("binary") if request.on_missing == "null-key" else F.col("kafka_key")
        )
        key = F.when(mapped.isNotNull(), mapped).otherwise(fallback)
    value = F.col(ENCODED_VALUE)
    for header_name, extension in request.header_attributes:
        text = header_text(header_name)
        add = (
            valid
            & text.isNotNull()
            & F.coalesce(F.is_valid_utf8(text), F.lit(False))
            & attribute_text(extension).isNull()
            # A JSON null member is no attribute, but a second member would be a duplicate.
            & ~(structured & _json_member_present(extension))
        )
        value = F.when(add, _insert_member(value, extension, text)).otherwise(value)

    headers = F.col(ENCODED_HEADERS)
    if request.drop_headers:
        dropped = list(request.drop_headers)
        headers = F.filter(headers, lambda h: ~h["key"].isin(dropped))
    for attribute_name, header_name in request.attribute_headers:
        text = attribute_text(attribute_name)
        headers = F.concat(
            headers,
            F.when(
                valid & text.isNotNull(),
                F.array(header(header_name, F.encode(text, "UTF-8"))),
            ).otherwise(F.array().cast(KAFKA_HEADERS_TYPE)),
        )
    if request.insert_headers:
        headers = F.concat(
            headers,
            F.array(
                *[
                    header(name, F.encode(F.lit(literal), "UTF-8"))
                    for name, literal in request.insert_headers
                ]
            ),
        )
    if request.trail_header is not None:
        entry = F.to_json(
            F.struct(
                F.col("kafka_topic").alias("topic"),
                F.col("kafka_partition").alias("partition"),
                F.col("kafka_offset").alias("offset"),
                F.col("kafka_timestamp").alias("timestamp"),
                F.lit(request.target).alias("target"),
                F.current_timestamp().alias("at"),
            )
        )
        headers = F.concat(headers, F.array(header(request.trail_header, F.encode(entry, "UTF-8"))))

    hop = f"republish {request.source} -> {request.target}: "
    rules: list[tuple[Column, str | Column, str | Column]] = []
    if request.needs_event:
        rules.append((~valid, F.col("reject_reason"), F.col("reject_detail")))
    if attribute is not None and request.on_missing == "reject":
        rules.append(
            (
                missing,
                RepublishReason.MISSING_KEY_ATTRIBUTE.value,
                f"{hop}the event has no {attribute!r} attribute for the key mapper "
                f"{request.key_mapper!r} (--on-missing keep-key or null-key republishes it)",
            )
        )
    if request.to_mode == CONTENT_MODE_STRUCTURED and not request.allow_tombstone_to_structured:
        rules.append(
            (
                valid & binary & F.col("kafka_value").isNull(),
                RepublishReason.TOMBSTONE_NOT_CONVERTIBLE.value,
                f"{hop}a binary event without data is a tombstone; as a structured record it "
                "would be an update. Pass --allow-tombstone-to-structured to convert it anyway",
            )
        )
    if request.to_mode == CONTENT_MODE_BINARY and not request.allow_no_data_to_binary:
        rules.append(
            (
                valid & structured & F.col("data").isNull(),
                RepublishReason.NO_DATA_NOT_CONVERTIBLE.value,
                f"{hop}a structured event without data would become a binary record without "
                "value, a tombstone on a compacted topic. Pass --allow-no-data-to-binary to "
                "convert it anyway",
            )
        )
    if target_compacted:
        rules.append(
            (
                F.col("_out_key").isNull(),
                RepublishReason.NULL_KEY_ON_COMPACTED_TOPIC.value,
                f"{hop}the target topic is compacted and the broker refuses records without key",
            )
        )
    staged = staged.withColumn("_out_key", key)
    reason = _when_all(
        [(cond, F.lit(code) if isinstance(code, str) else code) for cond, code, _ in rules],
        F.lit(None).cast("string"),
    )
    detail = _when_all(
        [(cond, F.lit(text) if isinstance(text, str) else text) for cond, _, text in rules],
        F.lit(None).cast("string"),
    )
    return staged.withColumns(
        {
            "out_key": F.col("_out_key"),
            "out_value": value,
            "out_headers": headers,
            "republish_reason": reason,
            "republish_detail": F.substring(detail, 1, DETAIL_MAX_CHARS),
        }
    ).drop("_out_key", ENCODED_VALUE, ENCODED_HEADERS, MAPPED_KEY)


def planned_rejects(planned: DataFrame, target: str) -> DataFrame:
    """Rows of :func:`plan_republish` not republished, in rejects-table shape, with
    ``rejected_by`` = ``republish:<target>``."""
    return to_rejects(
        planned.withColumns(
            {
                "reject_reason": F.col("republish_reason"),
                "reject_detail": F.col("republish_detail"),
            }
        ),
        rejected_by=f"republish:{target}",
    )


def planned_records(planned: DataFrame) -> DataFrame:
    """Rows of :func:`plan_republish` to write, as Spark Kafka sink rows (no partition:
    the producer's murmur2 partitioner places each key like any Java client)."""
    return planned.where(F.col("republish_reason").isNull()).select(
        F.col("out_key").alias("key"),
        F.col("out_value").alias("value"),
        F.col("out_headers").alias("headers"),
    )
