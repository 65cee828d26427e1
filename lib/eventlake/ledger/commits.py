"""A batch's rows committed with the ledger's marks in one Delta commit (lib/jvm's
``DeltaLedger``, through Delta's transaction API), refused should another writer have
moved the marks; the filters that keep landed records out.

Example:
    >>> Ledger(spark, settings).write(frame, table="events", job=INGEST, marks=marks)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.core.engine_internals import CHECKED_VERSIONS
from eventlake.core.errors import EventlakeError, Refused, TryAgainLater
from eventlake.core.locations import Location
from eventlake.ledger.lease import LEASE_WAIT_SECONDS, topic_leases
from eventlake.ledger.marks import (
    STATE,
    Marks,
    PartitionOffsets,
    commit_note,
    fence_key,
    ledger_key,
    read_ledger,
)
from eventlake.warehouse.conflicts import retry_conflicts

#: Delta versions whose transaction API :class:`io.eventlake.ledger.DeltaLedger` was
#: checked with; another version is refused until it is checked (tests/ledger/test_ledger.py).
#: The delta-spark versions the ledger's commits were checked with (one list of all
#: engines' checked versions: :mod:`eventlake.core.engine_internals`).
CHECKED_DELTA_VERSIONS: Final = CHECKED_VERSIONS["delta-spark"]


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


class FilesChangedError(EventlakeError, RuntimeError):
    """A commit of rows computed from a table's files at a version (its first rows,
    ``Ledger.write(empty_at=...)``; its rewritten files, :meth:`Ledger.rewrite`) found data
    files another process added or removed since; nothing was committed."""


class LedgerVersionError(Refused, RuntimeError):
    """The Delta version in use is not one the ledger's commit path was checked with."""


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
            "which is internal. Run tests/ledger/test_ledger.py against it, then add it to "
            "eventlake.core.engine_internals.CHECKED_VERSIONS."
        )
    return version


def only_missing(
    records: DataFrame,
    marks: Marks,
    starts: PartitionOffsets | None,
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
    #: topic -> the state table's fence (:func:`eventlake.ledger.marks.fence_key`).
    fences: dict[str, int] = field(default_factory=dict)


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
        warehouse: Location,
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
        unknown_fence = job == STATE and table is not None and not set(wanted) <= set(table.fences)
        if table is None or unknown_fence or any((job, t) not in table.read for t in wanted):
            version, fresh, fences = read_ledger(path, job, wanted)
            if table is None or version != table.version:
                # Another process committed since: what this one knew may be stale.
                table = self._tables[path] = _TableLedger(version)
            table.marks.update({(job, t, p): o for (t, p), o in fresh.items()})
            table.read.update((job, t) for t in wanted)
            if job == STATE:
                table.fences.update(fences)
        return {(t, p): o for (j, t, p), o in table.marks.items() if j == job and t in wanted}

    def fence(self, path: str, topic: str) -> int:
        """The state table's fence for ``topic`` as of the version its marks were read at
        (:meth:`marks` with job ``state`` first; 0: no table yet). A commit that changes
        the table's rows sets it one higher (:meth:`fenced`, or a MERGE's ``txnVersion``).

        Example:
            >>> ledger.marks(path, STATE, ["customers"]); ledger.fence(path, "customers")
            7
        """
        self.marks(path, STATE, [topic])
        table = self._tables.get(path)
        return 0 if table is None else table.fences.get(topic, 0)

    def fenced(self, path: str, topic: str) -> dict[str, int]:
        """The key a commit that changes the state table's rows adds (``extra`` of
        :meth:`commit`): the fence one higher, refused should another commit have moved it.

        Example:
            >>> ledger.fenced(path, "customers")
            {'eventlake/state-applied/customers': 8}
        """
        return {fence_key(topic): self.fence(path, topic) + 1}

    def forget(self, path: str) -> None:
        """Drop what this process knows of ``path``'s marks (read again on next use)."""
        self._tables.pop(path, None)

    def write(self, path: str, rows: DataFrame | None, *, empty_at: int | None = None) -> Any:
        """Write ``rows`` (None: none) as data files of the table at ``path``, uncommitted.

        ``empty_at``: the rows are to be the table's first, and it had no data file at
        that version (:func:`eventlake.warehouse.delta_log.empty_at`); None (nothing written) when a
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
        the new version (:func:`eventlake.warehouse.conflicts.retry_conflicts`); raises
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
        fence_prefix = fence_key("")
        table.fences.update(
            {
                k[len(fence_prefix) :]: v
                for k, v in (extra or {}).items()
                if k.startswith(fence_prefix)
            }
        )
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
