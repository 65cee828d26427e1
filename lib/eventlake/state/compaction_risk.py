"""Compaction awareness: can a state table have missed deletions?

Kafka's log cleaner removes a tombstone ``delete.retention.ms`` after the segment
holding it was cleaned: a reader sees every delete only if it reaches the head of the
log within that window. The clock is the ledger's (:mod:`eventlake.ledger.marks`): when the
state table last had read everything written before that moment (a batch read to the
head, a reconcile). A state table whose clock is older than the window and that has
records left to read may have missed tombstones: the deleted keys would stay in it.
Maintenance commits (OPTIMIZE, VACUUM) and batches of a stream that lags do not move
that clock. This module reads the topic's configuration and offsets with the admin
client and the state table's marks with delta-rs, and says so, recommending
``eventlake reconcile``.

Example:
    >>> report = check_compaction(spark, settings, "customers")
    >>> report.at_risk, report.message
    (False, 'customers: compacted, delete.retention.ms=86400000; state table within ...')"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.kafka.clients import client_options, make_admin
from eventlake.kafka.topics import topic_offsets
from eventlake.ledger.marks import STATE, read_caught_up, read_marks, topic_marks
from eventlake.state.recorded_risk import recorded_compaction_risk
from eventlake.state.table import record_compaction_risk
from eventlake.warehouse.names import is_delta_table, state_path

TOPIC_CONFIGS = ("cleanup.policy", "delete.retention.ms", "min.compaction.lag.ms")


@dataclass(frozen=True)
class CompactionReport:
    """A compacted topic's settings and offsets next to the state table's position."""

    topic: str
    cleanup_policy: str
    delete_retention_ms: int
    min_compaction_lag_ms: int
    log_start_offsets: dict[int, int]
    end_offsets: dict[int, int]
    next_offsets: dict[int, int] = field(default_factory=dict)
    #: When the state table last had read everything written before (epoch ms).
    caught_up_ms: int | None = None
    at_risk: bool = False
    message: str = ""


def topic_configs(settings: Settings, topic: str, timeout: float = 30.0) -> dict[str, str]:
    """cleanup.policy, delete.retention.ms and min.compaction.lag.ms of a topic."""
    admin = make_admin(settings)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=timeout)
    return {name: entries[name].value for name in TOPIC_CONFIGS if name in entries}


def first_records(
    settings: Settings, topic: str, offsets: dict[int, int], timeout: float = 10.0
) -> dict[int, tuple[int, int]]:
    """Per partition, the (offset, timestamp ms) of the first record at or after the given
    offset; a partition with none there within ``timeout`` is left out.

    Example:
        >>> first_records(settings, "customers", {0: 120})
        {0: (120, 1764050000000)}
    """
    if not offsets:
        return {}
    options = client_options(settings) | {
        "group.id": f"eventlake-compaction-check-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
    }
    consumer = Consumer(options)
    try:
        consumer.assign([TopicPartition(topic, p, o) for p, o in offsets.items()])
        found: dict[int, tuple[int, int]] = {}
        deadline = time.monotonic() + timeout
        while len(found) < len(offsets) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition, offset = message.partition(), message.offset()
            if partition is not None and offset is not None and partition not in found:
                found[partition] = (offset, message.timestamp()[1])
                consumer.pause([TopicPartition(topic, partition)])
        return found
    finally:
        consumer.close()


def _state_position(settings: Settings, topic: str) -> tuple[dict[int, int], int | None, bool]:
    """The state table's marks (next offsets applied), its caught-up clock, and whether
    the table exists, from the ledger (delta-rs, no Spark)."""
    path = state_path(settings, topic)
    if not is_delta_table(path):
        return {}, None, False
    _, marks = read_marks(path, STATE, [topic])
    return topic_marks(marks, topic), read_caught_up(path, topic), True


def check_compaction(
    spark: SparkSession, settings: Settings, topic: str, *, now_ms: int | None = None
) -> CompactionReport:
    """Compare the topic's tombstone retention with how far behind the state table is."""
    configs = topic_configs(settings, topic)
    log_start, end = topic_offsets(settings, topic)
    policy = configs.get("cleanup.policy", "delete")
    retention = int(configs.get("delete.retention.ms", "86400000"))
    lag = int(configs.get("min.compaction.lag.ms", "0"))
    next_offsets, caught_up, exists = _state_position(settings, topic)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)

    behind = {p: end[p] - next_offsets.get(p, log_start[p]) for p in end}
    unread = any(v > 0 for v in behind.values())
    # A table that never caught up (none recorded) is as old as can be.
    age_ms = now_ms - caught_up if caught_up is not None else None
    at_risk = "compact" in policy and exists and unread and (age_ms is None or age_ms > retention)
    if at_risk:
        # An old clock alone is not enough: a topic that was idle since the last catch-up
        # and got a record a moment ago has nothing old unread. Only the first unread
        # record tells: there at its offset and younger than the window, every unread
        # record was appended within the window, and no tombstone among them can be
        # gone yet.
        marks = {p: next_offsets.get(p, log_start[p]) for p, n in behind.items() if n > 0}
        firsts = first_records(settings, topic, marks)
        at_risk = any(
            marks[p] < log_start[p]
            or firsts.get(p) is None
            or firsts[p][0] != marks[p]
            or now_ms - firsts[p][1] > retention
            for p in marks
        )
    # A risk stays with the table once found: the next ingest catches up (and so moves
    # the clock) without repairing the deletes it missed.
    path = str(state_path(settings, topic))
    recorded = recorded_compaction_risk(path) if exists else None
    if at_risk and recorded is None:
        recorded = {
            "found_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_ms / 1000)),
            "caught_up_ms": caught_up,
            "next_offsets": {str(p): o for p, o in next_offsets.items()},
            "end_offsets": {str(p): o for p, o in end.items()},
            "delete_retention_ms": retention,
        }
        record_compaction_risk(spark, path, recorded)
    if "compact" not in policy:
        message = f"{topic}: cleanup.policy={policy}, not compacted; no tombstone risk"
    elif not exists:
        message = (
            f"{topic}: compacted, no state table yet; a first full read sees the topic as it is"
        )
    elif recorded is not None and not at_risk:
        at_risk = True
        message = (
            f"{topic}: WARNING found at {recorded['found_at']} and kept with the state table: "
            f"it had fallen behind delete.retention.ms={recorded['delete_retention_ms']} ms, "
            "so tombstones may have been compacted away unseen and deleted keys may linger. "
            f"Run `eventlake reconcile --topic {topic}` (it clears this)."
        )
    elif at_risk:
        since = "never" if age_ms is None else f"{age_ms / 60000:.1f} min ago"
        message = (
            f"{topic}: WARNING state table last caught up with the log {since}, longer "
            f"than delete.retention.ms={retention} ms, with {sum(behind.values())} records "
            "unread: "
            "tombstones may have been compacted away unseen, so deleted keys may linger. "
            f"Run `eventlake reconcile --topic {topic}`."
        )
    else:
        message = (
            f"{topic}: compacted, delete.retention.ms={retention}; state table within the "
            "tombstone retention window"
        )
    return CompactionReport(
        topic=topic,
        cleanup_policy=policy,
        delete_retention_ms=retention,
        min_compaction_lag_ms=lag,
        log_start_offsets=log_start,
        end_offsets=end,
        next_offsets=next_offsets,
        caught_up_ms=caught_up,
        at_risk=at_risk,
        message=message,
    )
