"""A batch's latest records per key applied to ``state/<topic>`` with the state marks in
the same commit: the first rows written, later ones rewritten file by file
(:mod:`eventlake.state.rewrite`) or merged.

Example:
    >>> apply_state(spark, settings, topic, records, marks)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, TypeVar

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from eventlake.binding.decode import (
    EVENT_COLUMNS,
)
from eventlake.binding.reason_counts import observed_values
from eventlake.core.errors import TryAgainLater
from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.ledger.commits import FilesChangedError, Ledger
from eventlake.ledger.marks import STATE, PartitionOffsets, caught_up_key
from eventlake.spark.rows import release
from eventlake.spark.session import session_conf
from eventlake.state.records import StateChange, applicable_records, latest_per_key
from eventlake.state.retry import merge_retried
from eventlake.state.table import ensure_state_table
from eventlake.warehouse.delta_log import empty_at
from eventlake.warehouse.names import state_path
from eventlake.warehouse.tables import MATERIALIZED_SOURCE_CONFS, merge_source

_log = progress_log(__name__)

T = TypeVar("T")


def merge_metrics(spark: SparkSession, path: str) -> dict[str, int]:
    from delta.tables import DeltaTable

    last = DeltaTable.forPath(spark, path).history(1).collect()[0]
    if last["operation"] != "MERGE":
        return {}
    return {k: int(v) for k, v in (last["operationMetrics"] or {}).items() if v.isdigit()}


#: Delta's idempotent-DML settings: a MERGE with them commits ``txnAppId`` at
#: ``txnVersion``, registered as read, and is skipped when the table already has that
#: version or a higher one (:func:`eventlake.ledger.marks.fence_key`).
TXN_APP_ID: Final = "spark.databricks.delta.write.txnAppId"
TXN_VERSION: Final = "spark.databricks.delta.write.txnVersion"


class StateFencedError(TryAgainLater, RuntimeError):
    """Another process changed the state table's rows since this one read its marks (a
    state step of the same topic on another host, a reconcile); this one committed
    nothing, and the next run applies what the table's marks do not hold."""


def fenced_merge(ledger: Ledger, path: str, topic: str) -> dict[str, str]:
    """The session settings under which a MERGE of ``topic``'s state table moves its
    fence one past the value the ledger read with the marks: Delta then refuses it when
    another commit moves the fence meanwhile (``ConcurrentTransactionException``) and
    skips it when one did before it started (see :func:`_merge_latest`).

    Example:
        >>> fenced_merge(ledger, "/wh/state/customers", "customers")
        {'spark.databricks.delta.write.txnAppId': 'eventlake/state-applied/customers', ...}
    """
    ((key, version),) = ledger.fenced(path, topic).items()
    return {TXN_APP_ID: key, TXN_VERSION: str(version)}


def run_fenced(merge: Callable[[], T], path: str) -> T:
    """``merge()``, with Delta's refusal of a fenced MERGE (another commit moved the
    fence while it ran: ``ConcurrentTransactionException``) as :class:`StateFencedError`.

    Example:
        >>> run_fenced(builder.execute, "/wh/state/customers")
    """
    from delta.exceptions import ConcurrentTransactionException

    try:
        return merge()
    except ConcurrentTransactionException:
        raise StateFencedError(
            f"{path}: another process changed the state table while this MERGE ran; "
            "nothing of it was committed: run the job again, it applies what the table's "
            "marks do not hold"
        ) from None


def _merge_latest(
    spark: SparkSession, path: str, source: DataFrame, values: dict[str, str | Column]
) -> tuple[int, int]:
    """One MERGE of latest-per-key rows into a state table: tombstone -> delete, otherwise
    upsert. Returns (rows upserted, rows deleted), as the MERGE itself reports them (no
    read of the table's history: each costs the driver a Delta log read). Under
    :func:`fenced_merge`'s settings, a MERGE Delta skipped (its fence moved before it
    started: another process changed the rows) raises :class:`StateFencedError`."""
    from delta.tables import DeltaTable

    merge = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.kafka_key = s.kafka_key")
        .whenMatchedDelete(condition="s._tombstone")
        .whenMatchedUpdate(condition="NOT s._tombstone", set=values)
        .whenNotMatchedInsert(condition="NOT s._tombstone", values=values)
    )
    counts = run_fenced(merge.execute, path).first()
    if counts is None:
        # Delta returns no metrics row only for a MERGE its txnVersion skipped.
        raise StateFencedError(
            f"{path}: another process changed the state table since this one read its "
            "marks; nothing was merged: run the job again, it applies what the table's "
            "marks do not hold"
        )
    return (
        int(counts["num_updated_rows"] or 0) + int(counts["num_inserted_rows"] or 0),
        int(counts["num_deleted_rows"] or 0),
    )


@dataclass(frozen=True)
class StateMarks:
    """What :func:`apply_state` records with each state table it changed: the marks of
    :func:`commit_state_marks` (its arguments but the topic)."""

    ledger: Ledger
    ends: PartitionOffsets
    caught_up_ms: int | None
    note: str
    batch: int | None = None

    def commit(self, settings: Settings, topic: str, pending: Any = None) -> int:
        """:func:`commit_state_marks` of ``topic``, with ``pending``'s files (the ledger's
        uncommitted write, after reading the marks) when given; the table version."""
        if pending is None:
            return commit_state_marks(
                self.ledger, settings, topic, self.ends,
                caught_up_ms=self.caught_up_ms, note=self.note, batch=self.batch,
            )  # fmt: skip
        path = str(state_path(settings, topic))
        return _commit_marks(
            self.ledger, path, topic, self.ends, pending, self.caught_up_ms, self.note, self.batch,
            changes_rows=True,
        )  # fmt: skip

    def commit_first_rows(
        self, settings: Settings, topic: str, rows: DataFrame, version: int
    ) -> int | None:
        """:func:`commit_first_rows` with these marks."""
        return commit_first_rows(
            self.ledger,
            settings,
            topic,
            rows,
            version,
            self.ends,
            caught_up_ms=self.caught_up_ms,
            note=self.note,
            batch=self.batch,
        )


def apply_state(
    spark: SparkSession,
    settings: Settings,
    decoded: DataFrame,
    *,
    topics: list[str],
    marks: StateMarks | None = None,
    read_back: bool = False,
) -> dict[str, StateChange]:
    """Apply decoded records to the state tables of ``topics``: the latest per key wins
    (applying the same records twice changes nothing). With ``marks``, each table's
    marks are committed after (:func:`commit_state_marks`).

    Into a table with no rows yet (a topic's first landing), with ``marks``, the winners
    are written, not merged, in one commit with the marks (``Ledger.write(empty_at=
    ...)``): a MERGE there costs a join and a second pass for nothing. Into a table with
    rows, with ``marks``, the files the winners change are written again in one commit
    with the marks (:func:`eventlake.state.rewrite.rewrite_state`): Delta's MERGE costs
    ~1.5 s more per batch. ``read_back``:
    ``decoded`` is a plain read of table files (:func:`eventlake.ingest.state_backlog.read_back`'s),
    which may be read again at the cost of reading them; otherwise the winners are held
    (:func:`eventlake.warehouse.tables.merge_source`). A MERGE that loses a commit race (e.g.
    OPTIMIZE of the table committed while it ran) is retried, see :func:`_merge_batch`.

    Example:
        >>> apply_state(spark, settings, decoded, topics=["customers"])
        {'customers': StateChange(upserted=12, deleted=3, skipped_no_key=0)}
    """
    if not topics:
        return {}
    records = applicable_records(decoded).where(F.col("kafka_topic").isin(topics))
    # Counted while latest_per_key reads the batch: a job of its own cost ~0.8 s per 1M.
    keyless_seen = Observation()
    no_key = F.col("kafka_key").isNull()
    records = records.observe(
        keyless_seen,
        *(
            F.count_if(no_key & (F.col("kafka_topic") == t)).alias(f"_{i}")
            for i, t in enumerate(topics)
        ),
    )
    paths = {topic: ensure_state_table(spark, settings, topic) for topic in topics}
    empty = {t: empty_at(path) for t, path in paths.items()} if marks is not None else {}
    first = {t: version for t, version in empty.items() if version is not None}
    latest = latest_per_key(records)
    # Written once by the first rows' commit, a source that is a plain read of files is
    # not worth holding: one topic, read back, its first rows.
    held = not (read_back and len(topics) == 1 and set(topics) == set(first))
    if held:
        latest = merge_source(latest)
    counted = observed_values(keyless_seen)
    keyless = {t: int(counted.get(f"_{i}", 0)) for i, t in enumerate(topics)}
    try:
        return _merge_batch(spark, settings, paths, latest, first, keyless, marks)
    finally:
        release(latest)  # the held rows, or the winners' coordinates under them


def _merge_batch(
    spark: SparkSession,
    settings: Settings,
    paths: dict[str, str],
    latest: DataFrame,
    first: dict[str, int],
    keyless: dict[str, int],
    marks: StateMarks | None,
) -> dict[str, StateChange]:
    changes: dict[str, StateChange] = {}
    for topic, path in paths.items():
        source = latest.where(F.col("kafka_topic") == topic)
        skipped = keyless.get(topic, 0)
        if topic in first and marks is not None:
            # Tombstones delete nothing in a table with no rows: the rest is its rows.
            inserts = source.where(~F.col("_tombstone")).select(*EVENT_COLUMNS)
            written = marks.commit_first_rows(settings, topic, inserts, first[topic])
            if written is not None:
                changes[topic] = StateChange(upserted=written, skipped_no_key=skipped)
                continue
        if marks is not None:
            rewritten = _rewrite_with_marks(spark, settings, topic, path, source, marks)
            if rewritten is not None:
                upserted, deleted = rewritten
                changes[topic] = StateChange(upserted, deleted, skipped_no_key=skipped)
                continue
        values: dict[str, str | Column] = {c: f"s.{c}" for c in EVENT_COLUMNS}
        confs = dict(MATERIALIZED_SOURCE_CONFS)
        if marks is not None:
            confs.update(fenced_merge(marks.ledger, path, topic))
        with session_conf(spark, confs):
            # Running the same MERGE again on the new snapshot is safe: it applies the
            # same latest-per-key rows.
            upserted, deleted = merge_retried(
                partial(_merge_latest, spark, path, source, values),
                what=f"state {topic}",
                table=f"state/{topic}",
                then="the events landed; run ingest again once maintenance of the table "
                "(eventlake maintain) has finished, and the state catches up from where "
                "it stands.",
            )
        if marks is not None:
            marks.commit(settings, topic)
        changes[topic] = StateChange(upserted=upserted, deleted=deleted, skipped_no_key=skipped)
    return changes


def _rewrite_with_marks(
    spark: SparkSession,
    settings: Settings,
    topic: str,
    path: str,
    winners: DataFrame,
    marks: StateMarks,
) -> tuple[int, int] | None:
    """The batch's winners applied by :func:`eventlake.state.rewrite.rewrite_state`, in
    one commit with the marks: (upserted, deleted); None, with nothing committed, when
    the table's files cannot be read as they are or changed meanwhile (the caller then
    MERGEs, which retries such races)."""
    from eventlake.state.rewrite import rewrite_state

    marks.ledger.marks(path, STATE, [topic])  # the version the check of moved marks starts from
    try:
        rewritten = rewrite_state(spark, marks.ledger, path, winners)
        if rewritten is None:
            return None
        marks.commit(settings, topic, rewritten.pending)
    except FilesChangedError as changed:
        # One line, as a MERGE's retry prints: another writer (OPTIMIZE) committed first.
        first_line = str(changed).splitlines()[0][:200]
        _log.info(
            f"state {topic}: the table's files changed under the batch's rewrite "
            f"({first_line}); merging instead"
        )
        return None
    return rewritten.upserted, rewritten.deleted


def commit_state_marks(
    ledger: Ledger,
    settings: Settings,
    topic: str,
    ends: PartitionOffsets,
    *,
    caught_up_ms: int | None,
    note: str,
    batch: int | None = None,
) -> int:
    """Record in ``state/<topic>`` that every record of ``topic`` below ``ends`` is applied
    (a mark never moves back), and when it last had read the whole log (``caught_up_ms``,
    None: not now); a commit with no rows. Returns the table version.

    Example:
        >>> commit_state_marks(ledger, settings, "customers", {("customers", 0): 120},
        ...                    caught_up_ms=1764050000000, note="batch 7")
        12
    """
    path = str(state_path(settings, topic))
    ledger.marks(path, STATE, [topic])  # the version the check of moved marks starts from
    pending = ledger.write(path, None)
    return _commit_marks(ledger, path, topic, ends, pending, caught_up_ms, note, batch)


def commit_first_rows(
    ledger: Ledger,
    settings: Settings,
    topic: str,
    rows: DataFrame,
    version: int,
    ends: PartitionOffsets,
    *,
    caught_up_ms: int | None,
    note: str,
    batch: int | None = None,
) -> int | None:
    """:func:`commit_state_marks` with ``rows`` (state rows: the table's columns) added as
    the table's first rows, in the same commit; how many it added. ``version``: one at
    which the table had no rows (:func:`eventlake.warehouse.delta_log.empty_at`). None, with nothing
    committed, when a commit since added rows, or another process adds some meanwhile.

    Example:
        >>> commit_first_rows(ledger, settings, "customers", winners, 0,
        ...                   {("customers", 0): 120}, caught_up_ms=None, note="batch 0")
        90046
    """
    path = str(state_path(settings, topic))
    ledger.marks(path, STATE, [topic])
    pending = ledger.write(path, rows, empty_at=version)
    if pending is None:
        return None
    try:
        _commit_marks(
            ledger, path, topic, ends, pending, caught_up_ms, note, batch, changes_rows=True
        )
    except FilesChangedError:
        return None
    return int(pending.rows())


def _commit_marks(
    ledger: Ledger,
    path: str,
    topic: str,
    ends: PartitionOffsets,
    pending: Any,
    caught_up_ms: int | None,
    note: str,
    batch: int | None,
    *,
    changes_rows: bool = False,
) -> int:
    """``changes_rows``: ``pending`` changes the table's rows, so the commit moves the
    fence too (marks alone, after a MERGE that moved it, do not)."""
    extra = {caught_up_key(topic): caught_up_ms} if caught_up_ms is not None else {}
    if changes_rows:
        extra.update(ledger.fenced(path, topic))
    of_topic = {k: v for k, v in ends.items() if k[0] == topic}
    # A commit that loses to the compaction check recording a risk (a property change) is
    # made on the new version by the ledger; one whose marks moved is refused.
    return ledger.commit(path, pending, STATE, of_topic, note=note, batch=batch, extra=extra)
