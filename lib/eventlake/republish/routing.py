"""What happens to each source record: :func:`route_records` gives every decoded record
its new key, value and headers (one call of the JVM encoder, :mod:`eventlake.binding.encode`)
or the reason it is not republished (Spark expressions); :func:`routed_records` and
:func:`routed_rejects` split the routed rows.

* the key comes from the Key Mapper (binding 3.1): ``keep`` (default: the record key
  as-is), ``partitionkey`` (the Partitioning extension), or ``attribute:<name>`` (any
  attribute or extension, e.g. ``attribute:subject``). When the event lacks the
  attribute, ``on_missing`` decides: ``keep-key`` (default: the record keeps its old
  key, so nothing is lost or reordered), ``null-key``, or ``reject``;
* the event is untouched: with ``to_mode="keep"`` the value and every header (order and
  duplicates included) are copied byte for byte. ``binary``/``structured`` convert
  events exactly; events already in that mode are copied;
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
    >>> routed = route_records(decode_records(raw), RepublishRequest(source="a", target="b"))
    >>> routed_records(routed).write.format("kafka").option("topic", "b").save()
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, cast

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    DETAIL_MAX_CHARS,
    RejectReason,
    decode_records,
    to_rejects,
)
from eventlake.binding.encode import (
    ENCODED_HEADERS,
    ENCODED_VALUE,
    KEEP_MODE,
    MAPPED_KEY,
    TargetMode,
    encode_as,
)
from eventlake.binding.reason_counts import observe_reasons
from eventlake.republish.request import DEFAULT_TRAIL_HEADER, RepublishRequest

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


def route_records(
    decoded: DataFrame, request: RepublishRequest, *, target_compacted: bool = False
) -> DataFrame:
    """What happens to each decoded source record: adds ``out_key``, ``out_value``,
    ``out_headers`` and ``republish_reason``/``republish_detail`` (null: republish).

    Example:
        >>> routed = route_records(decode_records(raw), RepublishRequest(source="a", target="b"))
        >>> routed.groupBy("republish_reason").count().show()
    """
    valid = F.col("reject_reason").isNull()
    binary = F.col("content_mode") == CONTENT_MODE_BINARY
    structured = F.col("content_mode") == CONTENT_MODE_STRUCTURED
    staged = decoded

    # One pass of the JVM encoder: the content mode (value and headers as-is unless the
    # event changes mode), the Key Mapper's key (the event itself is never changed for
    # the key), then the header transforms and the routing trail.
    attribute = request.key_attribute
    hop = request.hop()
    staged = encode_as(staged, cast(TargetMode, request.to_mode), key_attribute=attribute, hop=hop)
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

    route = f"republish {request.source} -> {request.target}: "
    rules: list[tuple[Column, str | Column, str | Column]] = []
    if request.needs_event:
        rules.append((~valid, F.col("reject_reason"), F.col("reject_detail")))
    if attribute is not None and request.on_missing == "reject":
        rules.append(
            (
                missing,
                RepublishReason.MISSING_KEY_ATTRIBUTE.value,
                f"{route}the event has no {attribute!r} attribute for the key mapper "
                f"{request.key_mapper!r} (--on-missing keep-key or null-key republishes it)",
            )
        )
    if request.to_mode == CONTENT_MODE_STRUCTURED and not request.allow_tombstone_to_structured:
        rules.append(
            (
                valid & binary & F.col("kafka_value").isNull(),
                RepublishReason.TOMBSTONE_NOT_CONVERTIBLE.value,
                f"{route}a binary event without data is a tombstone; as a structured record it "
                "would be an update. Pass --allow-tombstone-to-structured to convert it anyway",
            )
        )
    if request.to_mode == CONTENT_MODE_BINARY and not request.allow_no_data_to_binary:
        rules.append(
            (
                valid & structured & F.col("data").isNull(),
                RepublishReason.NO_DATA_NOT_CONVERTIBLE.value,
                f"{route}a structured event without data would become a binary record without "
                "value, a tombstone on a compacted topic. Pass --allow-no-data-to-binary to "
                "convert it anyway",
            )
        )
    if target_compacted:
        rules.append(
            (
                F.col("_out_key").isNull(),
                RepublishReason.NULL_KEY_ON_COMPACTED_TOPIC.value,
                f"{route}the target topic is compacted and the broker refuses records without key",
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
            "out_value": F.col(ENCODED_VALUE),
            "out_headers": F.col(ENCODED_HEADERS),
            "republish_reason": reason,
            "republish_detail": F.substring(detail, 1, DETAIL_MAX_CHARS),
        }
    ).drop("_out_key", ENCODED_VALUE, ENCODED_HEADERS, MAPPED_KEY)


def counted_plan(
    records: DataFrame, request: RepublishRequest, seen: Observation, *, target_compacted: bool
) -> DataFrame:
    """The routing of Kafka source rows as a republish run sends them: decoded once, routed
    (:func:`route_records`), and counted by reason into ``seen`` by the first action
    (None: republished).

    Example:
        >>> seen = Observation()
        >>> routed_records(counted_plan(raw, request, seen, target_compacted=False)).count()
        >>> reason_counts(seen, REPUBLISH_REASONS)
        {None: 998, 'malformed_json': 2}
    """
    # The events are forwarded, not stored: their data is not built into a VARIANT, and
    # records kept in their content mode are written as read, so their data is only
    # checked. The observation below keeps every filter above the decoder, so the
    # decoder's own barrier (each such node copies every row) is left out.
    decoded = decode_records(
        records, data_json=False, data=request.to_mode != KEEP_MODE, barrier=False
    )
    routed = route_records(decoded, request, target_compacted=target_compacted)
    return observe_reasons(routed, seen, "republish_reason", REPUBLISH_REASONS)


def routed_rejects(routed: DataFrame, target: str) -> DataFrame:
    """Rows of :func:`route_records` not republished, in rejects-table shape, with
    ``rejected_by`` = ``republish:<target>``."""
    return to_rejects(
        routed.withColumns(
            {
                "reject_reason": F.col("republish_reason"),
                "reject_detail": F.col("republish_detail"),
            }
        ),
        rejected_by=f"republish:{target}",
    )


def routed_records(routed: DataFrame) -> DataFrame:
    """Rows of :func:`route_records` to write, as Spark Kafka sink rows (no partition:
    the producer's murmur2 partitioner places each key like any Java client)."""
    return routed.where(F.col("republish_reason").isNull()).select(
        F.col("out_key").alias("key"),
        F.col("out_value").alias("value"),
        F.col("out_headers").alias("headers"),
    )
