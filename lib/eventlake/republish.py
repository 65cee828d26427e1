"""Re-key and republish a topic: Key Mappers, header transforms, a routing trail, and
conversion between the binary and structured content modes.

A record read from the source topic is written to the target topic with

* a key from the Key Mapper (binding 3.1): ``keep`` (default: the record key as-is),
  ``partitionkey`` (the Partitioning extension), or ``attribute:<name>`` (any
  attribute or extension, e.g. ``attribute:subject``). When the event lacks the
  attribute, ``on_missing`` decides: ``keep-key`` (default: the record keeps its old
  key, so nothing is lost or reordered), ``null-key``, or ``reject``;
* the event untouched: with ``to_mode="keep"`` the value and every header (order and
  duplicates included) are copied byte for byte. ``binary``/``structured`` convert
  events exactly (see :mod:`eventlake.encode`); events already in that mode are copied;
* header transforms that can never touch the event's own headers (``ce_*`` and
  ``content-type``): drop headers by name, copy an attribute into a header, insert a
  literal header, and (to structured only) copy a header into an extension attribute
  the event does not have yet. They run in that order, after the mode conversion;
* a routing-trail header (``eventlake-trail`` by default, one JSON entry appended per
  hop: source topic, partition, offset, record timestamp, target, time of the hop), so
  a record's path across topics reads back with :func:`trail_entries`.

Partitions come from the Java producer inside Spark's Kafka sink: the default
partitioner hashes the key with murmur2, like every Java/Kafka Streams client, so no
partition is set here.

Records that cannot be republished go to the rejects table (same schema as ingest)
with a reason, and the run goes on: records that are not valid CloudEvents when the
mapper or the conversion needs an event (the decoder's reason), a missing key
attribute with ``on_missing="reject"``, a binary tombstone that would become a
structured update (``tombstone_not_convertible``), a structured event without data
that would become a binary tombstone (``no_data_not_convertible``), and a record
without key for a compacted target (the broker would refuse it).

Delivery to Kafka is at least once (Spark's Kafka sink): after a crash a batch may be
written again. Downstream ingest stays correct because events are unique by (source,
id) and state tables keep the last record per key. Rejects are written exactly once:
streaming batches by commits that name the batch (:mod:`eventlake.batch_commits`),
bounded runs by inserting only rows not yet in the table. Per-entity order is kept
where the source has one: records of one source partition are written in offset order.

Example:
    >>> request = RepublishRequest(source="orders.raw", target="orders",
    ...                            key_mapper="partitionkey", cleanup_policy="compact")
    >>> print(run_republish(spark, settings, request).line())
    republish orders.raw -> orders: read=120 republished=118 rejected=2 \
(missing_key_attribute=2) batches=1 seconds=5.1
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Final, cast

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from eventlake.batch_commits import BatchCommits
from eventlake.binding import (
    ATTRIBUTE_NAME_PATTERN,
    CE_PREFIX,
    CONTENT_MODE_BINARY,
    CONTENT_MODE_STRUCTURED,
    CONTENT_TYPE_HEADER,
    CONTEXT_ATTRIBUTES,
    DATA_MEMBERS,
    DETAIL_MAX_CHARS,
    RejectReason,
    decode_records,
    to_rejects,
)
from eventlake.checkpoint import IDENTITY_FILE, claim_checkpoint
from eventlake.encode import (
    ENCODED_HEADERS,
    ENCODED_VALUE,
    HEADERS_TYPE,
    ContentMode,
    attribute_text,
    encode_as,
    header,
)
from eventlake.kafka import (
    check_connection,
    connection_lost_error,
    create_topic,
    is_topic_name,
    kafka_source_options,
    make_admin,
    write_to_kafka,
)
from eventlake.observed import observe_reasons, reason_counts, rejects_lost
from eventlake.settings import Settings
from eventlake.streaming import (
    AVAILABLE_NOW,
    StreamSpec,
    checkpoint_folder,
    holding_checkpoint,
    run_stream,
    trigger_problem,
)
from eventlake.tables import REJECTS, REJECTS_SCHEMA, ensure_table

KEEP: Final = "keep"
PARTITIONKEY: Final = "partitionkey"
ATTRIBUTE_PREFIX: Final = "attribute:"
ON_MISSING_CHOICES: Final = ("keep-key", "null-key", "reject")
TO_MODE_CHOICES: Final = (KEEP, CONTENT_MODE_BINARY, CONTENT_MODE_STRUCTURED)
CLEANUP_POLICIES: Final = ("compact", "delete", "compact,delete")
DEFAULT_TRAIL_HEADER: Final = "eventlake-trail"
#: Spark schema of one routing-trail entry (the header value is this as JSON).
TRAIL_ENTRY_SCHEMA: Final = (
    "topic string, partition int, offset long, timestamp timestamp, target string, at timestamp"
)
_REJECT_COORDINATES: Final = (
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
    "reason",
    "rejected_by",
)


class RepublishError(ValueError):
    """A republish run cannot start as asked; the message says what to change."""


class RepublishReason(StrEnum):
    """Reasons, beside the decoder's, why a record is not republished."""

    MISSING_KEY_ATTRIBUTE = "missing_key_attribute"
    TOMBSTONE_NOT_CONVERTIBLE = "tombstone_not_convertible"
    NO_DATA_NOT_CONVERTIBLE = "no_data_not_convertible"
    NULL_KEY_ON_COMPACTED_TOPIC = "null_key_on_compacted_topic"


#: Every reason a record is not republished: the decoder's, then republish's own.
REPUBLISH_REASONS: Final = (*RejectReason, *RepublishReason)


def is_protected_header(name: str) -> bool:
    """Headers that carry the CloudEvent: no header transform may touch them."""
    lowered = name.lower()
    return lowered.startswith(CE_PREFIX) or lowered == CONTENT_TYPE_HEADER


def parse_pair(text: str, *, option: str) -> tuple[str, str]:
    """``"left=right"`` -> ``("left", "right")`` (split at the first ``=``).

    Example:
        >>> parse_pair("origin=eu=west", option="--insert-header")
        ('origin', 'eu=west')
    """
    left, sep, right = text.partition("=")
    if not sep or not left:
        raise RepublishError(f"{option} takes NAME=VALUE, got {text!r}")
    return left, right


@dataclass(frozen=True)
class RepublishRequest:
    """What to republish and how; mirrors the ``eventlake republish`` options.

    Example:
        >>> RepublishRequest(source="raw", target="by-entity", key_mapper="attribute:subject",
        ...                  on_missing="reject", to_mode="binary", drop_headers=("debug",))
    """

    source: str
    target: str
    key_mapper: str = KEEP
    on_missing: str = "keep-key"
    to_mode: str = KEEP
    allow_tombstone_to_structured: bool = False
    allow_no_data_to_binary: bool = False
    trigger: str = AVAILABLE_NOW
    starting_offsets: str = "earliest"
    ending_offsets: str | None = None
    #: Partitions of a target created here; default: as many as the source has.
    partitions: int | None = None
    #: cleanup.policy of a target created here; default: the broker's (delete).
    cleanup_policy: str | None = None
    #: (name, literal value) headers appended to every record.
    insert_headers: tuple[tuple[str, str], ...] = ()
    #: Header names removed from every record (all occurrences).
    drop_headers: tuple[str, ...] = ()
    #: (attribute, header): the event's attribute copied into a header, when present.
    attribute_headers: tuple[tuple[str, str], ...] = ()
    #: (header, extension): only with to_mode="structured"; the first header of that
    #: name becomes an extension attribute, unless the event has the attribute already.
    header_attributes: tuple[tuple[str, str], ...] = ()
    #: Routing-trail header appended per hop; None for no trail.
    trail_header: str | None = DEFAULT_TRAIL_HEADER
    checkpoint_name: str | None = None

    def __post_init__(self) -> None:
        for option, topic in (("--source", self.source), ("--target", self.target)):
            if not is_topic_name(topic):
                raise RepublishError(f"{option} {topic!r} is not a Kafka topic name")
        if self.source == self.target:
            raise RepublishError(
                "--source and --target are the same topic: every record would be read back "
                "and republished again. Use another target."
            )
        self._check_key_mapper()
        if self.on_missing not in ON_MISSING_CHOICES:
            raise RepublishError(f"--on-missing must be one of {', '.join(ON_MISSING_CHOICES)}")
        if self.to_mode not in TO_MODE_CHOICES:
            raise RepublishError(f"--to-mode must be one of {', '.join(TO_MODE_CHOICES)}")
        problem = trigger_problem(self.trigger)
        if problem:
            raise RepublishError(problem)
        if self.bounded and self.trigger != AVAILABLE_NOW:
            raise RepublishError(
                "--ending-offsets makes a bounded batch run, which takes no --trigger."
            )
        if self.partitions is not None and self.partitions < 1:
            raise RepublishError("--partitions must be at least 1")
        if self.cleanup_policy is not None and self.cleanup_policy not in CLEANUP_POLICIES:
            raise RepublishError(f"--cleanup-policy must be one of {', '.join(CLEANUP_POLICIES)}")
        self._check_headers()

    def _check_key_mapper(self) -> None:
        if self.key_mapper in (KEEP, PARTITIONKEY):
            return
        if not self.key_mapper.startswith(ATTRIBUTE_PREFIX):
            raise RepublishError(
                f"Unknown key mapper {self.key_mapper!r}: use 'keep', 'partitionkey' or "
                "'attribute:<name>' (e.g. attribute:subject)."
            )
        _check_attribute_name(self.key_mapper[len(ATTRIBUTE_PREFIX) :], "--key-mapper")

    def _check_headers(self) -> None:
        trail = self.trail_header
        if trail is not None and (not trail or is_protected_header(trail)):
            raise RepublishError(
                f"--trail-header {trail!r}: the trail must be a header of its own, "
                "not a CloudEvents header (ce_*, content-type)"
            )
        written = [name for name, _ in self.insert_headers] + [
            name for _, name in self.attribute_headers
        ]
        for option, names in (
            ("--insert-header/--attribute-header", written),
            ("--drop-header", list(self.drop_headers)),
            ("--header-attribute", [name for name, _ in self.header_attributes]),
        ):
            for name in names:
                if not name:
                    raise RepublishError(f"{option}: a header name cannot be empty")
                if is_protected_header(name):
                    raise RepublishError(
                        f"{option} {name!r}: CloudEvents headers (ce_*, content-type) carry "
                        "the event and cannot be changed by header transforms; use --to-mode "
                        "to convert the content mode instead"
                    )
                if name == trail:
                    raise RepublishError(
                        f"{option} {name!r}: the routing trail header is append-only"
                    )
        for attribute, _ in self.attribute_headers:
            _check_attribute_name(attribute, "--attribute-header")
        if self.header_attributes and self.to_mode != CONTENT_MODE_STRUCTURED:
            raise RepublishError(
                "--header-attribute adds an attribute to the event, which is only done when "
                "converting with --to-mode structured"
            )
        extensions = [attribute for _, attribute in self.header_attributes]
        for attribute in extensions:
            _check_attribute_name(attribute, "--header-attribute")
            if attribute in CONTEXT_ATTRIBUTES:
                raise RepublishError(
                    f"--header-attribute {attribute!r}: only extension attributes can be "
                    "taken from a header"
                )
        if len(set(extensions)) != len(extensions):
            raise RepublishError("--header-attribute names the same attribute twice")

    @property
    def bounded(self) -> bool:
        return self.ending_offsets is not None

    @property
    def key_attribute(self) -> str | None:
        """The attribute the key comes from; None for the ``keep`` mapper."""
        if self.key_mapper == PARTITIONKEY:
            return PARTITIONKEY
        if self.key_mapper.startswith(ATTRIBUTE_PREFIX):
            return self.key_mapper[len(ATTRIBUTE_PREFIX) :]
        return None

    @property
    def needs_event(self) -> bool:
        """Whether every record must be a valid CloudEvent (else it is rejected)."""
        return self.key_attribute is not None or self.to_mode != KEEP

    def default_checkpoint_name(self) -> str:
        return f"republish-{self.source}-{self.target}"


def _check_attribute_name(name: str, option: str) -> None:
    if not re.fullmatch(ATTRIBUTE_NAME_PATTERN, name) or name in DATA_MEMBERS:
        raise RepublishError(
            f"{option}: {name!r} is not an attribute name (lowercase letters and digits)"
        )


@dataclass
class RepublishSummary:
    """Counts of one run, printed as one line at the end."""

    source: str
    target: str
    records_read: int = 0
    republished: int = 0
    rejects_by_reason: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    seconds: float = 0.0
    created_target: bool = False
    #: The signal that stopped a streaming run (None: it ended on its own).
    stopped_by: str | None = None

    @property
    def rejected(self) -> int:
        return sum(self.rejects_by_reason.values())

    def add_batch(self, counts: dict[str | None, int]) -> None:
        self.batches += 1
        for reason, count in counts.items():
            self.records_read += count
            if reason is None:
                self.republished += count
            else:
                self.rejects_by_reason[reason] += count

    def counts_text(self) -> str:
        """The counts so far, for progress lines: ``batches=2 read=10 republished=9 ...``."""
        return (
            f"batches={self.batches} read={self.records_read} "
            f"republished={self.republished} rejected={self.rejected}"
        )

    def line(self) -> str:
        reasons = ", ".join(f"{r}={n}" for r, n in sorted(self.rejects_by_reason.items()))
        return (
            f"republish {self.source} -> {self.target}: read={self.records_read} "
            f"republished={self.republished} rejected={self.rejected}"
            + (f" ({reasons})" if reasons else "")
            + f" batches={self.batches} seconds={self.seconds:.1f}"
            + (" (target created)" if self.created_target else "")
            + (f" stopped_by={self.stopped_by}" if self.stopped_by else "")
        )


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


def _first_header_text(name: str) -> Column:
    headers = F.coalesce(F.col("kafka_headers"), F.array().cast(HEADERS_TYPE))
    first = F.try_element_at(F.filter(headers, lambda h: h["key"] == name), F.lit(1))
    return first["value"].cast("string")


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

    # Key Mapper: the event itself is never changed for the key.
    attribute = request.key_attribute
    if attribute is None:
        key: Column = F.col("kafka_key")
        missing: Column = F.lit(False)
    else:
        key_text = attribute_text(attribute)
        missing = valid & key_text.isNull()
        fallback = (
            F.lit(None).cast("binary") if request.on_missing == "null-key" else F.col("kafka_key")
        )
        key = F.when(valid & key_text.isNotNull(), F.encode(key_text, "UTF-8")).otherwise(fallback)

    # Content mode: value and headers as-is unless the event changes mode.
    if request.to_mode == KEEP:
        staged = staged.withColumns(
            {
                ENCODED_VALUE: F.col("kafka_value"),
                ENCODED_HEADERS: F.coalesce(F.col("kafka_headers"), F.array().cast(HEADERS_TYPE)),
            }
        )
    else:
        staged = encode_as(staged, cast(ContentMode, request.to_mode))
    value = F.col(ENCODED_VALUE)
    for header_name, extension in request.header_attributes:
        text = _first_header_text(header_name)
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
            ).otherwise(F.array().cast(HEADERS_TYPE)),
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
    ).drop("_out_key", ENCODED_VALUE, ENCODED_HEADERS)


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


def kafka_reader_options(settings: Settings, request: RepublishRequest) -> dict[str, str]:
    """Options of Spark's Kafka source for this request."""
    return kafka_source_options(
        settings,
        {"subscribe": request.source},
        starting_offsets=request.starting_offsets,
        ending_offsets=request.ending_offsets,
    )


def prepare_target(settings: Settings, request: RepublishRequest) -> tuple[bool, bool]:
    """Create the target topic if missing; return (created, compacted).

    Example:
        >>> prepare_target(settings, RepublishRequest(source="a", target="b", partitions=6))
        (True, False)
    """
    from confluent_kafka.admin import ConfigResource, ResourceType

    admin = make_admin(settings)
    topics = admin.list_topics(timeout=30).topics
    if request.source not in topics:
        raise RepublishError(f"source topic {request.source!r} does not exist")
    partitions = request.partitions or len(topics[request.source].partitions)
    config = {"cleanup.policy": request.cleanup_policy} if request.cleanup_policy else None
    created = create_topic(settings, request.target, partitions=partitions, config=config)
    if not created and request.target in topics:
        existing = len(topics[request.target].partitions)
        if request.partitions is not None and existing != request.partitions:
            print(
                f"republish: target {request.target} exists with {existing} partitions; "
                f"--partitions {request.partitions} only applies to a new topic",
                flush=True,
            )
    resource = ConfigResource(ResourceType.TOPIC, request.target)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    policy = str(entries["cleanup.policy"].value or "")
    return created, "compact" in policy


def _plan_observed(
    records: DataFrame, request: RepublishRequest, compacted: bool, seen: Observation
) -> DataFrame:
    """The plan of ``records``, counted by reason into ``seen`` by the first action."""
    planned = plan_republish(decode_records(records), request, target_compacted=compacted)
    return observe_reasons(planned, seen, "republish_reason", REPUBLISH_REASONS)


def _ensure_rejects_table(spark: SparkSession, settings: Settings) -> str:
    path = str(settings.table_path(REJECTS))
    ensure_table(spark, path, REJECTS_SCHEMA)
    return path


def _write_kafka(settings: Settings, request: RepublishRequest, planned: DataFrame) -> None:
    write_to_kafka(planned_records(planned), settings, request.target)


def run_republish(
    spark: SparkSession, settings: Settings, request: RepublishRequest
) -> RepublishSummary:
    """Run one republish (streaming, or bounded batch with ending offsets) and count it.

    Example:
        >>> run_republish(spark, settings, RepublishRequest(source="a", target="b")).line()
        'republish a -> b: read=10 republished=10 rejected=0 batches=1 seconds=3.0'
    """
    started = time.monotonic()
    check_connection(settings)
    created, compacted = prepare_target(settings, request)
    rejects_path = _ensure_rejects_table(spark, settings)
    try:
        if request.bounded:
            summary = _run_bounded(spark, settings, request, rejects_path, compacted)
        else:
            summary = _run_streaming(spark, settings, request, rejects_path, compacted)
    except Exception as error:
        lost = connection_lost_error(settings, error, resume=_resume_hint(settings, request))
        if lost is not None:
            raise lost from error
        raise
    summary.created_target = created
    summary.seconds = time.monotonic() - started
    return summary


def _resume_hint(settings: Settings, request: RepublishRequest) -> str:
    if request.bounded:
        return "Once Kafka answers, rerun the same command (delivery is at least once)."
    checkpoint = checkpoint_folder(settings.checkpoints, request)
    return (
        f"Progress is kept in checkpoint {checkpoint}: once Kafka answers, rerun the same "
        "command; it resumes after the last committed batch (records of the interrupted "
        "batch may be written to the target again: delivery is at least once)."
    )


def _run_streaming(
    spark: SparkSession,
    settings: Settings,
    request: RepublishRequest,
    rejects_path: str,
    compacted: bool,
) -> RepublishSummary:
    with holding_checkpoint(settings.checkpoints, "republish", request) as checkpoint:
        return _stream(spark, settings, request, checkpoint, rejects_path, compacted)


def _stream(
    spark: SparkSession,
    settings: Settings,
    request: RepublishRequest,
    checkpoint: Path,
    rejects_path: str,
    compacted: bool,
) -> RepublishSummary:
    fresh = not (checkpoint / IDENTITY_FILE).exists()
    identity = claim_checkpoint(
        checkpoint,
        source=f"topic:{request.source}",
        targets=[f"kafka:{request.target}", rejects_path],
    )
    commits = BatchCommits.open(spark, checkpoint, identity.app_id, [rejects_path], fresh=fresh)
    summary = RepublishSummary(source=request.source, target=request.target)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # One pass writes the records and counts them; only a batch with rejects is read
        # again, for the rejects. A replay after a crash writes the Kafka records again
        # (at least once) and skips rejects already committed (eventlake.batch_commits).
        seen = Observation()
        _write_kafka(settings, request, _plan_observed(batch, request, compacted, seen))
        counts = reason_counts(seen, REPUBLISH_REASONS)
        has_rejects = any(reason is not None for reason in counts)
        if has_rejects and not commits.committed(spark, rejects_path, batch_id):
            seen_again = Observation()
            rejects = planned_rejects(
                _plan_observed(batch, request, compacted, seen_again), request.target
            )
            commits.append(spark, rejects, rejects_path, batch_id)
            warning = rejects_lost(counts, reason_counts(seen_again, REPUBLISH_REASONS))
            if warning:
                print(f"republish: WARNING batch {batch_id}: {warning}", flush=True)
        summary.add_batch(counts)
        print(f"republish: batch {batch_id} done, {sum(counts.values())} records", flush=True)

    spec = StreamSpec(
        job="republish",
        options=kafka_reader_options(settings, request),
        checkpoint=checkpoint,
        trigger=request.trigger,
        progress_seconds=settings.progress_seconds,
    )
    outcome = run_stream(spark, spec, write_batch, progress=summary.counts_text)
    summary.stopped_by = outcome.stopped_by
    return summary


def _run_bounded(
    spark: SparkSession,
    settings: Settings,
    request: RepublishRequest,
    rejects_path: str,
    compacted: bool,
) -> RepublishSummary:
    records = spark.read.format("kafka").options(**kafka_reader_options(settings, request)).load()
    seen = Observation()
    _write_kafka(settings, request, _plan_observed(records, request, compacted, seen))
    counts = reason_counts(seen, REPUBLISH_REASONS)
    if any(reason is not None for reason in counts):
        # Insert-if-absent, so that a replay of the same range adds no reject twice
        # (an anti join and an append: the same as an insert-only MERGE, far cheaper).
        existing = (
            spark.read.format("delta")
            .load(rejects_path)
            .where(F.col("kafka_topic") == request.source)
            .select(*_REJECT_COORDINATES)
        )
        seen_again = Observation()
        new_rejects = planned_rejects(
            _plan_observed(records, request, compacted, seen_again), request.target
        ).join(existing, list(_REJECT_COORDINATES), "left_anti")
        new_rejects.write.format("delta").mode("append").save(rejects_path)
        warning = rejects_lost(counts, reason_counts(seen_again, REPUBLISH_REASONS))
        if warning:
            print(f"republish: WARNING {warning}", flush=True)
    summary = RepublishSummary(source=request.source, target=request.target)
    summary.add_batch(counts)
    return summary
