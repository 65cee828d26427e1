"""The per-topic lease: writers of one topic take turns, each waiting up to a bound
(a :class:`~eventlake.storage.leases.Lease` of the warehouse's store, named by topic).

Example:
    >>> with topic_leases(settings.warehouse, ["demo.orders"]):
    ...     apply_state(...)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Final

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from eventlake.core.errors import TryAgainLater
from eventlake.core.locations import Location
from eventlake.core.progress import progress_log
from eventlake.ledger.checkpoint import holder_record
from eventlake.storage.leases import LeaseHeld, lease_at
from eventlake.storage.store import names

_log = progress_log(__name__)

#: Folder of the topic leases under the warehouse.
LEASE_FOLDER: Final = "_ledger"


#: A lease file's name: ``<topic><LEASE_SUFFIX>``.
LEASE_SUFFIX: Final = ".lease"


#: How long a lander waits for another holder of a topic's lease by default.
LEASE_WAIT_SECONDS: Final = 900.0


class LeaseTimeoutError(TryAgainLater, RuntimeError):
    """A topic's lease stayed held by another process; the message names it, and
    ``holder`` says who holds it (job, pid, host, since)."""

    def __init__(self, message: str, holder: str = "another process") -> None:
        super().__init__(message)
        self.holder = holder


def lease_path(warehouse: Location, topic: str) -> Location:
    """The lock file of a topic's lease."""
    return warehouse / LEASE_FOLDER / f"{topic}{LEASE_SUFFIX}"


def leased_topics(warehouse: Location) -> list[str]:
    """The topics a job has landed (or tried to) in this warehouse: those with a lease
    file, which every landing takes and none deletes.

    Example:
        >>> leased_topics(settings.warehouse)
        ['customers', 'orders']
    """
    found = names(warehouse / LEASE_FOLDER)
    return [name[: -len(LEASE_SUFFIX)] for name in found if name.endswith(LEASE_SUFFIX)]


@contextmanager
def topic_leases(
    warehouse: Location,
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
    warehouse: Location, topic: str, job: str, token: str, wait_seconds: float
) -> Iterator[bool]:
    lease = lease_at(lease_path(warehouse, topic))
    told = False

    def say_waiting(state: RetryCallState) -> None:
        nonlocal told
        if not told and state.outcome is not None:
            _log.info(
                f"{job}: waiting for topic {topic!r}, held by {_who(state.outcome.exception())}"
            )
            told = True

    retrying = Retrying(
        retry=retry_if_exception_type(LeaseHeld),
        stop=stop_after_delay(wait_seconds),
        wait=wait_fixed(0.1),
        before_sleep=say_waiting,
        reraise=True,
    )
    try:
        # The lease keeps the last holder's record after it lets go: who held it before.
        previous = retrying(lease.try_acquire, holder_record(job, token=token))
    except LeaseHeld as held:
        who = _who(held)
        raise LeaseTimeoutError(
            f"Topic {topic!r} is being landed by {who} for longer than "
            f"{wait_seconds:.0f} s. Wait for it to finish, or stop it (SIGTERM "
            "stops it gracefully), then run this again.",
            holder=who,
        ) from None
    try:
        yield previous.get("token") != token
    finally:
        lease.release()


def _who(held: BaseException | None) -> str:
    """The holder of a lease, in words: ``ingest (pid 12 on host-a, since ...)``."""
    holder = held.holder if isinstance(held, LeaseHeld) else {}
    return (
        f"{holder.get('job', 'another process')} (pid {holder.get('pid', '?')} on "
        f"{holder.get('host', '?')}, since {holder.get('since', '?')})"
    )
