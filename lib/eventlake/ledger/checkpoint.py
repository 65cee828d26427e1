"""Streaming checkpoints that know what they belong to.

Spark's Kafka source happily reuses a checkpoint for another topic set, and a Delta
sink cannot tell a new query from an old one. eventlake writes an identity file next
to Spark's checkpoint data: the source (topics or pattern), the target tables and a
unique id (``app_id``). What has landed is not here but in the tables' ledger
(:mod:`eventlake.ledger.marks`). A checkpoint whose identity does
not match the run is refused.

A streaming run also holds the checkpoint while it runs (:func:`hold_checkpoint`): a
second run on the same checkpoint is refused and told which process holds it.

Example:
    >>> with hold_checkpoint(path, job="ingest"):
    ...     identity = claim_checkpoint(path, source="topics:orders", targets=["/wh/events"])
    >>> identity.app_id
    'eventlake-3f0c...'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Final

from eventlake.core.errors import Refused, TryAgainLater
from eventlake.core.locations import Location
from eventlake.core.progress import progress_log
from eventlake.storage.leases import LEASE_TTL_SECONDS, LeaseHeld, lease_at
from eventlake.storage.store import any_name, make_folder, read_text, write_text

IDENTITY_FILE = "eventlake-identity.json"
#: The characters of a checkpoint name (as of a Kafka topic name).
_FOLDER_CHARACTERS: Final = "A-Za-z0-9._-"
#: What a checkpoint name may hold: one folder name, no path.
_CHECKPOINT_NAME = re.compile(f"[{_FOLDER_CHARACTERS}]{{1,255}}")
_log = progress_log(__name__)
#: Beside the checkpoint folder (``<name>.lock``): inside, it would count as foreign data.
LOCK_SUFFIX = ".lock"


#: The longest default checkpoint name (a run of many topics names them all).
DEFAULT_NAME_LIMIT: Final = 120
#: Characters of the source's SHA-256 a default name ends in when its text is not the
#: source's own: cut to the limit, or several topics or a pattern in folder characters.
_DIGEST_CHARACTERS: Final = 16
_UNSAFE = re.compile(f"[^{_FOLDER_CHARACTERS}]+")


def default_checkpoint_name(job: str, source: str) -> str:
    """The checkpoint of ``job`` reading ``source`` (``topics:a,b`` or ``pattern:p``)
    when a run names none: ``<job>-<source>`` in folder characters, at most
    :data:`DEFAULT_NAME_LIMIT` long. Where that text could be another source's too (cut
    to the limit, or characters replaced: ``topics:a,b`` and the topic ``a_b``), it ends
    in a digest of the whole source, so two sources never share a checkpoint (the second
    would be refused: :func:`claim_checkpoint`).

    Example:
        >>> default_checkpoint_name("ingest", "topics:orders")
        'ingest-topics_orders'
        >>> default_checkpoint_name("ingest", "topics:a,b")
        'ingest-topics_a_b-13487269293e3280'
    """
    name = f"{job}-{_UNSAFE.sub('_', source)}"
    _, _, named = source.partition(":")
    if len(name) <= DEFAULT_NAME_LIMIT and not _UNSAFE.search(named):
        return name
    return _with_digest(name, source)


def route_checkpoint_name(source: str, target: str) -> str:
    """The checkpoint of a republish route from the topic ``source`` to ``target`` when
    a run names none: ``republish-<source>-<target>``, at most :data:`DEFAULT_NAME_LIMIT`
    long. Where that text could be another route's too (a ``-`` in the source: ``a-b`` to
    ``c`` and ``a`` to ``b-c``; or cut to the limit), it ends in a digest of the route.

    Example:
        >>> route_checkpoint_name("orders", "orders-by-customer")
        'republish-orders-orders-by-customer'
        >>> route_checkpoint_name("a-b", "c")
        'republish-a-b-c-0cbe0cdbe236fb1c'
    """
    name = f"republish-{source}-{target}"
    if len(name) <= DEFAULT_NAME_LIMIT and "-" not in source:
        return name
    return _with_digest(name, f"{source}>{target}")


def _with_digest(name: str, source: str) -> str:
    """``name`` cut to leave room for, and ending in, a digest of ``source``."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:_DIGEST_CHARACTERS]
    return f"{name[: DEFAULT_NAME_LIMIT - _DIGEST_CHARACTERS - 1]}-{digest}"


class InvalidCheckpointNameError(Refused, ValueError):
    """A checkpoint name that is not one folder name under the warehouse's checkpoints."""


def check_checkpoint_name(name: str) -> str:
    """``name`` when it is a checkpoint name (letters, digits, ``.``, ``_``, ``-``; not
    ``.`` or ``..``), else :class:`InvalidCheckpointNameError` saying why: a name with a
    path would put the checkpoint outside the warehouse.

    Example:
        >>> check_checkpoint_name("../x")
        Traceback (most recent call last):
        InvalidCheckpointNameError: Checkpoint name '../x' ...
    """
    if not _CHECKPOINT_NAME.fullmatch(name) or name in {".", ".."}:
        raise InvalidCheckpointNameError(
            f"Checkpoint name {name!r} is not a folder name: use letters, digits, '.', '_' "
            "and '-' (at most 255), not '.' or '..'; checkpoints live under "
            "<warehouse>/_checkpoints."
        )
    return name


class CheckpointBusyError(TryAgainLater, RuntimeError):
    """Another process runs a stream on this checkpoint; the message names it."""


class CheckpointMismatchError(Refused, RuntimeError):
    """A checkpoint belongs to another source or other tables."""


@dataclass(frozen=True)
class CheckpointIdentity:
    """What a checkpoint was created for, and its unique id."""

    source: str
    targets: tuple[str, ...]
    app_id: str


def claim_checkpoint(path: Location, *, source: str, targets: list[str]) -> CheckpointIdentity:
    """Return the checkpoint's identity, creating it on first use; refuse a mismatch."""
    identity_file = path / IDENTITY_FILE
    text = read_text(identity_file)
    if text is not None:
        stored = json.loads(text)
        identity = CheckpointIdentity(
            source=stored["source"], targets=tuple(stored["targets"]), app_id=stored["app_id"]
        )
        if identity.source != source or list(identity.targets) != targets:
            raise CheckpointMismatchError(
                f"Checkpoint {path} belongs to source {identity.source!r} writing to "
                f"{list(identity.targets)}, not to source {source!r} writing to {targets}. "
                "Reusing it would skip or mix data. Use another --checkpoint-name, or delete "
                "the checkpoint folder if you really mean to start over."
            )
        return identity
    if any_name(path, lambda name: True):
        raise CheckpointMismatchError(
            f"Checkpoint {path} holds data but no {IDENTITY_FILE}: it was not made by "
            "eventlake for this run. Use another --checkpoint-name."
        )
    make_folder(path)
    identity = CheckpointIdentity(
        source=source, targets=tuple(targets), app_id=f"eventlake-{uuid.uuid4()}"
    )
    payload = asdict(identity)
    payload["targets"] = list(identity.targets)
    # Whole or not at all: a half-written identity would refuse every later run.
    write_text(identity_file, json.dumps(payload, indent=2) + "\n")
    return identity


def holder_record(job: str, **extra: object) -> dict[str, object]:
    """What a lock file says of its holder: pid, host, job, since, command, and ``extra``.

    Example:
        >>> holder_record("ingest", trigger="available-now")["job"]
        'ingest'
    """
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "job": job,
        **extra,
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv)[:500],
    }


def lock_path(checkpoint: Location) -> Location:
    """The lock file of a checkpoint folder."""
    return checkpoint.with_name(checkpoint.name + LOCK_SUFFIX)


def checkpoint_holder(checkpoint: Location) -> dict[str, object] | None:
    """Who holds the checkpoint now (pid, host, job, since), or None when nobody does.

    Example:
        >>> checkpoint_holder(settings.checkpoints / "ingest-topics_orders")
        {'pid': 4242, 'host': 'etl-1', 'job': 'ingest', 'since': '2026-11-24T05:00:00+00:00'}
    """
    return lease_at(lock_path(checkpoint)).holder()


@contextmanager
def hold_checkpoint(
    checkpoint: Location, *, job: str, trigger: str | None = None
) -> Iterator[None]:
    """Hold the checkpoint for this process while the block runs; refuse when another
    live process holds it. A killed stream leaves nothing to clean up: its lock file is
    dropped as it dies, and its lease on an object store, no longer renewed, is waited
    out (at most its TTL) before the checkpoint is taken. The holder's job, trigger,
    pid, host and start time are its record, for ``eventlake status`` and the DAGs.

    Example:
        >>> with hold_checkpoint(settings.checkpoints / "ingest-topics_orders", job="ingest"):
        ...     run_stream(...)
    """
    lease = lease_at(lock_path(checkpoint))
    try:
        lease.try_acquire_unless_alive(
            holder_record(job, trigger=trigger),
            lambda holder: _log.info(
                f"checkpoint {checkpoint}: held by {_described(holder)}, which has not "
                "renewed it yet; waiting for its lease to expire (a killed holder's does "
                f"within {LEASE_TTL_SECONDS:.0f} s)"
            ),
        )
    except LeaseHeld as held:
        holder = held.holder
        raise CheckpointBusyError(
            f"Checkpoint {checkpoint} is held by {_described(holder)}. One checkpoint "
            "takes one stream: "
            "stop that process first (SIGTERM stops it gracefully), or use another "
            "--checkpoint-name."
        ) from None
    try:
        yield
    finally:
        lease.release(forget=True)


def _described(holder: dict[str, Any]) -> str:
    """``ingest (pid 4242 on etl-1, since 2026-11-24T05:00:00+00:00)``: who holds it."""
    return (
        f"{holder.get('job', 'a stream')} (pid {holder.get('pid', 'unknown')} on "
        f"{holder.get('host', 'unknown')}, since {holder.get('since', 'unknown')})"
    )


#: Spark's own checkpoint data, inside eventlake's checkpoint folder (beside its identity).
SPARK_FOLDER: Final = "spark"
