"""The ledger: per table, job, topic and partition, the next Kafka offset that has landed,
kept in the Delta table itself, in the same commit as the rows that land it.

Every way of landing a topic (a stream, a scheduled run, a backfill, a full refresh, a
reconcile) reads these marks, lands only records at or above them and moves them in its
commit. A Spark checkpoint is only a cache of where a stream is: when it lags behind the
ledger its records below the marks are dropped before they are written; a new or lost
checkpoint starts at the marks.

A mark is a Delta ``txn`` action (as kafka-delta-ingest keeps its offsets): app id
``eventlake/<job>/<topic>/<partition>``, version = the next offset. Delta keeps them in its
checkpoints, delta-rs reads them (``DeltaTable.transaction_version``), and Delta refuses a
commit that sets a mark another commit set since the marks were read
(:class:`LedgerMovedError`): two processes landing one partition never both commit it.

Per table, what a mark means:

* ``events``, job ``ingest``: every record of the partition below the mark is in events or
  rejects. A batch commits its rejects first, then its events (always, with no rows if it
  has none): the events marks are where ingest stands.
* ``rejects``, job ``ingest``: every ingest reject below the mark is in rejects (moved only
  by batches that have rejects, so it may trail the events mark).
* ``state/<topic>``, job ``state``: every record below the mark is applied to the state
  table. Moved after the MERGE (a replayed MERGE of the same records is a no-op) and by
  reconcile. ``eventlake/state-caught-up/<topic>`` holds the last time (ms) the state
  table had read everything written before it: the compaction-risk clock.
* ``rejects``, job ``republish:<target>``: the records republish has sent to ``target``
  (or rejected).

A lease per topic (a lock file under ``<warehouse>/_ledger``) serializes the processes of
one machine that land a topic, batch by batch: a reconcile waits for a stream's batch to
end, the stream's next batch waits for the reconcile.

Example:
    >>> ledger = Ledger(spark)
    >>> ledger.marks(events_path, INGEST, ["orders"])
    {('orders', 0): 1200, ('orders', 1): 1187}
"""

from __future__ import annotations

import fcntl
import json
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.checkpoint import holder_record
from eventlake.errors import TryAgainLater
from eventlake.tables import delta_rs_table, retry_conflicts

#: Prefix of every ledger key (a Delta txn app id).
KEY_PREFIX: Final = "eventlake"
#: The jobs that keep marks.
INGEST: Final = "ingest"
STATE: Final = "state"
#: Key of the state table's compaction-risk clock: ``eventlake/state-caught-up/<topic>``.
CAUGHT_UP: Final = "state-caught-up"
#: Delta versions whose transaction API :class:`io.eventlake.ledger.DeltaLedger` was
#: checked with; another version is refused until it is checked (tests/test_ledger.py).
CHECKED_DELTA_VERSIONS: Final = frozenset({"4.4.0"})
#: Folder of the topic leases under the warehouse.
LEASE_FOLDER: Final = "_ledger"
#: A lease file's name: ``<topic><LEASE_SUFFIX>``.
LEASE_SUFFIX: Final = ".lease"
#: How long a lander waits for another holder of a topic's lease by default.
LEASE_WAIT_SECONDS: Final = 900.0

#: (topic, partition) -> next offset.
Marks = dict[tuple[str, int], int]


class LedgerMovedError(TryAgainLater, RuntimeError):
    """Another process landed the same partitions since this one read the marks; nothing
    of this commit was committed."""


class LedgerConflictError(TryAgainLater, RuntimeError):
    """Another writer changed the table's metadata between this commit's start and its
    end in a way that could make its files wrong (a column removed or retyped, a CHECK
    constraint added), or kept changing it; nothing of this commit was committed, and no
    mark moved."""


class _MetadataChanged(RuntimeError):
    """One commit attempt lost to a change of its table's metadata (Delta's message)."""


class FilesChangedError(RuntimeError):
    """A commit of rows computed from a table's files at a version (its first rows,
    ``Ledger.write(empty_at=...)``; its rewritten files, :meth:`Ledger.rewrite`) found data
    files another process added or removed since; nothing was committed."""


class LedgerVersionError(RuntimeError):
    """The Delta version in use is not one the ledger's commit path was checked with."""


class LeaseTimeoutError(TryAgainLater, RuntimeError):
    """A topic's lease stayed held by another process; the message names it, and
    ``holder`` says who holds it (job, pid, host, since)."""

    def __init__(self, message: str, holder: str = "another process") -> None:
        super().__init__(message)
        self.holder = holder


def ledger_key(job: str, topic: str, partition: int) -> str:
    """The Delta txn app id of one mark.

    Example:
        >>> ledger_key("ingest", "orders", 3)
        'eventlake/ingest/orders/3'
    """
    return f"{KEY_PREFIX}/{job}/{topic}/{partition}"


def caught_up_key(topic: str) -> str:
    """The key of the state table's compaction-risk clock (version: epoch ms).

    Example:
        >>> caught_up_key("customers")
        'eventlake/state-caught-up/customers'
    """
    return f"{KEY_PREFIX}/{CAUGHT_UP}/{topic}"


def check_delta_version() -> str:
    """The delta-spark version in use, refused with a clear message when the ledger's
    commit path (Delta's transaction API, an internal) was not checked with it.

    Example:
        >>> check_delta_version()
        '4.4.0'
    """
    version = metadata.version("delta-spark")
    if version not in CHECKED_DELTA_VERSIONS:
        raise LedgerVersionError(
            f"delta-spark {version} is not a version eventlake's ledger was checked with "
            f"({sorted(CHECKED_DELTA_VERSIONS)}): it commits through Delta's transaction API, "
            "which is internal. Run tests/test_ledger.py against it, then add it to "
            "eventlake.ledger.CHECKED_DELTA_VERSIONS."
        )
    return version


def read_marks(path: str | Path, job: str, topics: Iterable[str]) -> tuple[int, Marks]:
    """The table's version and the marks of ``job`` for ``topics``, read with delta-rs
    (no Spark). Partitions are numbered from 0 and every landing writes all it read, so
    the first partition without a mark ends a topic. (-1, {}) for a table not there yet.

    Example:
        >>> read_marks("/wh/events", "ingest", ["orders"])
        (42, {('orders', 0): 1200, ('orders', 1): 1187})
    """
    table = delta_rs_table(path)
    if table is None:
        return -1, {}
    marks: Marks = {}
    for topic in topics:
        partition = 0
        while (mark := table.transaction_version(ledger_key(job, topic, partition))) is not None:
            marks[(topic, partition)] = int(mark)
            partition += 1
    return int(table.version()), marks


def landed_version(path: str | Path) -> int | None:
    """The table's current version (delta-rs, no Spark); None when it has no commit yet.

    Example:
        >>> landed_version("/wh/events")
        42
    """
    table = delta_rs_table(path)
    return None if table is None else int(table.version())


def read_caught_up(path: str | Path, topic: str) -> int | None:
    """When (epoch ms) the state table at ``path`` last had read everything written to
    ``topic`` before that time; None when never (or no table).

    Example:
        >>> read_caught_up("/wh/state/customers", "customers")
        1764050000000
    """
    table = delta_rs_table(path)
    if table is None:
        return None
    version = table.transaction_version(caught_up_key(topic))
    return None if version is None else int(version)


def topic_marks(marks: Marks, topic: str) -> dict[int, int]:
    """One topic's marks by partition.

    Example:
        >>> topic_marks({("a", 0): 5, ("b", 0): 7}, "a")
        {0: 5}
    """
    return {p: o for (t, p), o in marks.items() if t == topic}


def only_missing(
    records: DataFrame,
    marks: Marks,
    starts: Marks | None,
    *,
    topic: str = "kafka_topic",
    partition: str = "kafka_partition",
    offset: str = "kafka_offset",
) -> DataFrame:
    """``records`` without those below the marks (landed before: a replay, a backfill,
    another process); as they are when the batch starts (``starts``) at or above every
    mark, which spares the filter in the common case.

    Example:
        >>> only_missing(batch, {("orders", 0): 1200}, starts=None, topic="topic", ...)
    """
    if starts is not None and all(starts.get(k, 0) >= m for k, m in marks.items()):
        return records
    return records.where(unlanded(marks, topic=topic, partition=partition, offset=offset))


def position(*tables: Marks) -> Marks:
    """Where a run over several tables stands: per partition the lowest mark of the
    tables (a partition missing from one of them: unknown there, so left out).

    Example:
        >>> position({("a", 0): 9}, {("a", 0): 5})
        {('a', 0): 5}
    """
    if not tables:
        return {}
    keys = set(tables[0]).intersection(*tables[1:])
    return {key: min(table[key] for table in tables) for key in sorted(keys)}


def unlanded(
    marks: Marks,
    *,
    topic: str = "kafka_topic",
    partition: str = "kafka_partition",
    offset: str = "kafka_offset",
) -> Column:
    """Rows not yet landed: at or above their partition's mark (no mark: all).

    Example:
        >>> decoded.where(unlanded({("orders", 0): 1200}))
    """
    if not marks:
        return F.lit(True)
    lookup = F.create_map(
        *[item for (t, p), o in sorted(marks.items()) for item in (F.lit(f"{t}/{p}"), F.lit(o))]
    )
    key = F.concat_ws("/", F.col(topic), F.col(partition).cast("string"))
    return F.col(offset) >= F.coalesce(lookup[key], F.lit(0).cast("long"))


@dataclass
class _TableLedger:
    """What one process knows of a table's marks, as of ``version``."""

    version: int
    #: (job, topic, partition) -> mark
    marks: dict[tuple[str, str, int], int] = field(default_factory=dict)
    #: The (job, topic) pairs whose every partition is in ``marks``.
    read: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class Ledger:
    """One process's view of the ledger: marks read once per table and kept current by
    its own commits; a commit that finds them moved forgets them (and raises).

    Example:
        >>> ledger = Ledger(spark)
        >>> pending = ledger.write(events_path, rows)
        >>> ledger.commit(events_path, pending, INGEST, {("orders", 0): 1300}, note="batch 7")
        43
    """

    spark: SparkSession
    _tables: dict[str, _TableLedger] = field(default_factory=dict)
    #: Names this process in the topic leases it takes (see :meth:`leases`).
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        check_delta_version()

    @contextmanager
    def leases(
        self,
        warehouse: Path,
        topics: Iterable[str],
        *,
        job: str,
        wait_seconds: float = LEASE_WAIT_SECONDS,
    ) -> Iterator[None]:
        """Hold the leases of ``topics`` (:func:`topic_leases`) while the block runs; when
        another process held one of them since this one did, forget every mark known:
        it may have moved them.

        Example:
            >>> with ledger.leases(settings.warehouse, ["orders"], job="ingest"):
            ...     land_batch(spark, batch, ledger=ledger, ...)
        """
        with topic_leases(
            warehouse, topics, job=job, token=self.token, wait_seconds=wait_seconds
        ) as others_held:
            if others_held:
                self._tables.clear()
            yield

    def marks(self, path: str, job: str, topics: Iterable[str]) -> Marks:
        """The marks of ``job`` for ``topics`` in the table at ``path``."""
        wanted = sorted(set(topics))
        table = self._tables.get(path)
        if table is None or any((job, t) not in table.read for t in wanted):
            version, fresh = read_marks(path, job, wanted)
            if table is None or version != table.version:
                # Another process committed since: what this one knew may be stale.
                table = self._tables[path] = _TableLedger(version)
            table.marks.update({(job, t, p): o for (t, p), o in fresh.items()})
            table.read.update((job, t) for t in wanted)
        return {(t, p): o for (j, t, p), o in table.marks.items() if j == job and t in wanted}

    def forget(self, path: str) -> None:
        """Drop what this process knows of ``path``'s marks (read again on next use)."""
        self._tables.pop(path, None)

    def write(self, path: str, rows: DataFrame | None, *, empty_at: int | None = None) -> Any:
        """Write ``rows`` (None: none) as data files of the table at ``path``, uncommitted.

        ``empty_at``: the rows are to be the table's first, and it had no data file at
        that version (:func:`eventlake.tables.empty_at`); None (nothing written) when a
        commit since added some, and its :meth:`commit` raises
        :class:`FilesChangedError` when another process adds some before it lands.

        Example:
            >>> pending = ledger.write(state_table, first_rows, empty_at=empty_at(state_table))
        """
        jvm = self.spark._jvm
        ledger = jvm.io.eventlake.ledger.DeltaLedger  # type: ignore[union-attr]
        if empty_at is not None:
            if rows is None:
                raise ValueError("a write into an empty table needs its rows")
            return ledger.writeIntoEmpty(self.spark._jsparkSession, path, rows._jdf, empty_at)
        return ledger.write(self.spark._jsparkSession, path, None if rows is None else rows._jdf)

    def rewrite(self, path: str, rows: DataFrame, read_at: int, removed: Mapping[str, int]) -> Any:
        """Write ``rows`` (the table's columns and Delta's ``_change_type``: null for the
        table's rows, the change for its Change Data Feed) as data files of the table at
        ``path`` replacing the files ``removed`` (path as the log has it -> size), all
        computed from the table's files at version ``read_at``; uncommitted. None (nothing
        written) when a commit since added or removed files; its :meth:`commit` raises
        :class:`FilesChangedError` when another process does before it lands.

        Example:
            >>> pending = ledger.rewrite(state_table, rows, 41, {"part-0.parquet": 2048})
        """
        jvm = self.spark._jvm
        paths = jvm.java.util.ArrayList()  # type: ignore[union-attr]
        sizes = jvm.java.util.ArrayList()  # type: ignore[union-attr]
        for name, size in removed.items():
            paths.add(name)
            sizes.add(size)
        return jvm.io.eventlake.ledger.DeltaLedger.rewrite(  # type: ignore[union-attr]
            self.spark._jsparkSession, path, rows._jdf, read_at, paths, sizes
        )

    def _commit_once(self, path: str, pending: Any, java_marks: Any, since: int, note: str) -> int:
        """One attempt of :meth:`commit`: Delta's refusals as the ledger's errors."""
        from py4j.protocol import Py4JJavaError

        jvm = self.spark._jvm
        try:
            return int(
                jvm.io.eventlake.ledger.DeltaLedger.commit(  # type: ignore[union-attr]
                    pending, java_marks, since, note
                )
            )
        except Exception as error:
            # A Java exception comes as Py4JJavaError, or as delta's own Python class of the
            # same name once delta.exceptions is imported (it registers the conversion).
            name = (
                str(error.java_exception.getClass().getName())
                if isinstance(error, Py4JJavaError)
                else type(error).__name__
            )
            message = (
                str(error.java_exception.getMessage())
                if isinstance(error, Py4JJavaError)
                else str(error)
            )
            if name.endswith(("LedgerMovedException", "ConcurrentTransactionException")):
                self.forget(path)
                raise LedgerMovedError(
                    f"another process landed the same partitions meanwhile ({message}); "
                    "nothing of this commit was committed: run the job again, it starts "
                    "where the tables stand"
                ) from None
            if name.endswith("MetadataChangedException"):
                raise _MetadataChanged(message) from None
            if name.endswith(_FILES_CHANGED):
                # Only a commit computed from the table's files (empty_at, rewrite) reads
                # the table: another process added or removed files meanwhile.
                raise FilesChangedError(message) from None
            raise

    def commit(
        self,
        path: str,
        pending: Any,
        job: str,
        marks: Marks,
        *,
        note: str,
        batch: int | None = None,
        extra: Mapping[str, int] | None = None,
    ) -> int:
        """Commit ``pending``'s files with ``job``'s ``marks`` (a mark never moves back)
        and ``extra`` keys; returns the table version. Raises :class:`LedgerMovedError`
        when another process set one of these marks since this one read them.

        A commit that lost to a change of the table's metadata (another process set a
        property, e.g. the compaction check, or added a column) commits the same files on
        the new version (:func:`eventlake.tables.retry_conflicts`); raises
        :class:`LedgerConflictError` when that change could make the files wrong (a column
        removed or changed, a CHECK constraint added: see ``DeltaLedger.renewed``) or kept
        coming back."""
        table = self._tables.get(path) or _TableLedger(-1)
        moved = {(t, p): max(o, table.marks.get((job, t, p), o)) for (t, p), o in marks.items()}
        keys = {ledger_key(job, t, p): o for (t, p), o in moved.items()}
        keys.update(extra or {})
        jvm = self.spark._jvm
        java_marks = jvm.java.util.HashMap()  # type: ignore[union-attr]
        for key, value in keys.items():
            java_marks.put(key, value)
        renewable = [pending]

        def attempt() -> int:
            try:
                return self._commit_once(
                    path, renewable[0], java_marks, table.version, commit_note(job, note, batch)
                )
            except _MetadataChanged as lost:
                renewed = _renewed(jvm, renewable[0])
                if renewed is None:
                    raise LedgerConflictError(
                        f"{path}: its metadata changed while this commit ran and its files "
                        f"cannot be committed on the new version ({lost}); nothing was "
                        "committed: run the job again"
                    ) from None
                renewable[0] = renewed
                raise

        try:
            version = retry_conflicts(
                attempt,
                what=f"ledger {path}: committing the same files on the table's new version",
                retryable=(_MetadataChanged,),
            )
        except _MetadataChanged as lost:
            raise LedgerConflictError(
                f"{path}: its metadata kept changing while this commit ran ({lost}); nothing "
                "was committed: run the job again"
            ) from None
        if table.version < 0 or version != table.version + 1:
            # Others committed in between: they did not set these marks (checked), but
            # may have set others this process knew.
            table = self._tables[path] = _TableLedger(version)
        table.version = version
        table.marks.update({(job, t, p): o for (t, p), o in moved.items()})
        table.read.update((job, t) for t, _ in moved)
        return version


#: Delta's refusals of a commit that read the table's files (``ConcurrentAppendException``,
#: ``ConcurrentDeleteReadException``, ``ConcurrentDeleteDeleteException``) and the ledger's.
_FILES_CHANGED: Final = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "FilesChangedException",
)


def _renewed(jvm: Any, pending: Any) -> Any:
    """``DeltaLedger.renewed``: ``pending``'s files on the table's new version (None when
    they cannot be committed there); :class:`FilesChangedError` for rows computed from the
    table's files when files changed since."""
    from py4j.protocol import Py4JJavaError

    try:
        return jvm.io.eventlake.ledger.DeltaLedger.renewed(pending)
    except Py4JJavaError as error:
        if str(error.java_exception.getClass().getName()).endswith("FilesChangedException"):
            raise FilesChangedError(str(error.java_exception.getMessage())) from None
        raise


def commit_note(job: str, note: str, batch: int | None = None) -> str:
    """The ``userMetadata`` of a ledger commit (``DESCRIBE HISTORY`` shows it): the job,
    what landed it and the stream's batch id.

    Example:
        >>> commit_note("ingest", "ingest-topics_orders", 7)
        '{"eventlake_job": "ingest", "eventlake_run": "ingest-topics_orders", "eventlake_batch": 7}'
    """
    fields: dict[str, object] = {"eventlake_job": job, "eventlake_run": note}
    if batch is not None:
        fields["eventlake_batch"] = batch
    return json.dumps(fields)


def lease_path(warehouse: Path, topic: str) -> Path:
    """The lock file of a topic's lease."""
    return warehouse / LEASE_FOLDER / f"{topic}{LEASE_SUFFIX}"


def leased_topics(warehouse: Path) -> list[str]:
    """The topics a job has landed (or tried to) in this warehouse: those with a lease
    file, which every landing takes and none deletes.

    Example:
        >>> leased_topics(settings.warehouse)
        ['customers', 'orders']
    """
    folder = warehouse / LEASE_FOLDER
    return sorted(path.name[: -len(LEASE_SUFFIX)] for path in folder.glob(f"*{LEASE_SUFFIX}"))


@contextmanager
def topic_leases(
    warehouse: Path,
    topics: Iterable[str],
    *,
    job: str,
    token: str | None = None,
    wait_seconds: float = LEASE_WAIT_SECONDS,
) -> Iterator[bool]:
    """Hold the leases of ``topics`` (in name order, so two holders never deadlock) while
    the block runs, waiting up to ``wait_seconds`` for each; the operating system drops
    a lease when its holder dies. Yields whether a holder other than ``token`` held one
    of them last (always True without a token).

    Example:
        >>> with topic_leases(settings.warehouse, ["customers"], job="reconcile"):
        ...     reconcile(...)
    """
    token = token or uuid.uuid4().hex
    with ExitStack() as stack:
        others = [
            stack.enter_context(_topic_lease(warehouse, topic, job, token, wait_seconds))
            for topic in sorted(set(topics))
        ]
        yield any(others)


@contextmanager
def _topic_lease(
    warehouse: Path, topic: str, job: str, token: str, wait_seconds: float
) -> Iterator[bool]:
    path = lease_path(warehouse, topic)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds
    told = False
    with path.open("a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                handle.seek(0)
                text = handle.read()
                holder = json.loads(text) if text.strip() else {}
                who = (
                    f"{holder.get('job', 'another process')} (pid {holder.get('pid', '?')} on "
                    f"{holder.get('host', '?')}, since {holder.get('since', '?')})"
                )
                if time.monotonic() >= deadline:
                    raise LeaseTimeoutError(
                        f"Topic {topic!r} is being landed by {who} for longer than "
                        f"{wait_seconds:.0f} s. Wait for it to finish, or stop it (SIGTERM "
                        "stops it gracefully), then run this again.",
                        holder=who,
                    ) from None
                if not told:
                    print(f"{job}: waiting for topic {topic!r}, held by {who}", flush=True)
                    told = True
                time.sleep(0.1)
        # The file keeps the last holder after it lets go: who held it before us.
        handle.seek(0)
        text = handle.read()
        previous = json.loads(text).get("token") if text.strip() else None
        handle.seek(0)
        handle.truncate()
        holder = holder_record(job, token=token)
        handle.write(json.dumps(holder) + "\n")
        handle.flush()
        try:
            yield previous != token
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
