"""Where every ingest and republish stands: ``eventlake status``.

One entry per checkpoint under ``<warehouse>/_checkpoints`` (each stream, and each run of
ingest or republish that keeps one): per topic and partition, the current offset (what
has landed, from the ledger in the tables, :mod:`eventlake.ledger.marks`: for ingest the
events table's marks, for republish what it sent to its target), where the state table
stands for a topic that has one, Kafka's log end offset, the lag between the two, when
the checkpoint's last batch was committed, and whether a process holds it now (a running
stream, with its pid and host); topics ingest landed that no checkpoint reads (runs that
keep no checkpoint alone landed them) as one more entry. State tables report a
compaction risk recorded with them (see :mod:`eventlake.state.compaction_risk`), and
each topic's last data-quality verdict (from ``dq_results``,
:mod:`eventlake.status.dq_verdicts`). Reads the Delta logs with delta-rs and asks Kafka;
no Spark. The Airflow page (:mod:`eventlake.orchestration.airflow_plugin`) shows this
same report.

Example:
    >>> report = warehouse_status(settings)
    >>> print(report.render())
    ingest-topics_orders: stream (processing-time=5 seconds) held by pid 4242 on etl-1 ..."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from eventlake.core.settings import Settings
from eventlake.core.text_table import text_table
from eventlake.ledger.marks import INGEST, STATE, read_marks
from eventlake.state.recorded_risk import recorded_compaction_risk
from eventlake.status.checkpoints import (
    CheckpointStatus,
    PartitionPosition,
    checkpoint_statuses,
    landed_without_checkpoint,
)
from eventlake.status.dq_verdicts import QualityVerdict, last_verdicts
from eventlake.storage.store import names
from eventlake.typed.names import typed_lag
from eventlake.warehouse.names import (
    EVENTS,
    REJECTS,
    STATE_FOLDER,
    is_delta_table,
    state_path,
)


@dataclass
class WarehouseStatus:
    """Every checkpoint of the warehouse, the state tables' recorded risks and each
    topic's last quality verdict."""

    checkpoints: list[CheckpointStatus] = field(default_factory=list)
    compaction_risks: dict[str, dict[str, Any]] = field(default_factory=dict)
    kafka_error: str | None = None
    quality: dict[str, QualityVerdict] = field(default_factory=dict)
    #: The topics the report was narrowed to (``--topic``); empty: every checkpoint.
    topics: tuple[str, ...] = ()
    #: Topics a checkpoint names that Kafka, when it answered, does not have (deleted).
    absent_topics: tuple[str, ...] = ()
    #: Per typed table's event type, the offsets landed in events it may lack.
    typed_lag: dict[str, int] = field(default_factory=dict)

    def render(self, now: datetime | None = None) -> str:
        """Readable lines: one heading and one offsets table per checkpoint."""
        now = now or datetime.now(UTC)
        if not self.checkpoints and self.topics:
            lines = [f"no checkpoint reads {', '.join(self.topics)}: check the name, or ingest it"]
        elif not self.checkpoints:
            lines = ["no checkpoints: nothing has been ingested or republished yet"]
        else:
            lines = []
        for status in self.checkpoints:
            lines.append(_heading(status, now))
            if status.problem:
                lines.append(f"  problem: {status.problem}")
            with_state = any(p.state_offset is not None for p in status.positions)
            rows = [
                [
                    p.topic,
                    str(p.partition),
                    "-" if p.current_offset is None else str(p.current_offset),
                    _number(p.log_end_offset),
                    _number(p.lag),
                ]
                + (
                    []
                    if not with_state
                    else ["-" if p.state_offset is None else str(p.state_offset)]
                )
                for p in status.positions
            ]
            header = ["topic", "partition", "current-offset", "log-end-offset", "lag"]
            if rows:
                lines += [
                    "  " + line
                    for line in text_table(header + (["state-offset"] if with_state else []), rows)
                ]
            lines += [
                f"  {absent_topic_line(topic)}"
                for topic in status.listed_topics()
                if topic in self.absent_topics
            ]
            lines.append("")
        if self.kafka_error:
            lines.append(f"Kafka did not answer ({self.kafka_error}): log end offsets unknown.")
        for topic, risk in sorted(self.compaction_risks.items()):
            lines.append(
                f"state/{topic}: compaction risk recorded at {risk.get('found_at', '?')} "
                f"(tombstones may have been compacted away unseen); run "
                f"`eventlake reconcile --topic {topic}`"
            )
        lines += [_quality_line(verdict) for verdict in self.quality.values()]
        lines += [
            f"typed table of {event_type}: "
            + (f"{lag} offsets of events behind" if lag else "current with events")
            for event_type, lag in sorted(self.typed_lag.items())
        ]
        return "\n".join(lines).rstrip()

    def to_json(self) -> dict[str, Any]:
        """The same as a JSON-ready dict (``eventlake status --json``)."""
        return {
            "checkpoints": [
                {
                    "name": s.name,
                    "job": s.job,
                    "source": s.source,
                    "last_batch": s.last_batch,
                    "last_batch_at": s.last_batch_at.isoformat() if s.last_batch_at else None,
                    "held_by": s.holder,
                    "stream": s.is_stream,
                    "problem": s.problem,
                    "without_checkpoint": s.without_checkpoint,
                    "partitions": [
                        {
                            "topic": p.topic,
                            "partition": p.partition,
                            "current_offset": p.current_offset,
                            "state_offset": p.state_offset,
                            "log_end_offset": p.log_end_offset,
                            "lag": p.lag,
                        }
                        for p in s.positions
                    ],
                }
                for s in self.checkpoints
            ],
            "compaction_risks": self.compaction_risks,
            "kafka_error": self.kafka_error,
            "absent_topics": list(self.absent_topics),
            "quality": {topic: v.to_json() for topic, v in self.quality.items()},
            "typed_lag": self.typed_lag,
        }


def warehouse_status(
    settings: Settings,
    *,
    topics: tuple[str, ...] = (),
    ask_kafka: bool = True,
    kafka_timeout: float = 10.0,
) -> WarehouseStatus:
    """The status of every checkpoint (those reading one of ``topics``, when given).

    Example:
        >>> [s.name for s in warehouse_status(settings, topics=("orders",)).checkpoints]
        ['ingest-topics_orders', 'republish-orders-orders.bykey']
    """
    statuses = checkpoint_statuses(settings, topics)
    unread = landed_without_checkpoint(settings, statuses, topics)
    statuses += [unread] if unread else []
    report = WarehouseStatus(
        compaction_risks=compaction_risks(settings, topics),
        quality=last_verdicts(settings, topics),
        topics=topics,
    )
    latest: dict[str, dict[int, int]] = {}
    if ask_kafka:
        try:
            on_kafka, latest = _latest_offsets(settings, statuses, topics, kafka_timeout)
        except Exception as error:
            report.kafka_error = str(error).splitlines()[0][:200]
        else:
            named = {t for status in statuses for t in status.listed_topics()}
            report.absent_topics = tuple(
                sorted(t for t in named - on_kafka if not topics or t in topics)
            )
    report.checkpoints = [_with_positions(settings, status, latest, topics) for status in statuses]
    read = sorted({t for s in statuses if s.ledger_job == INGEST for t in s.listed_topics()})
    report.typed_lag = typed_lag(settings, list(topics) or read)
    return report


def compaction_risks(settings: Settings, topics: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Per state table (by topic), the compaction risk recorded with it, read from the
    table's metadata with delta-rs (no Spark)."""
    root = settings.warehouse / STATE_FOLDER
    risks: dict[str, dict[str, Any]] = {}
    for name in names(root):
        folder = root / name
        if topics and name not in topics:
            continue
        # None also while a stream is creating the table (its first commit not written).
        risk = recorded_compaction_risk(folder)
        if risk is not None:
            risks[folder.name] = risk
    return risks


def absent_topic_line(topic: str) -> str:
    """What the report says of a topic a checkpoint names that Kafka does not have.

    Example:
        >>> absent_topic_line("orders")
        'orders is not on Kafka (deleted?): its log end offset and lag are unknown; ...'
    """
    return (
        f"{topic} is not on Kafka (deleted?): its log end offset and lag are unknown; "
        "what landed from it stays in the tables"
    )


def _latest_offsets(
    settings: Settings, statuses: list[CheckpointStatus], topics: tuple[str, ...], timeout: float
) -> tuple[set[str], dict[str, dict[int, int]]]:
    """The topics on Kafka, and Kafka's end offset of every partition of every topic the
    checkpoints read."""
    from eventlake.kafka.clients import make_admin
    from eventlake.kafka.topics import log_offsets

    # One client, one metadata request and one offsets request, however many topics.
    admin = make_admin(settings)
    listed = admin.list_topics(timeout=timeout).topics
    wanted = {
        topic: listed[topic].partitions
        for topic in sorted(listed)
        if not topic.startswith("__")
        and any(status.reads(topic) for status in statuses)
        and (not topics or topic in topics)
    }
    return set(listed), log_offsets(admin, wanted, timeout=timeout)


def _with_positions(
    settings: Settings,
    status: CheckpointStatus,
    latest: dict[str, dict[int, int]],
    topics: tuple[str, ...],
) -> CheckpointStatus:
    """The checkpoint's partitions: what has landed (the ledger) against Kafka's end."""
    read = sorted(
        {t for t in status.listed_topics() if not topics or t in topics}
        | {t for t in latest if status.reads(t) and (not topics or t in topics)}
    )
    job = status.ledger_job
    table = settings.table_path(EVENTS if job == INGEST else REJECTS)
    _, landed = read_marks(table, job, read)
    applied: dict[tuple[str, int], int] = {}
    with_state: set[str] = set()
    if job == INGEST:
        for topic in read:
            path = state_path(settings, topic)
            if is_delta_table(path):
                with_state.add(topic)
                applied.update(read_marks(path, STATE, [topic])[1])
    keys = set(landed) | {(t, p) for t in read for p in latest.get(t, {})}
    positions = tuple(
        PartitionPosition(
            topic,
            partition,
            latest.get(topic, {}).get(partition),
            landed.get((topic, partition)),
            applied.get((topic, partition), 0) if topic in with_state else None,
        )
        for topic, partition in sorted(keys)
    )
    return replace(status, positions=positions)


def _heading(status: CheckpointStatus, now: datetime) -> str:
    if status.without_checkpoint:
        return (
            f"{status.name} [{status.job}, {status.source}]: no checkpoint reads these "
            "topics; what landed came from runs that keep none (backfills, full refreshes, "
            "runs of several topics)"
        )
    if status.holder is None:
        running = "not running"
    else:
        holder = status.holder
        kind = "stream" if status.is_stream else "run"
        trigger = f" ({holder['trigger']})" if holder.get("trigger") else ""
        running = (
            f"{kind}{trigger} held by pid {holder.get('pid', '?')} on "
            f"{holder.get('host', '?')} since {holder.get('since', '?')}"
        )
    if status.last_batch is None or status.last_batch_at is None:
        last = "no batch committed yet"
    else:
        age = max((now - status.last_batch_at).total_seconds(), 0.0)
        last = (
            f"last batch {status.last_batch} committed "
            f"{status.last_batch_at.isoformat(timespec='seconds')} ({_age(age)} ago)"
        )
    return f"{status.name} [{status.job}, {status.source}]: {running}; {last}"


def _quality_line(verdict: QualityVerdict) -> str:
    """``quality of T: ok (14 checks, 0 failed) in run 3f2a at ...``."""
    failed = verdict.failed_errors + verdict.failed_warnings
    at = verdict.run_time.isoformat(timespec="seconds") if verdict.run_time else "?"
    return (
        f"quality of {verdict.topic}: {verdict.verdict} ({verdict.checks} checks, {failed} "
        f"failed, {verdict.failed_errors} of them errors) in run {verdict.run_id} at {at}"
    )


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _number(value: int | None) -> str:
    return "?" if value is None else str(value)
