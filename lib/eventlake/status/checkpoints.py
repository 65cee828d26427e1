"""Every checkpoint of the warehouse read without Spark: whose it is (job, topics), its
last batch, whether a live stream holds it, and the topics landed by runs that keep no
checkpoint alone.

Example:
    >>> [c.name for c in checkpoint_statuses(settings)]
    ['ingest-topics_demo.orders']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.ledger.checkpoint import IDENTITY_FILE, SPARK_FOLDER, checkpoint_holder
from eventlake.ledger.lease import leased_topics
from eventlake.ledger.marks import INGEST, read_marks
from eventlake.runs.offset_log import OffsetLogError, last_committed_batch, logged_batch
from eventlake.runs.triggers import PROCESSING_TIME_PREFIX
from eventlake.storage.store import modified_at, names, read_text
from eventlake.warehouse.names import (
    EVENTS,
)

#: The report's entry for topics ingest landed that no checkpoint reads: landed by runs
#: that keep none (backfills, full refreshes, runs of several topics to the end).
WITHOUT_CHECKPOINT: Final = "runs without a checkpoint"


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
    #: Not a checkpoint: the topics ingest landed that no checkpoint reads, landed by runs
    #: that keep none alone (:data:`WITHOUT_CHECKPOINT`, the entry's name).
    without_checkpoint: bool = False

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
        if self.without_checkpoint:
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
        for folder in (settings.checkpoints / name for name in names(settings.checkpoints))
        if read_text(folder / IDENTITY_FILE) is not None
    ]
    return [s for s in statuses if not topics or any(s.reads(topic) for topic in topics)]


def read_checkpoint(folder: Location) -> CheckpointStatus:
    """A checkpoint's source, last committed batch (and when) and holder; no offsets yet.
    A checkpoint whose files cannot be read is returned with ``problem`` saying why (it
    reads no topic then): one bad checkpoint never stops the report of the others.

    Example:
        >>> read_checkpoint(settings.checkpoints / "broken").problem
        'eventlake-identity.json is not valid JSON (Expecting value: line 1 column 1)...'
    """
    try:
        text = read_text(folder / IDENTITY_FILE)
        if text is None:
            raise OSError(f"{IDENTITY_FILE} is gone")
        identity = json.loads(text)
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
        committed_at = modified_at(spark_folder / "commits" / str(batch))
        try:
            seen = tuple(sorted({t for t, _ in logged_batch(spark_folder, batch).ends}))
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


def landed_without_checkpoint(
    settings: Settings, statuses: list[CheckpointStatus], topics: tuple[str, ...]
) -> CheckpointStatus | None:
    """The topics ingest landed (the events table's marks) that no checkpoint reads,
    as one entry: a backfill, a full refresh and a run of several topics to the end of
    what Kafka has (:attr:`eventlake.ingest.IngestRequest.keeps_checkpoint`) leave no
    checkpoint, and a topic landed only that way has records all the same."""
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
        name=WITHOUT_CHECKPOINT,
        source="topics:" + ",".join(landed),
        last_batch=None,
        last_batch_at=None,
        holder=None,
        without_checkpoint=True,
    )


def _holder(folder: Location) -> dict[str, Any] | None:
    try:
        return checkpoint_holder(folder)
    except (OSError, ValueError):
        return {"pid": "unknown"}
