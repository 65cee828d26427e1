"""The warehouse's tables by name in a shared catalog (a Hive Metastore), so that Spark,
``spark-sql``, Trino and BI tools find them without their paths.

Every table stays where it is and what it is: a Delta table at its path, registered as
an external table (dropping the name never deletes data; delta-rs and others keep
reading by path). Names: schema ``settings.metastore_schema`` (``eventlake``, one per
warehouse when several share a metastore); ``events``, ``rejects``, ``dq_results``
as they are; ``state/<topic>`` as ``state_<topic>`` and ``typed/<type>`` as
``typed_<type>``, with every character that is not a
letter, digit or ``_`` as ``_`` (Hive lowercases names).

Registration is idempotent and safe beside other jobs doing the same: a name another
job registered a moment before is left as it is.

Example:
    >>> catalog_name("state/demo.orders", "eventlake")
    'eventlake.state_demo_orders'
    >>> register_warehouse(spark, settings)       # with settings.metastore_uri set
    ['eventlake.events', 'eventlake.rejects']

:func:`~eventlake.warehouse.names.catalog_name` (the names; no pyspark, so that the
lineage events name tables the same way) is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from eventlake.core.errors import Refused
from eventlake.core.locations import LocationLike
from eventlake.core.settings import Settings
from eventlake.warehouse.names import catalog_name, sql_string, warehouse_tables

__all__ = [
    "CatalogNameClashError",
    "catalog_name",
    "register_table",
    "register_tables",
    "register_warehouse",
    "registered_location",
    "same_location",
]


class CatalogNameClashError(Refused, ValueError):
    """Two of the warehouse's tables would take one catalog name."""


def register_warehouse(spark: SparkSession, settings: Settings) -> list[str]:
    """Register every table of the warehouse that the catalog does not name yet; the
    names registered now (none when ``settings.metastore_uri`` is unset).

    Example:
        >>> register_warehouse(spark, settings)
        ['eventlake.state_customers']
    """
    if not settings.metastore_uri:
        return []
    return register_tables(spark, settings, warehouse_tables(settings))


def register_table(spark: SparkSession, settings: Settings, table: str) -> list[str]:
    """Register the one warehouse table ``table`` (``state/<topic>``, ...) unless the
    catalog names it already, without listing the warehouse: for a job that made that
    table alone (``eventlake reconcile``). The name registered now, if any (none when
    ``settings.metastore_uri`` is unset).

    Example:
        >>> register_table(spark, settings, "state/customers")
        ['eventlake.state_customers']
    """
    if not settings.metastore_uri:
        return []
    return register_tables(spark, settings, [(table, settings.table_path(table))])


def register_tables(
    spark: SparkSession, settings: Settings, tables: Iterable[tuple[str, LocationLike]]
) -> list[str]:
    """Register ``tables`` (warehouse name, path) that the catalog does not name yet, in
    the schema ``settings.metastore_schema`` (made when missing); the names registered
    now. Refused when two would take one name.

    Example:
        >>> register_tables(spark, settings, [("events", settings.table_path("events"))])
        ['eventlake.events']
    """
    wanted: dict[str, str] = {}
    for table, path in tables:
        name = catalog_name(table, settings.metastore_schema)
        if name in wanted:
            raise CatalogNameClashError(
                f"The tables at {wanted[name]} and {path} would both be named {name} in the "
                "catalog: rename one topic's state table, or read them by path."
            )
        wanted[name] = str(path)
    schema = settings.metastore_schema
    _run_tolerating_a_racer(
        spark,
        f"CREATE SCHEMA IF NOT EXISTS {schema}",
        made=lambda: spark.catalog.databaseExists(schema),
    )
    listed = spark.sql(f"SHOW TABLES IN {schema}").collect()
    present = {f"{schema}.{row.tableName}" for row in listed}
    added = []
    for name, location in sorted(wanted.items()):
        if name in present:
            continue
        _run_tolerating_a_racer(
            spark,
            f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION {sql_string(location)}",
            made=partial(spark.catalog.tableExists, name),
        )
        added.append(name)
    return added


def _run_tolerating_a_racer(
    spark: SparkSession, statement: str, *, made: Callable[[], bool]
) -> None:
    """Run a ``... IF NOT EXISTS`` statement; when it fails, whether ``made`` (the name
    is there now) says another job made the same at the same moment: then it is made,
    as asked. The loser's error has no one form: two ``eventlake catalog`` at once gave
    Delta's DELTA_TABLE_ALREADY_EXISTS and, without a condition, Hive's
    AlreadyExistsException (6 of 19 runs of tests/warehouse/test_catalog.py's race failed
    on one or the other before this check; 0 of 10 since)."""
    try:
        spark.sql(statement)
    except AnalysisException:
        if not made():
            raise


def registered_location(spark: SparkSession, name: str) -> str | None:
    """Where the catalog's table ``name`` is (its ``Location``), None when it has none.
    Reads the table's Delta log too: for a check now and then, not every run.

    Example:
        >>> registered_location(spark, "eventlake.events")
        'file:/work/var/warehouse/events'
    """
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    return next((str(row.data_type) for row in rows if row.col_name == "Location"), None)


def same_location(registered: str, path: str) -> bool:
    """Whether a catalog ``Location`` and a warehouse path name one folder (the catalog
    says ``file:/wh/events`` for ``/wh/events``).

    Example:
        >>> same_location("file:/wh/events", "/wh/events")
        True
    """

    def plain(where: str) -> str:
        return where.removeprefix("file://").removeprefix("file:").rstrip("/")

    return plain(registered) == plain(path)
