"""The ledger's marks: per table, job, topic and partition the next offset to land, kept
as Delta ``txn`` actions in the rows' own commits, read here without Spark (delta-rs).

Example:
    >>> read_marks(settings.table_path("events"), INGEST, ["demo.orders"])
    (7, {('demo.orders', 0): 1200})
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from eventlake.core.locations import LocationLike
from eventlake.warehouse.delta_log import delta_rs_table

#: Prefix of every ledger key (a Delta txn app id).
KEY_PREFIX: Final = "eventlake"


#: The jobs that keep marks.
INGEST: Final = "ingest"


STATE: Final = "state"


#: The typed tables' marks (:mod:`eventlake.typed.step`): the events below them are in
#: the table, or not of its type.
TYPED: Final = "typed"


#: Key of the state table's compaction-risk clock: ``eventlake/state-caught-up/<topic>``.
CAUGHT_UP: Final = "state-caught-up"


#: Key of the state table's fence: ``eventlake/state-applied/<topic>``, a count of the
#: commits that changed the table's rows (see :func:`fence_key`).
STATE_APPLIED: Final = "state-applied"


#: (topic, partition) -> offset: where a range of records starts or ends.
PartitionOffsets = dict[tuple[str, int], int]
#: (topic, partition) -> the next offset to land: what the ledger holds for a job.
Marks = PartitionOffsets


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


def fence_key(topic: str) -> str:
    """The key of a state table's fence (version: how many commits changed its rows).

    Every commit that changes a state table's rows sets it one higher than the value it
    read, a MERGE through Delta's idempotent-DML settings (``txnAppId``/``txnVersion``),
    the others through the ledger; each registers it as read. So two of them that read
    the same value cannot both commit, and one that read an older value is skipped or
    refused: what makes a state table exactly once without a shared lock
    (docs/guarantees.md).

    Example:
        >>> fence_key("customers")
        'eventlake/state-applied/customers'
    """
    return f"{KEY_PREFIX}/{STATE_APPLIED}/{topic}"


def read_marks(path: LocationLike, job: str, topics: Iterable[str]) -> tuple[int, Marks]:
    """The table's version and the marks of ``job`` for ``topics``, read with delta-rs
    (no Spark). Partitions are numbered from 0 and every landing writes all it read, so
    the first partition without a mark ends a topic. (-1, {}) for a table not there yet.

    Example:
        >>> read_marks("/wh/events", "ingest", ["orders"])
        (42, {('orders', 0): 1200, ('orders', 1): 1187})
    """
    version, marks, _ = read_ledger(path, job, topics)
    return version, marks


def read_ledger(
    path: LocationLike, job: str, topics: Iterable[str]
) -> tuple[int, Marks, dict[str, int]]:
    """:func:`read_marks`, and each topic's fence (:func:`fence_key`; 0: none yet) as of
    the same version.

    Example:
        >>> read_ledger("/wh/state/customers", "state", ["customers"])
        (12, {('customers', 0): 120}, {'customers': 7})
    """
    table = delta_rs_table(path)
    if table is None:
        return -1, {}, {}
    marks: Marks = {}
    fences: dict[str, int] = {}
    for topic in topics:
        partition = 0
        while (mark := table.transaction_version(ledger_key(job, topic, partition))) is not None:
            marks[(topic, partition)] = int(mark)
            partition += 1
        fences[topic] = int(table.transaction_version(fence_key(topic)) or 0)
    return int(table.version()), marks, fences


def landed_version(path: LocationLike) -> int | None:
    """The table's current version (delta-rs, no Spark); None when it has no commit yet.

    Example:
        >>> landed_version("/wh/events")
        42
    """
    table = delta_rs_table(path)
    return None if table is None else int(table.version())


def read_caught_up(path: LocationLike, topic: str) -> int | None:
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
