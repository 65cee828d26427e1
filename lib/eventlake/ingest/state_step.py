"""Ingest's state step: the batches landed since the last step applied to each state
table (``--state``), the compaction clock moved when a read caught up, and the
compaction warnings of a state topic.

Example:
    >>> apply_backlog(spark, settings, request, backlog)
"""

from __future__ import annotations

import time

from pyspark.sql import DataFrame, SparkSession

from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.ingest.request import IngestRequest
from eventlake.ingest.state_backlog import StateBacklog, read_back
from eventlake.kafka.topics import topic_offsets
from eventlake.ledger.commits import Ledger
from eventlake.ledger.marks import INGEST, STATE, read_marks
from eventlake.runs.offset_log import LoggedBatch
from eventlake.runs.triggers import AVAILABLE_NOW
from eventlake.state.apply import StateFencedError, StateMarks, apply_state
from eventlake.state.compaction_risk import check_compaction
from eventlake.state.records import StateChange
from eventlake.warehouse.conflicts import retry_conflicts
from eventlake.warehouse.names import EVENTS, REJECTS, state_path

_log = progress_log(__name__)


def compaction_warnings(
    spark: SparkSession, settings: Settings, request: IngestRequest
) -> list[tuple[str, str]]:
    """Check, before reading, whether state tables of this run may have missed deletes."""
    if request.bounded or request.topic_pattern:
        return []
    topics = (
        request.topics
        if request.state
        else [t for t in request.topics if t in settings.state_topics]
    )
    at_risk = []
    for topic in topics:
        report = check_compaction(spark, settings, topic)
        if report.at_risk:
            _log.info(report.message)
            at_risk.append((topic, report.message))
    return at_risk


def apply_backlog(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    ledger: Ledger,
    backlog: StateBacklog,
    note: str,
    batch: DataFrame | None = None,
) -> dict[str, StateChange]:
    """One state step through the ``backlog`` (under the leases of its topics): the
    records the state tables do not hold yet, read back, applied with the marks moved to
    the backlog's ends. ``batch``: the Kafka rows of the backlog's last batch.

    A step that another process's state change overtook (:class:`StateFencedError`: it
    committed nothing) is run again from the state tables' new marks, as a commit race
    is (:func:`eventlake.warehouse.conflicts.retry_conflicts`): what the other process
    applied is not applied twice, and what it did not is applied now."""
    state_topics = kept_state(settings, request, backlog.topics())
    attempts = 0

    def attempt() -> dict[str, StateChange]:
        nonlocal attempts
        attempts += 1
        if attempts > 1:  # what this process knew of the state tables is stale
            for topic in state_topics:
                ledger.forget(str(state_path(settings, topic)))
        return _apply_once(spark, settings, ledger, backlog, state_topics, note, batch)

    changes = retry_conflicts(
        attempt, what=f"state step of {', '.join(state_topics)}", retryable=(StateFencedError,)
    )
    backlog.applied()
    return changes


def _apply_once(
    spark: SparkSession,
    settings: Settings,
    ledger: Ledger,
    backlog: StateBacklog,
    state_topics: list[str],
    note: str,
    batch: DataFrame | None,
) -> dict[str, StateChange]:
    """The state step's one attempt: the marks read, the records read back, applied."""
    events_path = str(settings.table_path(EVENTS))
    rejects_path = str(settings.table_path(REJECTS))
    ends = backlog.ends()
    state_marks = {
        k: v
        for t in state_topics
        for k, v in ledger.marks(str(state_path(settings, t)), STATE, [t]).items()
    }
    # Up to where the events table stands now, not only this run's batches: a state
    # step of another host that changed the table since its marks were read applied no
    # more than that, so this one never puts an older record back over its work (the
    # fence refuses any that started before it: eventlake.ledger.marks.fence_key).
    _, landed = read_marks(events_path, INGEST, state_topics)
    for key, end in landed.items():
        ends[key] = max(ends.get(key, 0), end)
    behind = [
        t
        for t in state_topics
        if any(state_marks.get(k, 0) < end for k, end in ends.items() if k[0] == t)
    ]
    if not behind:
        return {}
    rows, from_files = read_back(
        spark, backlog.batches, batch, events_path, rejects_path, state_marks, ends
    )
    last = backlog.batches[-1].batch_id
    marks = StateMarks(ledger, ends, backlog.caught_up_ms(), note, last)
    return apply_state(spark, settings, rows, topics=behind, marks=marks, read_back=from_files)


def caught_up_clock_ms(
    settings: Settings, request: IngestRequest, planned: LoggedBatch, run_started_ms: int
) -> int | None:
    """When (epoch ms) a batch's end offsets were the head of the log, if they were: the
    state table then has read everything written before that time.

    Without a rate limit Spark reads each batch to the head it sees when it plans it (an
    available-now run: the head at its start); with ``max_offsets_per_trigger`` the batch
    counts only when its ends reach the head Kafka reports now."""
    if not settings.max_offsets_per_trigger:
        return run_started_ms if request.trigger == AVAILABLE_NOW else planned.logged_at_ms
    now_ms = int(time.time() * 1000)
    for topic in {t for t, _ in planned.ends}:
        _, head = topic_offsets(settings, topic)
        if any(planned.ends.get((topic, p), 0) < end for p, end in head.items()):
            return None
    return now_ms


def kept_state(settings: Settings, request: IngestRequest, topics: list[str]) -> list[str]:
    """Topics among ``topics`` whose state table this run keeps: all with --state, else
    those listed in settings.state_topics."""
    if request.state:
        return sorted(topics)
    return sorted(t for t in topics if t in settings.state_topics)
