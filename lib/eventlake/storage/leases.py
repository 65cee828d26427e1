"""A lease: one holder at a time of something named in the warehouse (a topic, a
streaming checkpoint), with a record of who holds it (job, pid, host, since).

:class:`Lease` is the protocol the ledger and the checkpoints use, with two
implementations:

* :class:`LockFile`, for a local warehouse: an ``fcntl`` lock on a file in the
  warehouse folder, which the operating system drops when its holder dies (the
  processes of one host);
* :class:`ObjectLease`, for a warehouse on S3: a log of turns, each an object created
  with ``If-None-Match: *`` (one creator wins each turn), renewed by its holder while
  it holds the lease and expired :data:`LEASE_TTL_SECONDS` after its last renewal when
  the holder dies. It needs only an atomic conditional create, which every S3 server
  eventlake supports; the hosts' clocks must agree to within a few seconds (NTP).

Example:
    >>> lease = lease_at(settings.warehouse / "_ledger" / "orders.lease")
    >>> previous = lease.try_acquire({"job": "ingest"})
    >>> lease.release()
"""

from __future__ import annotations

import fcntl
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Final, Protocol

from eventlake.core.errors import EventlakeError
from eventlake.core.locations import Location, LocationLike
from eventlake.core.progress import progress_log
from eventlake.storage import s3_store
from eventlake.storage.store import local_path, on_object_store

_log = progress_log(__name__)

#: Seconds an object-store lease lasts after its last renewal (its holder renews it
#: every third of that); a holder that died lets the next one in after at most this.
LEASE_TTL_SECONDS: Final = 30.0
#: Turns kept behind the latest one (older ones are deleted by the next holder).
_TURNS_KEPT: Final = 4


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

    def try_acquire_unless_alive(
        self, record: Mapping[str, object], waiting: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """As :meth:`try_acquire`, but a holder that may have died is waited out: the
        lease is taken once its holder's last renewal expires, and :class:`LeaseHeld`
        is raised as soon as the holder shows it is alive (it renews the lease).
        ``waiting`` is called once, with the holder's record, when there is a wait."""
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

    def try_acquire_unless_alive(
        self, record: Mapping[str, object], waiting: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        # The operating system drops a dead holder's lock: a held lock has a live holder.
        return self.try_acquire(record)

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


class ObjectLease:
    """A :class:`Lease` on an object store, kept as numbered turns under ``folder``
    (``<folder>/00000000000000000007``): taking the lease is creating the next turn,
    which one writer alone can do. A turn holds the holder's record, its ``lease_token``
    and when it expires (``lease_expires``, epoch seconds); a released turn says so.
    While held, a thread renews the lease with a turn of the same token.

    Example:
        >>> lease = ObjectLease(Location.of("s3a://lake/wh/_ledger/orders.lease"))
        >>> lease.try_acquire({"job": "ingest"})
        {}
    """

    def __init__(
        self,
        folder: Location,
        *,
        ttl_seconds: float = LEASE_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.folder = folder
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._token = uuid.uuid4().hex
        self._record: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._lock = threading.Lock()

    def _turns(self) -> list[int]:
        return sorted(int(name) for name in s3_store.names(self.folder) if name.isdigit())

    def _latest(self) -> tuple[int, dict[str, Any]]:
        """The newest turn's number and content (-1 and {} when there is none)."""
        for number in reversed(self._turns()):
            text = s3_store.read_text(self.folder / f"{number:020d}")
            if text is not None:  # a turn deleted meanwhile: the one before it
                return number, json.loads(text)
        return -1, {}

    def _live(self, turn: Mapping[str, Any]) -> bool:
        return bool(turn) and not turn.get("released") and turn["lease_expires"] > self._clock()

    def _create(self, number: int, record: Mapping[str, Any], *, released: bool) -> bool:
        turn = {
            **record,
            "lease_token": self._token,
            "lease_turn": f"{uuid.uuid4().hex}",  # makes a retried PUT's body its own
            "lease_expires": self._clock() + self.ttl_seconds,
            "released": released,
        }
        return s3_store.create_text(self.folder / f"{number:020d}", json.dumps(turn))

    def try_acquire(self, record: Mapping[str, object]) -> dict[str, Any]:
        number, latest = self._latest()
        if self._live(latest) and latest.get("lease_token") != self._token:
            raise LeaseHeld(_record_of(latest))
        if not self._create(number + 1, record, released=False):
            raise LeaseHeld(_record_of(self._latest()[1]))
        self._record = dict(record)
        self._forget_before(number + 1 - _TURNS_KEPT)
        self._stop.clear()
        self._renewer = threading.Thread(
            target=self._renew_until_released, name="lease-renewer", daemon=True
        )
        self._renewer.start()
        return _record_of(latest) if latest else {}

    def try_acquire_unless_alive(
        self, record: Mapping[str, object], waiting: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """Example:
        >>> lease.try_acquire_unless_alive({"job": "ingest"}, print)  # holder killed
        {'job': 'ingest', 'pid': 4242}
        """
        seen_number, seen = self._latest()
        told = False
        while True:
            try:
                return self.try_acquire(record)
            except LeaseHeld as held:
                number, latest = self._latest()
                if latest.get("lease_token") != seen.get("lease_token") or number > seen_number:
                    raise  # renewed by its holder, or taken by another: a live holder
                if not told:
                    waiting(held.holder)
                    told = True
                left = float(latest.get("lease_expires", 0)) - self._clock()
                time.sleep(min(1.0, max(0.05, left)))

    def _renew_until_released(self) -> None:
        while not self._stop.wait(self.ttl_seconds / 3):
            with self._lock:
                if self._record is None:
                    return
                try:
                    number, latest = self._latest()
                    if latest.get("lease_token") != self._token:
                        # Expired (this process stalled past the TTL) and taken: nothing
                        # is lost, the commits' own checks decide who lands what.
                        _log.info(
                            f"lease {self.folder}: lost while held (it expired and "
                            f"{_record_of(latest).get('job', 'another process')} took it); "
                            "this run's commits are still checked against the others'"
                        )
                        return
                    self._create(number + 1, self._record, released=False)
                except EventlakeError as error:
                    # The store did not answer: try again at the next renewal, which
                    # still comes before the lease expires.
                    _log.info(f"lease {self.folder}: not renewed this time ({error})")

    def release(self, *, forget: bool = False) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        with self._lock:
            record, self._record = self._record, None
        if record is None:
            return
        number, latest = self._latest()
        if latest.get("lease_token") == self._token:
            self._create(number + 1, {} if forget else record, released=True)

    def holder(self) -> dict[str, Any] | None:
        _, latest = self._latest()
        return _record_of(latest) if self._live(latest) else None

    def _forget_before(self, number: int) -> None:
        for old in self._turns():
            if old < number:
                s3_store.delete(self.folder / f"{old:020d}")


def _record_of(turn: Mapping[str, Any]) -> dict[str, Any]:
    """A turn's holder record, without the lease's own fields."""
    own = {"lease_token", "lease_turn", "lease_expires", "released"}
    return {key: value for key, value in turn.items() if key not in own}


def lease_at(location: LocationLike) -> Lease:
    """The lease kept at ``location`` in the warehouse's store: a lock file in a local
    warehouse, an :class:`ObjectLease` on S3.

    Example:
        >>> lease_at("/wh/_ledger/orders.lease").holder() is None
        True
    """
    remote = on_object_store(location)
    if remote is not None:
        return ObjectLease(remote)
    return LockFile(local_path(location))
