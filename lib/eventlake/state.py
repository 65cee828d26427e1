"""Current-state Delta tables of compacted topics: the latest event per record key.

The rule comes from the binding (3.2.2, 3.3.2): in binary mode an event with no data
is a record with no value, which on a compacted topic is a tombstone; a structured
event with no data still has a value and is an ordinary update. A plain Kafka
tombstone (no value, no ce_ headers) deletes too. Records without a key cannot address
state and are only counted; records that are not valid CloudEvents (other rejects) do
not change state.

Each batch is reduced to the last record per key by (partition, offset) and applied
per topic: tombstone -> delete, otherwise upsert. With the batch's marks, in one commit
with them: into a table with no rows yet (a topic's first landing) the winners are
written (:func:`commit_first_rows`), into one with rows the files they change are
written again (:mod:`eventlake.state_rewrite`); otherwise, or when the table's files
changed under that commit, with one Delta MERGE, after which the marks move
(:func:`commit_state_marks`). What the state table has applied is in the ledger
(:mod:`eventlake.ledger`, job ``state``): a batch applies only records at or above those
marks; a MERGE replayed after a crash before its marks applies the same latest records
again, which changes nothing. Change Data Feed is on, so downstream readers see deletes
as deletes.

Example:
    >>> apply_state(spark, settings, decoded_batch, topics=["customers"])
    {'customers': StateChange(upserted=12, deleted=3, skipped_no_key=0)}
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar, cast

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from eventlake.binding import (
    EVENT_COLUMNS,
    KAFKA_RECORD_FIELDS,
    RejectReason,
    decode_records,
    to_events,
)
from eventlake.duplicates import DUPLICATE_EVENT
from eventlake.errors import TryAgainLater
from eventlake.ledger import STATE, FilesChangedError, Ledger, Marks, caught_up_key
from eventlake.lineage import job_run, kafka_dataset, table_dataset
from eventlake.observed import observed_values
from eventlake.settings import Settings
from eventlake.spark import release, session_conf
from eventlake.tables import (
    CONFLICT_ATTEMPTS,
    EVENTS_SCHEMA,
    KAFKA_POSITION_COLUMNS,
    MATERIALIZED_SOURCE_CONFS,
    delta_path_sql,
    empty_at,
    ensure_table,
    merge_source,
    retry_conflicts,
    state_path,
)

T = TypeVar("T")

#: Table property of a state table that may have missed tombstones (JSON: when it was
#: found and the offsets), set by the compaction check and removed by reconcile only.
COMPACTION_RISK_PROPERTY = "eventlake.compactionRisk"
#: Up to this many keys in one batch, :func:`latest_per_key` sends the winning records'
#: coordinates to every task (~50 bytes each); above, both sides are shuffled by key.
BROADCAST_WINNERS_MAX = 1_000_000


@dataclass(frozen=True)
class StateChange:
    """What one application of records did to a state table."""

    upserted: int = 0
    deleted: int = 0
    skipped_no_key: int = 0


def is_tombstone() -> Column:
    """Binary event with no data, or a plain Kafka tombstone (decoded rows)."""
    binary_no_data = (
        F.col("reject_reason").isNull()
        & (F.col("content_mode") == "binary")
        # data, not kafka_value: ingest drops the raw value of valid events from its batch
        # (the events table does not keep it); in binary mode data is the value as-is.
        & F.col("data").isNull()
    )
    plain = F.col("reject_reason") == RejectReason.PLAIN_TOMBSTONE.value
    # Never NULL: a NULL here would make the MERGE skip the row silently.
    return F.coalesce(binary_no_data | plain, F.lit(False))


def applicable_records(decoded: DataFrame) -> DataFrame:
    """Decoded rows that change state: valid events and tombstones (keyed or not)."""
    return decoded.where(F.col("reject_reason").isNull() | is_tombstone()).withColumn(
        "_tombstone", is_tombstone()
    )


def records_from_tables(events: DataFrame, rejects: DataFrame | None = None) -> DataFrame:
    """A batch read back from the events and rejects tables (the rows its commits added),
    shaped as :func:`eventlake.binding.decode_records` rows for :func:`apply_state`: the
    events, the plain tombstones among the rejects, and the events ``--dedup`` rejected as
    repeats, decoded again from their raw records (no other reject changes state).

    Why repeats count: a state table is the topic's latest record per key, as
    :func:`reconcile_state` reads it from the topic (which knows nothing of ``--dedup``)
    and as Kafka's compaction keeps it (which may remove the first and keep the repeat).

    Example:
        >>> records_from_tables(rows_added_by(spark, events, [42], EVENTS_SCHEMA))
    """
    valid = events.select(*EVENT_COLUMNS, F.lit(None).cast("string").alias("reject_reason"))
    if rejects is None:
        return valid
    tombstones = rejects.where(F.col("reason") == RejectReason.PLAIN_TOMBSTONE.value).select(
        *KAFKA_POSITION_COLUMNS, F.col("reason").alias("reject_reason")
    )
    repeats = to_events(
        decode_records(as_kafka_records(rejects.where(F.col("reason") == DUPLICATE_EVENT)))
    ).select(*EVENT_COLUMNS, F.lit(None).cast("string").alias("reject_reason"))
    return valid.unionByName(repeats).unionByName(tombstones, allowMissingColumns=True)


def as_kafka_records(rejects: DataFrame) -> DataFrame:
    """Rejects rows as the Kafka source's rows they were read as (the rejects table keeps
    the raw record), for :func:`eventlake.binding.decode_records`.

    Example:
        >>> decode_records(as_kafka_records(rejects)).select("reject_reason").first()
    """
    return rejects.select(*(F.col(f"kafka_{c}").alias(c) for c in KAFKA_RECORD_FIELDS))


def latest_per_key(records: DataFrame) -> DataFrame:
    """The last record per (topic, key) by (partition, offset); keyless rows dropped.

    Example:
        >>> latest_per_key(applicable_records(decoded)).count()  # one row per key
    """
    keyed = records.where(F.col("kafka_key").isNotNull())
    # Which record wins is decided on four narrow columns (a cached batch is read for those
    # alone), the whole rows are then picked by a semi-join on the record's coordinates.
    # Aggregating whole rows (max_by over a struct of every column) sorted the batch. The
    # two steps keep every aggregate buffer fixed-width, so Spark hashes instead of sorting:
    # the last offset per (key, partition), then the one of the highest partition.
    last_in_partition = keyed.groupBy("kafka_topic", "kafka_key", "kafka_partition").agg(
        F.max("kafka_offset").alias("kafka_offset")
    )
    # Counted while they are held: a count after is a Spark job of its own.
    held = Observation()
    winners = (
        last_in_partition.groupBy("kafka_topic", "kafka_key")
        .agg(
            F.max("kafka_partition").alias("kafka_partition"),
            F.max_by("kafka_offset", "kafka_partition").alias("kafka_offset"),
        )
        .drop("kafka_key")
        .observe(held, F.count(F.lit(1)).alias("winners"))
        .localCheckpoint(eager=True)
    )
    if int(observed_values(held)["winners"]) <= BROADCAST_WINNERS_MAX:
        # The batch then stays where it is: no shuffle of its rows.
        winners = F.broadcast(winners)
    coordinates = ["kafka_topic", "kafka_partition", "kafka_offset"]
    return keyed.join(winners, coordinates, "left_semi").select(*EVENT_COLUMNS, "_tombstone")


def ensure_state_table(spark: SparkSession, settings: Settings, topic: str) -> str:
    """Create ``state/<topic>`` (events-table columns, Change Data Feed on) if missing;
    return its path."""
    path = str(state_path(settings, topic))
    ensure_table(spark, path, EVENTS_SCHEMA, change_data_feed=True)
    return path


def _merge_metrics(spark: SparkSession, path: str) -> dict[str, int]:
    from delta.tables import DeltaTable

    last = DeltaTable.forPath(spark, path).history(1).collect()[0]
    if last["operation"] != "MERGE":
        return {}
    return {k: int(v) for k, v in (last["operationMetrics"] or {}).items() if v.isdigit()}


def _merge_latest(
    spark: SparkSession, path: str, source: DataFrame, values: dict[str, str | Column]
) -> tuple[int, int]:
    """One MERGE of latest-per-key rows into a state table: tombstone -> delete, otherwise
    upsert. Returns (rows upserted, rows deleted), as the MERGE itself reports them (no
    read of the table's history: each costs the driver a Delta log read)."""
    from delta.tables import DeltaTable

    counts = (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.kafka_key = s.kafka_key")
        .whenMatchedDelete(condition="s._tombstone")
        .whenMatchedUpdate(condition="NOT s._tombstone", set=values)
        .whenNotMatchedInsert(condition="NOT s._tombstone", values=values)
        .execute()
        .first()
    )
    if counts is None:
        return 0, 0
    return (
        int(counts["num_updated_rows"] or 0) + int(counts["num_inserted_rows"] or 0),
        int(counts["num_deleted_rows"] or 0),
    )


@dataclass(frozen=True)
class StateMarks:
    """What :func:`apply_state` records with each state table it changed: the marks of
    :func:`commit_state_marks` (its arguments but the topic)."""

    ledger: Ledger
    ends: Marks
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
            self.ledger, path, topic, self.ends, pending, self.caught_up_ms, self.note, self.batch
        )

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
    with the marks (:func:`eventlake.state_rewrite.rewrite_state`): Delta's MERGE costs
    ~1.5 s more per batch. ``read_back``:
    ``decoded`` is a plain read of table files (:func:`eventlake.ingest.batch.read_back`'s),
    which may be read again at the cost of reading them; otherwise the winners are held
    (:func:`eventlake.tables.merge_source`). A MERGE that loses a commit race (e.g.
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


class StateConflictError(TryAgainLater, RuntimeError):
    """A state table kept changing under a MERGE (ingest's or reconcile's) through every
    attempt; nothing of the MERGE was committed, and the message says what to do."""


def merge_conflicts() -> tuple[type[Exception], ...]:
    """The commit conflicts after which a state MERGE is run again on the table's new
    snapshot: Delta committed nothing for it. Another writer committed between its read
    and its commit: OPTIMIZE rewriting the files it read (ConcurrentDeleteRead/
    DeleteDelete), new files where it looked (ConcurrentAppend), or a change of the
    table's properties (MetadataChanged: the compaction check recording a risk beside a
    running stream).

    Example:
        >>> retry_conflicts(merge, what="state orders", retryable=merge_conflicts())
    """
    from delta.exceptions import (
        ConcurrentAppendException,
        ConcurrentDeleteDeleteException,
        ConcurrentDeleteReadException,
        MetadataChangedException,
    )

    return (
        ConcurrentAppendException,
        ConcurrentDeleteReadException,
        ConcurrentDeleteDeleteException,
        MetadataChangedException,
    )


def merge_retried(merge: Callable[[], T], *, what: str, table: str, then: str) -> T:
    """``merge()`` run again on the table's new snapshot when another writer commits
    first (:func:`merge_conflicts`, :func:`eventlake.tables.retry_conflicts`); when every
    attempt loses, a :class:`StateConflictError` that says so in a sentence, ending with
    ``then`` (what the user does next), instead of Delta's exception.

    Example:
        >>> merge_retried(merge, what="state orders", table="state/orders",
        ...               then="run ingest again once maintenance has finished")
        StateConflictError: state orders: state/orders kept changing under the MERGE ...
    """
    conflicts = merge_conflicts()
    try:
        return retry_conflicts(merge, what=what, retryable=conflicts)
    except conflicts as error:
        raise StateConflictError(
            f"{what}: {table} kept changing under the MERGE ({type(error).__name__}, "
            f"{CONFLICT_ATTEMPTS} attempts); nothing of it was committed: {then}"
        ) from None


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
        with session_conf(spark, MATERIALIZED_SOURCE_CONFS):
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
    """The batch's winners applied by :func:`eventlake.state_rewrite.rewrite_state`, in
    one commit with the marks: (upserted, deleted); None, with nothing committed, when
    the table's files cannot be read as they are or changed meanwhile (the caller then
    MERGEs, which retries such races)."""
    from eventlake.state_rewrite import rewrite_state

    marks.ledger.marks(path, STATE, [topic])  # the version the check of moved marks starts from
    try:
        rewritten = rewrite_state(spark, marks.ledger, path, winners)
        if rewritten is None:
            return None
        marks.commit(settings, topic, rewritten.pending)
    except FilesChangedError as changed:
        # One line, as a MERGE's retry prints: another writer (OPTIMIZE) committed first.
        first_line = str(changed).splitlines()[0][:200]
        print(
            f"state {topic}: the table's files changed under the batch's rewrite "
            f"({first_line}); merging instead",
            flush=True,
        )
        return None
    return rewritten.upserted, rewritten.deleted


@dataclass(frozen=True)
class ReconcileReport:
    """What ``eventlake reconcile`` changed to make the state table equal the topic."""

    topic: str
    records_read: int
    keys_on_topic: int
    inserted: int
    updated: int
    deleted: int

    def line(self) -> str:
        return (
            f"reconcile {self.topic}: read={self.records_read} keys={self.keys_on_topic} "
            f"inserted={self.inserted} updated={self.updated} deleted={self.deleted}"
        )


def recorded_compaction_risk(spark: SparkSession, path: str) -> dict[str, Any] | None:
    """The compaction risk recorded with the state table at ``path`` (None: none).

    Example:
        >>> recorded_compaction_risk(spark, str(state_path(settings, "customers")))
        {'found_at': '2026-11-24T05:00:00+00:00', 'next_offsets': {'0': 12}, ...}
    """
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, path).detail().first()
    text = ((detail["properties"] if detail else None) or {}).get(COMPACTION_RISK_PROPERTY)
    return cast(dict[str, Any], json.loads(text)) if text else None


def record_compaction_risk(spark: SparkSession, path: str, risk: dict[str, Any]) -> None:
    """Keep ``risk`` with the state table until a reconcile clears it."""
    text = json.dumps(risk, sort_keys=True).replace("'", "''")
    spark.sql(
        f"ALTER TABLE {delta_path_sql(path)} SET TBLPROPERTIES "
        f"('{COMPACTION_RISK_PROPERTY}' = '{text}')"
    )


def commit_state_marks(
    ledger: Ledger,
    settings: Settings,
    topic: str,
    ends: Marks,
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
    ends: Marks,
    *,
    caught_up_ms: int | None,
    note: str,
    batch: int | None = None,
) -> int | None:
    """:func:`commit_state_marks` with ``rows`` (state rows: the table's columns) added as
    the table's first rows, in the same commit; how many it added. ``version``: one at
    which the table had no rows (:func:`eventlake.tables.empty_at`). None, with nothing
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
        _commit_marks(ledger, path, topic, ends, pending, caught_up_ms, note, batch)
    except FilesChangedError:
        return None
    return int(pending.rows())


def _commit_marks(
    ledger: Ledger,
    path: str,
    topic: str,
    ends: Marks,
    pending: Any,
    caught_up_ms: int | None,
    note: str,
    batch: int | None,
) -> int:
    extra = {caught_up_key(topic): caught_up_ms} if caught_up_ms is not None else {}
    of_topic = {k: v for k, v in ends.items() if k[0] == topic}
    # A commit that loses to the compaction check recording a risk (a property change) is
    # made on the new version by the ledger; one whose marks moved is refused.
    return ledger.commit(path, pending, STATE, of_topic, note=note, batch=batch, extra=extra)


def reconcile_state(spark: SparkSession, settings: Settings, topic: str) -> ReconcileReport:
    """Read the topic from earliest to its current end, compute the latest record per
    key, and make ``state/<topic>`` equal to it: upsert what differs, delete keys that
    no longer exist on the topic (tombstoned, or compacted away unseen).

    Holds the topic's lease (:func:`eventlake.ledger.topic_leases`): a stream that keeps
    the state table waits for it between two batches, and its next batch applies only
    records after the offsets read here, which the state marks then hold. A MERGE that
    loses a commit race to maintenance (OPTIMIZE) is retried. With its OpenLineage run
    events when lineage is configured (:mod:`eventlake.lineage`).
    """
    with job_run(
        spark,
        f"reconcile.{topic}",
        inputs=[kafka_dataset(settings.bootstrap_servers, topic)],
        outputs=[table_dataset(state_path(settings, topic))],
    ):
        return _reconcile_state(spark, settings, topic)


def _reconcile_state(spark: SparkSession, settings: Settings, topic: str) -> ReconcileReport:
    from delta.tables import DeltaTable

    from eventlake.binding import decode_records
    from eventlake.compaction import topic_offsets
    from eventlake.kafka import check_connection, kafka_source_options, require_topics
    from eventlake.ranges import offsets_json

    # Refused in a sentence, before any lease: no broker, or no such topic.
    check_connection(settings)
    require_topics(settings, [topic])
    ledger = Ledger(spark)
    with ledger.leases(settings.warehouse, [topic], job="reconcile"):
        read_at_ms = int(time.time() * 1000)
        _, head = topic_offsets(settings, topic)
        ends = {(topic, p): offset for p, offset in head.items()}
        records = (
            spark.read.format("kafka")
            .options(
                **kafka_source_options(
                    settings,
                    {"subscribe": topic},
                    starting_offsets="earliest",
                    ending_offsets=offsets_json(ends),
                )
            )
            .load()
        )
        decoded = decode_records(records).cache()
        try:
            read = decoded.count()
            latest = merge_source(latest_per_key(applicable_records(decoded)))
            wanted = latest.where(~F.col("_tombstone"))
            keys = wanted.count()
            path = ensure_state_table(spark, settings, topic)
            version = empty_at(path)
            first = (
                None
                if version is None
                else commit_first_rows(
                    ledger,
                    settings,
                    topic,
                    wanted.select(*EVENT_COLUMNS),
                    version,
                    ends,
                    caught_up_ms=read_at_ms,
                    note="reconcile",
                )
            )
            values: dict[str, str | Column] = {c: f"s.{c}" for c in EVENT_COLUMNS}
            differs = (
                "NOT (t.kafka_partition <=> s.kafka_partition "
                "AND t.kafka_offset <=> s.kafka_offset)"
            )

            def merge() -> None:
                (
                    DeltaTable.forPath(spark, path)
                    .alias("t")
                    .merge(wanted.alias("s"), "t.kafka_key = s.kafka_key")
                    .whenMatchedUpdate(condition=differs, set=values)
                    .whenNotMatchedInsert(values=values)
                    .whenNotMatchedBySourceDelete()
                    .execute()
                )

            if first is not None:
                # A table with no rows (a full refresh's new one): written with the marks.
                metrics = {"numTargetRowsInserted": first}
            else:
                with session_conf(spark, MATERIALIZED_SOURCE_CONFS):
                    # The lease keeps state writers out; maintenance may still rewrite
                    # the files (OPTIMIZE): the MERGE then commits nothing, and is run
                    # again on the new snapshot.
                    merge_retried(
                        merge,
                        what=f"reconcile {topic}",
                        table=f"state/{topic}",
                        then="run it again once maintenance of the table (eventlake "
                        "maintain) has finished.",
                    )
                metrics = _merge_metrics(spark, path)
                commit_state_marks(
                    ledger, settings, topic, ends, caught_up_ms=read_at_ms, note="reconcile"
                )
            # The table now equals the topic: whatever it may have missed is repaired.
            # (Delta commits an UNSET even of a property that is not there.)
            if recorded_compaction_risk(spark, path) is not None:
                spark.sql(
                    f"ALTER TABLE {delta_path_sql(path)} UNSET TBLPROPERTIES IF EXISTS "
                    f"('{COMPACTION_RISK_PROPERTY}')"
                )
        finally:
            decoded.unpersist()
    return ReconcileReport(
        topic=topic,
        records_read=read,
        keys_on_topic=keys,
        inserted=metrics.get("numTargetRowsInserted", 0),
        updated=metrics.get("numTargetRowsUpdated", 0),
        deleted=metrics.get("numTargetRowsDeleted", 0),
    )
