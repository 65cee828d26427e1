"""The warehouse's tables by name: ``events``, ``rejects``, ``dq_results``, one
``state/<topic>`` per compacted topic, where each lives, and which exist. No pyspark:
the DAG files, ``eventlake status`` and the Airflow status page import these.

Example:
    >>> state_path(load_settings(warehouse=Path("/wh")), "demo.orders")
    PosixPath('/wh/state/demo.orders')
"""

from __future__ import annotations

import re
from typing import Final

from eventlake.core.locations import Location, LocationLike
from eventlake.core.settings import Settings
from eventlake.core.topic_names import check_topic_name
from eventlake.storage.store import any_name, names

#: A file of a Delta log that makes a version: a commit or a checkpoint (its parts).
_LOG_VERSION_FILE: Final = re.compile(r"\d{20}\.(json|checkpoint\b.*\.(parquet|json))$")


EVENTS = "events"


REJECTS = "rejects"


#: Results of the data-quality checks (written by eventlake.quality.results).
DQ_RESULTS = "dq_results"


#: Folder of the state tables under the warehouse: ``state/<topic>``.
STATE_FOLDER: Final = "state"


#: Folder of the typed tables under the warehouse: ``typed/<type>``, one per event type
#: (:mod:`eventlake.typed`).
TYPED_FOLDER: Final = "typed"


#: ``rejected_by`` of the ingest job's rejects; republish writes ``republish:<target>``.
INGEST_JOB: Final = "ingest"


#: Where a record was in Kafka: the key of every row of events and rejects (with
#: ``rejected_by`` for rejects, which two jobs may write for one record).
KAFKA_COORDINATES: Final = ("kafka_topic", "kafka_partition", "kafka_offset")


def catalog_name(table: str, schema: str) -> str:
    """The catalog name in ``schema`` of the warehouse table ``table`` (as
    :func:`warehouse_tables` names it): ``events``, ``rejects``, ``dq_results`` as they
    are, ``state/<topic>`` as ``state_<topic>``, ``typed/<type>`` as ``typed_<type>``,
    every character that is not a letter,
    digit or ``_`` as ``_`` (Hive lowercases names). Here, without pyspark, for the
    catalog (:mod:`eventlake.warehouse.catalog`) and the lineage events alike.

    Example:
        >>> catalog_name("events", "eventlake"), catalog_name("state/Orders-v2", "eventlake")
        ('eventlake.events', 'eventlake.state_orders_v2')
    """
    folder, _, rest = table.partition("/")
    base = f"{folder}_{rest}" if rest and folder in (STATE_FOLDER, TYPED_FOLDER) else table
    return f"{schema}.{re.sub(r'[^a-z0-9_]', '_', base.lower())}"


def state_table(topic: str) -> str:
    """``state/<topic>``: the warehouse's name of a compacted topic's state table (as
    :func:`warehouse_tables` names it), the topic's name checked.

    Example:
        >>> state_table("customers")
        'state/customers'
    """
    return f"{STATE_FOLDER}/{check_topic_name(topic)}"


def state_path(settings: Settings, topic: str) -> Location:
    """``<warehouse>/state/<topic>``, the state table of a compacted topic.

    Example:
        >>> state_path(settings, "customers")
        PosixPath('/data/warehouse/state/customers')
    """
    return settings.warehouse / STATE_FOLDER / check_topic_name(topic)


def is_delta_table(path: Location) -> bool:
    """Whether ``path`` holds a Delta table: a log with at least one commit (a cheap file
    check, no Spark job). A log folder with none is a table another process is creating
    (its first commit is being written): readers and maintenance treat it as not there
    yet, where Delta would call it "not a Delta table".

    Example:
        >>> is_delta_table(settings.table_path(EVENTS))
        True
    """
    # Stops at the first commit or checkpoint file: a stream's log holds many.
    return any_name(path / "_delta_log", lambda name: bool(_LOG_VERSION_FILE.match(name)))


def delta_path_sql(path: LocationLike) -> str:
    """A Delta table's path as a SQL table name, ``delta.`<path>```, with backticks in
    the path doubled: the one way paths go into SQL text.

    Example:
        >>> delta_path_sql("/wh/state/a`b")
        'delta.`/wh/state/a``b`'
    """
    return "delta.`" + str(path).replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslash escapes, Spark's default).

    Example:
        >>> print(sql_string("it's"))
        'it\\'s'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def warehouse_tables(settings: Settings) -> list[tuple[str, Location]]:
    """Every Delta table under the warehouse, as (name, path): the top-level tables
    (``events``, ``rejects``, ``dq_results``, ...) sorted, then ``state/<topic>`` and
    ``typed/<type>`` sorted.
    Folders starting with ``_`` (checkpoints, Spark's own) are not tables, nor is one
    whose first commit is still being written (:func:`is_delta_table`).

    Example:
        >>> [name for name, _ in warehouse_tables(settings)]
        ['events', 'rejects', 'state/customers', 'typed/com_example_order_paid']
    """
    root = settings.warehouse
    found: list[tuple[str, Location]] = []
    for folder, prefix in (
        (root, ""),
        (root / STATE_FOLDER, f"{STATE_FOLDER}/"),
        (root / TYPED_FOLDER, f"{TYPED_FOLDER}/"),
    ):
        for name in names(folder):
            path = folder / name
            if name.startswith("_") or not is_delta_table(path):
                continue
            found.append((prefix + name, path))
    return found


def state_table_topics(settings: Settings) -> list[str]:
    """The topics that have a state table in the warehouse, sorted.

    Example:
        >>> state_table_topics(settings)
        ['customers']
    """
    prefix = f"{STATE_FOLDER}/"
    return [
        name[len(prefix) :] for name, _ in warehouse_tables(settings) if name.startswith(prefix)
    ]


#: Table property of a state table that may have missed tombstones (JSON: when it was
#: found and the offsets), set by the compaction check and removed by reconcile only.
COMPACTION_RISK_PROPERTY = "eventlake.compactionRisk"
