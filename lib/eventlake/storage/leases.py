"""A lease: one holder at a time of something named in the warehouse (a topic, a
streaming checkpoint), with a record of who holds it (job, pid, host, since).

:class:`Lease` is the protocol the ledger and the checkpoints use; :class:`LockFile` is
its one implementation today: an ``fcntl`` lock on a file in the warehouse folder, which
the operating system drops when its holder dies (processes of one host share it). A
lease for another store is added here, beside it.

Example:
    >>> lease = lease_at(settings.warehouse / "_ledger" / "orders.lease")
    >>> previous = lease.try_acquire({"job": "ingest"})
    >>> lease.release()
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Protocol

from eventlake.core.locations import LocationLike
from eventlake.storage.store import local_path


class LeaseHeld(Exception):  # a state the caller decides on, not an eventlake error
    """The lease is held by another holder, whose record ``holder`` is."""

    def __init__(self, holder: Mapping[str, Any]) -> None:
        super().__init__(f"held by {dict(holder)}")
        self.holder = dict(holder)


class Lease(Protocol):
    """One holder at a time; each holder leaves a record of itself."""

    def try_acquire(self, record: Mapping[str, object]) -> dict[str, Any]:
        """Take the lease now with ``record`` as its holder's, and return the record the
        lease held before (empty when none); raise :class:`LeaseHeld` when another holds
        it."""
        ...

    def release(self, *, forget: bool = False) -> None:
        """Let go; ``forget`` also clears the holder's record (else it stays as the last
        holder's)."""
        ...

    def holder(self) -> dict[str, Any] | None:
        """The record of whoever holds the lease now, or None when it is free."""
        ...


class LockFile:
    """A :class:`Lease` as an exclusive ``fcntl`` lock on a local file holding the record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def try_acquire(self, record: Mapping[str, object]) -> dict[str, Any]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read()
            handle.close()
            raise LeaseHeld(json.loads(text) if text.strip() else {}) from None
        handle.seek(0)
        text = handle.read()
        previous = json.loads(text) if text.strip() else {}
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(dict(record)) + "\n")
        handle.flush()
        self._handle = handle
        return dict(previous)

    def release(self, *, forget: bool = False) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        if forget:
            handle.seek(0)
            handle.truncate()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()

    def holder(self) -> dict[str, Any] | None:
        try:
            handle = self.path.open("r")
        except FileNotFoundError:
            return None
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = handle.read()
                return json.loads(text) if text.strip() else {"pid": "unknown"}
            fcntl.flock(handle, fcntl.LOCK_UN)
        return None


def lease_at(location: LocationLike) -> Lease:
    """The lease kept at ``location`` in the warehouse's store.

    Example:
        >>> lease_at("/wh/_ledger/orders.lease").holder() is None
        True
    """
    return LockFile(local_path(location))
