"""Where every ingest and republish stands: ``eventlake status``.

One entry per checkpoint under ``<warehouse>/_checkpoints`` (each streaming or scheduled
run of ingest or republish keeps one): per topic and partition, the current offset
(what has landed, from the ledger in the tables, :mod:`eventlake.ledger`: for ingest
the events table's marks, for republish what it sent to its target), where the state
table stands for a topic that has one, Kafka's log end offset, the lag between the two,
when the checkpoint's last batch was committed, and whether a process holds it now (a
running stream, with its pid and host); topics ingest landed that no checkpoint reads
(bounded runs alone landed them) as one more entry. State tables report a compaction risk recorded
with them (see :mod:`eventlake.compaction`), and each topic's last data-quality verdict
(from ``dq_results``, :mod:`eventlake.dq_verdicts`). Reads the Delta logs with delta-rs
and asks Kafka; no Spark. The Airflow page (:mod:`eventlake.airflow_plugin`) shows this
same report.

Example:
    >>> report = warehouse_status(settings)
    >>> print(report.render())
    ingest-topics_orders: stream (processing-time=5 seconds) held by pid 4242 on etl-1 ...
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from eventlake.checkpoint import IDENTITY_FILE, checkpoint_holder
from eventlake.dq_verdicts import QualityVerdict, last_verdicts
from eventlake.ledger import INGEST, STATE, leased_topics, read_marks
from eventlake.offset_log import OffsetLogError, last_committed_batch, planned_batch
from eventlake.settings import Settings
from eventlake.state import COMPACTION_RISK_PROPERTY
from eventlake.streaming import PROCESSING_TIME_PREFIX, SPARK_FOLDER
from eventlake.tables import (
    EVENTS,
    REJECTS,
    STATE_FOLDER,
    delta_rs_table,
    is_delta_table,
    state_path,
)
from eventlake.text_table import text_table

#: The report's entry for topics ingest landed that no checkpoint reads (bounded runs).
BOUNDED_RUNS_ONLY: Final = "bounded runs only"


@dataclass(frozen=True)
class PartitionPosition:
    """One partition, named as ``kafka-consumer-groups`` names them: the log end offset
    (Kafka's next offset), the current offset (the next offset to read: every record
    before it is written to the tables) and the lag between them."""

    topic: str
    partition: int
    log_end_offset: int | None
    current_offset: int | None
    #: The next offset the topic's state table has to apply (None: no state table).
    state_offset: int | None = None

    @property
    def lag(self) -> int | None:
        if self.log_end_offset is None:
            return None
        return self.log_end_offset - (self.current_offset or 0)


@dataclass(frozen=True)
class CheckpointStatus:
    """One checkpoint: its source, last committed batch and who holds it now."""

    name: str
    source: str
    last_batch: int | None
    last_batch_at: datetime | None
    holder: dict[str, Any] | None
    positions: tuple[PartitionPosition, ...] = ()
    #: What the checkpoint writes to: Delta tables, ``kafka:<topic>`` for republish.
    targets: tuple[str, ...] = ()
    #: The topics its stream's last batch read (Spark matched a pattern, in Java).
    seen_topics: tuple[str, ...] = ()
    #: What is wrong with the checkpoint's files, when something is (None: nothing).
    problem: str | None = None
    #: Not a checkpoint: the topics ingest landed that no checkpoint reads, landed by
    #: bounded runs alone (a backfill, a full refresh), named :data:`BOUNDED_RUNS_ONLY`.
    bounded_runs_only: bool = False

    @property
    def ledger_job(self) -> str:
        """The ledger job whose marks say where this checkpoint's runs stand."""
        for target in self.targets:
            if target.startswith("kafka:"):
                return f"republish:{target[len('kafka:') :]}"
        return INGEST

    def listed_topics(self) -> list[str]:
        """The topics a ``topics:``/``topic:`` source names (a pattern names none)."""
        kind, _, value = self.source.partition(":")
        return [] if kind == "pattern" else [t for t in value.split(",") if t]

    @property
    def job(self) -> str:
        if self.bounded_runs_only:
            return INGEST
        if self.holder and self.holder.get("job"):
            return str(self.holder["job"])
        return self.name.split("-", 1)[0]

    @property
    def is_stream(self) -> bool:
        """A process holds it with a processing-time trigger: a running stream."""
        trigger = (self.holder or {}).get("trigger") or ""
        return str(trigger).startswith(PROCESSING_TIME_PREFIX)

    def reads(self, topic: str) -> bool:
        """Whether this checkpoint's source takes ``topic`` (a listed topic or the pattern).

        Example:
            >>> CheckpointStatus("c", "pattern:demo\\\\..*", None, None, None).reads("demo.x")
            True
        """
        kind, _, value = self.source.partition(":")
        if kind == "pattern":
            if topic in self.seen_topics:
                return True  # matched by Spark itself, with Java's regex semantics
            # Spark subscribes with Java's Pattern.matcher(topic).matches(): a full match.
            # A pattern Python cannot compile (Java-only syntax such as \p{Alnum}) is
            # known only by the topics its stream has read.
            try:
                return re.fullmatch(value, topic) is not None
            except re.error:
                return False
        return kind in ("topics", "topic") and topic in value.split(",")


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
                    "bounded_runs_only": s.bounded_runs_only,
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
    unread = _landed_without_checkpoint(settings, statuses, topics)
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
    return report


def streams_reading(settings: Settings, topic: str) -> list[CheckpointStatus]:
    """The running streams (a processing-time run holding its checkpoint) that read
    ``topic``: a scheduled ingest of that topic would write its records a second time.

    Example:
        >>> [s.name for s in streams_reading(settings, "demo.stream.clicks")]
        ['ingest-pattern_demo._.stream_.._']
    """
    return [status for status in checkpoint_statuses(settings, (topic,)) if status.is_stream]


def checkpoint_statuses(settings: Settings, topics: tuple[str, ...] = ()) -> list[CheckpointStatus]:
    """Every checkpoint of the warehouse (those reading one of ``topics``, when given),
    from its files alone: no Kafka offsets yet.

    Example:
        >>> [s.name for s in checkpoint_statuses(settings)]
        ['ingest-topics_orders']
    """
    statuses = [
        read_checkpoint(folder)
        for folder in sorted(settings.checkpoints.glob("*"))
        if (folder / IDENTITY_FILE).is_file()
    ]
    return [s for s in statuses if not topics or any(s.reads(topic) for topic in topics)]


def read_checkpoint(folder: Path) -> CheckpointStatus:
    """A checkpoint's source, last committed batch (and when) and holder; no offsets yet.
    A checkpoint whose files cannot be read is returned with ``problem`` saying why (it
    reads no topic then): one bad checkpoint never stops the report of the others.

    Example:
        >>> read_checkpoint(settings.checkpoints / "broken").problem
        'eventlake-identity.json is not valid JSON (Expecting value: line 1 column 1)...'
    """
    try:
        identity = json.loads((folder / IDENTITY_FILE).read_text())
        source = str(identity["source"])
        targets = tuple(str(t) for t in identity.get("targets", ()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        return CheckpointStatus(
            name=folder.name,
            source="unknown",
            last_batch=None,
            last_batch_at=None,
            holder=_holder(folder),
            problem=f"{IDENTITY_FILE} cannot be read ({type(error).__name__}: {error}); "
            "this checkpoint is left out. Delete the folder if no stream uses it.",
        )
    spark_folder = folder / SPARK_FOLDER
    batch = last_committed_batch(spark_folder)
    committed_at = None
    seen: tuple[str, ...] = ()
    problem = None
    if batch is not None:
        mtime = (spark_folder / "commits" / str(batch)).stat().st_mtime
        committed_at = datetime.fromtimestamp(mtime, UTC)
        try:
            seen = tuple(sorted({t for t, _ in planned_batch(spark_folder, batch).ends}))
        except (OSError, ValueError, OffsetLogError) as error:
            problem = f"Spark's offsets of batch {batch} cannot be read ({error})"
    kind, _, value = source.partition(":")
    if kind == "pattern" and problem is None:
        try:
            re.compile(value)
        except re.error as error:
            problem = (
                f"its pattern is Java-only syntax ({error}): the topics it reads are those "
                f"its last batch read ({', '.join(seen) or 'none yet'})"
            )
    return CheckpointStatus(
        name=folder.name,
        source=source,
        last_batch=batch,
        last_batch_at=committed_at,
        holder=_holder(folder),
        targets=targets,
        seen_topics=seen,
        problem=problem,
    )


def _landed_without_checkpoint(
    settings: Settings, statuses: list[CheckpointStatus], topics: tuple[str, ...]
) -> CheckpointStatus | None:
    """The topics ingest landed (the events table's marks) that no checkpoint reads,
    as one entry: a backfill or a full refresh lands records without a checkpoint, and a
    warehouse landed only that way has records all the same."""
    candidates = [
        topic
        for topic in leased_topics(settings.warehouse)
        if (not topics or topic in topics) and not any(s.reads(topic) for s in statuses)
    ]
    if not candidates:
        return None
    _, marks = read_marks(settings.table_path(EVENTS), INGEST, candidates)
    landed = sorted({topic for topic, _ in marks})
    if not landed:
        return None
    return CheckpointStatus(
        name=BOUNDED_RUNS_ONLY,
        source="topics:" + ",".join(landed),
        last_batch=None,
        last_batch_at=None,
        holder=None,
        bounded_runs_only=True,
    )


def _holder(folder: Path) -> dict[str, Any] | None:
    try:
        return checkpoint_holder(folder)
    except (OSError, ValueError):
        return {"pid": "unknown"}


def compaction_risks(settings: Settings, topics: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Per state table (by topic), the compaction risk recorded with it, read from the
    table's metadata with delta-rs (no Spark)."""
    root = settings.warehouse / STATE_FOLDER
    risks: dict[str, dict[str, Any]] = {}
    if not root.is_dir():
        return risks
    for folder in sorted(root.iterdir()):
        if topics and folder.name not in topics:
            continue
        # None also while a stream is creating the table (its first commit not written).
        table = delta_rs_table(folder)
        if table is None:
            continue
        configuration = table.metadata().configuration
        text = configuration.get(COMPACTION_RISK_PROPERTY)
        if text:
            risks[folder.name] = json.loads(text)
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
    from eventlake.kafka import log_offsets, make_admin

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
    if status.bounded_runs_only:
        return (
            f"{status.name} [{status.job}, {status.source}]: no checkpoint reads these "
            "topics; what landed came from bounded runs (backfills, full refreshes)"
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
