"""The lease on the object store (eventlake.storage.leases.ObjectLease) on the S3 server:
one holder at a time, renewed while held, expired when its holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from eventlake.core.locations import Location
from eventlake.storage.leases import LeaseHeld, ObjectLease, lease_at


def test_a_warehouse_on_s3_keeps_its_leases_on_the_store(s3_warehouse: Location) -> None:
    assert isinstance(lease_at(s3_warehouse / "_ledger" / "orders.lease"), ObjectLease)


def test_one_holder_at_a_time_and_the_next_one_learns_who_held_it(
    s3_warehouse: Location,
) -> None:
    where = s3_warehouse / "_ledger" / "orders.lease"
    first, second = ObjectLease(where), ObjectLease(where)
    assert first.try_acquire({"job": "ingest", "host": "a"}) == {}
    with pytest.raises(LeaseHeld) as held:
        second.try_acquire({"job": "reconcile", "host": "b"})
    assert held.value.holder == {"job": "ingest", "host": "a"}
    assert second.holder() == {"job": "ingest", "host": "a"}
    first.release()
    assert second.holder() is None
    assert second.try_acquire({"job": "reconcile", "host": "b"}) == {"job": "ingest", "host": "a"}
    second.release()


def test_of_concurrent_takers_exactly_one_holds_it(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_ledger" / "orders.lease"
    leases = [ObjectLease(where) for _ in range(4)]
    won: list[int] = []
    start = threading.Barrier(len(leases))

    def take(index: int) -> None:
        start.wait()
        try:
            leases[index].try_acquire({"taker": index})
            won.append(index)
        except LeaseHeld:
            pass

    takers = [threading.Thread(target=take, args=(i,)) for i in range(len(leases))]
    for taker in takers:
        taker.start()
    for taker in takers:
        taker.join()
    assert len(won) == 1
    leases[won[0]].release()


def test_a_holder_keeps_the_lease_past_its_ttl_by_renewing_it(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_ledger" / "orders.lease"
    holder = ObjectLease(where, ttl_seconds=1.5)
    holder.try_acquire({"job": "stream"})
    time.sleep(4)
    with pytest.raises(LeaseHeld):
        ObjectLease(where).try_acquire({"job": "batch"})
    holder.release()


#: A holder in a process of its own: takes the lease (ttl argv[2], job argv[3]), says so,
#: then sleeps while its renewer keeps the lease, printing its progress lines.
_HOLDER = """
import sys, time
from eventlake.core.locations import Location
from eventlake.core.progress import lines_on_stdout
from eventlake.storage.leases import ObjectLease
lines_on_stdout()
ObjectLease(Location.of(sys.argv[1]), ttl_seconds=float(sys.argv[2])).try_acquire(
    {"job": sys.argv[3]}
)
print("held", flush=True)
time.sleep(600)
"""


def _holder(where: Location, ttl_seconds: float, job: str) -> subprocess.Popen[str]:
    """A process holding the lease at ``where`` (it has said so)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(where), str(ttl_seconds), job],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def _taken_once_expired(lease: ObjectLease, job: str, seconds: float = 10) -> dict[str, object]:
    """``lease`` taken as soon as the other holder's turn expires; who held it before."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return lease.try_acquire({"job": job})
        except LeaseHeld:
            assert time.monotonic() < deadline, "the other holder's lease never expired"
            time.sleep(0.2)


def test_the_lease_of_a_killed_holder_expires_after_its_ttl(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_ledger" / "orders.lease"
    process = _holder(where, 2, "doomed")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    waiting = ObjectLease(where)
    with pytest.raises(LeaseHeld):
        waiting.try_acquire({"job": "next"})
    assert _taken_once_expired(waiting, "next") == {"job": "doomed"}
    waiting.release()


def test_a_release_that_forgets_leaves_no_record(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_checkpoints" / "ingest-orders" / "lock"
    first = ObjectLease(where)
    first.try_acquire({"job": "ingest"})
    first.release(forget=True)
    assert ObjectLease(where).try_acquire({"job": "again"}) == {}


def test_a_holder_stopped_past_its_ttl_loses_the_lease_and_says_so(
    s3_warehouse: Location,
) -> None:
    where = s3_warehouse / "_ledger" / "orders.lease"
    process = _holder(where, 1.5, "stalled")
    try:
        assert process.stdout is not None
        os.kill(process.pid, signal.SIGSTOP)  # as a long GC pause or a frozen VM
        taker = ObjectLease(where)
        assert _taken_once_expired(taker, "next") == {"job": "stalled"}
        os.kill(process.pid, signal.SIGCONT)
        line = process.stdout.readline()
        assert "lost while held" in line and "next took it" in line, line
        assert taker.holder() == {"job": "next"}
        taker.release()
    finally:
        process.kill()
        process.wait()


def test_a_killed_holders_lease_is_waited_out_and_taken(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_checkpoints" / "ingest-orders.lock"
    process = _holder(where, 2, "doomed")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    waits: list[dict[str, object]] = []
    taker = ObjectLease(where)
    assert taker.try_acquire_unless_alive({"job": "next"}, waits.append) == {"job": "doomed"}
    assert waits == [{"job": "doomed"}]
    taker.release()


def test_a_live_holder_that_renews_its_lease_is_not_waited_out(s3_warehouse: Location) -> None:
    where = s3_warehouse / "_checkpoints" / "ingest-orders.lock"
    process = _holder(where, 2, "alive")
    try:
        with pytest.raises(LeaseHeld) as held:
            ObjectLease(where).try_acquire_unless_alive({"job": "next"}, lambda _: None)
        assert held.value.holder == {"job": "alive"}
    finally:
        process.kill()
        process.wait()
