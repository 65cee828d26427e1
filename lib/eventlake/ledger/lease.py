"""The per-topic lease: writers of one topic's state take turns (a lock file beside the
warehouse's tables), waited for up to a bound.

Example:
    >>> with topic_leases(settings.warehouse, ["demo.orders"]):
    ...     apply_state(...)
"""

from __future__ import annotations

import fcntl
import json
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Final

from eventlake.core.errors import TryAgainLater
from eventlake.ledger.checkpoint import holder_record

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
