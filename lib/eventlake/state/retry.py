"""A state commit that lost a race to another writer: the error, which Delta errors
that is, and the retry.

Example:
    >>> merge_retried(merge, what="state batch", table=path, then="retrying")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from eventlake.core.errors import TryAgainLater
from eventlake.warehouse.conflicts import CONFLICT_ATTEMPTS, retry_conflicts

T = TypeVar("T")


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
    first (:func:`merge_conflicts`, :func:`eventlake.warehouse.conflicts.retry_conflicts`); when
    every
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
