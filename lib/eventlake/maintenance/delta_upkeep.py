"""Delta's own upkeep of a table: OPTIMIZE (small files compacted into larger ones)
and VACUUM (files no version still needs deleted after the retention), with the
metrics each reports.

Example:
    >>> optimize_and_vacuum(spark, settings, path, retention_hours=None).files_removed
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from eventlake.core.settings import Settings
from eventlake.maintenance.request import SAFETY_RETENTION_HOURS, check_retention
from eventlake.spark.session import session_conf
from eventlake.warehouse.names import (
    delta_path_sql,
    warehouse_tables,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: Delta refuses a VACUUM retention below the table's retention while this is true.
RETENTION_CHECK_CONF: Final = "spark.databricks.delta.retentionDurationCheck.enabled"


#: Delta (4.x) ignores a VACUUM retention other than 0 hours while this is true (its
#: default) and keeps the table's ``delta.deletedFileRetentionDuration`` instead: a
#: retention asked for (``--retention-hours 720`` to keep a month of history) would be
#: 168 hours. A Delta internal, checked with the versions in
#: :data:`eventlake.core.engine_internals.CHECKED_VERSIONS`, with its test there.
RETENTION_ARGUMENT_IGNORED_CONF: Final = (
    "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"
)


#: Tasks of VACUUM's file listing (Spark's default, 10000, is far too many for small tables).
LISTING_PARALLELISM_CONF: Final = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


_VACUUM_END: Final = "VACUUM END"


_VACUUM_START: Final = "VACUUM START"


_OPTIMIZE: Final = "OPTIMIZE"


@dataclass(frozen=True)
class MaintenanceResult:
    """What OPTIMIZE and VACUUM did to one table (or would do, in a dry run).

    ``files_compacted`` and ``files_written`` come from OPTIMIZE's metrics
    (``numFilesRemoved``/``numFilesAdded``); ``files_removed`` from VACUUM's
    (``numDeletedFiles``), or in a dry run the files VACUUM would delete.
    """

    table: str
    path: str
    files_compacted: int
    files_written: int
    files_removed: int
    retention_hours: float | None
    dry_run: bool = False

    def line(self) -> str:
        """One human-readable summary line.

        Example:
            >>> MaintenanceResult("events", "/w/events", 3, 1, 3, 168.0).line()
            'events: optimize compacted 3 files into 1; vacuum (retain 168 h) removed 3 files'
        """
        retain = "table default" if self.retention_hours is None else f"{self.retention_hours:g} h"
        if self.dry_run:
            return (
                f"{self.table}: dry run, nothing changed; vacuum (retain {retain}) "
                f"would remove {self.files_removed} files"
            )
        return (
            f"{self.table}: optimize compacted {self.files_compacted} files into "
            f"{self.files_written}; vacuum (retain {retain}) removed {self.files_removed} files"
        )


def maintenance_conf(settings: Settings, *, below_safety: bool) -> dict[str, str]:
    """Session confs of the OPTIMIZE/VACUUM calls, restored afterwards.

    VACUUM lists the table's files with ``spark.sql.sources.parallelPartitionDiscovery
    .parallelism`` tasks, 10000 by default: on a small machine that alone takes minutes
    for a table of two files, so it is cut to ``shuffle_partitions``. VACUUM keeps the
    retention it is given (:data:`RETENTION_ARGUMENT_IGNORED_CONF`). Delta's retention
    check is off only when a retention below the safety default was explicitly allowed.

    Example:
        >>> maintenance_conf(load_settings(shuffle_partitions=2), below_safety=True)
        {'spark.sql.sources.parallelPartitionDiscovery.parallelism': '2', 'spark...': 'false', ...}
    """
    conf = {
        LISTING_PARALLELISM_CONF: str(settings.shuffle_partitions),
        RETENTION_ARGUMENT_IGNORED_CONF: "false",
    }
    if below_safety:
        conf[RETENTION_CHECK_CONF] = "false"
    return conf


def _int_metrics(metrics: Mapping[str, Any] | None) -> dict[str, int]:
    return {k: int(v) for k, v in (metrics or {}).items() if v is not None and str(v).isdigit()}


def _latest_version(spark: SparkSession, path: str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, path).history(1).collect()[0]["version"])


def _commits_since(spark: SparkSession, path: str, version: int) -> list[Any]:
    """History rows newer than ``version``, newest first."""
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history(10)
    return history.where(history.version > version).orderBy(history.version.desc()).collect()


def _optimize(spark: SparkSession, path: str) -> tuple[int, int]:
    """OPTIMIZE (small files bin-packed into larger ones); (files removed, files added)."""
    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, path).optimize().executeCompaction().collect()
    metrics = rows[0]["metrics"] if rows else None
    if metrics is None:
        return 0, 0
    return int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])


def _vacuum(spark: SparkSession, path: str, retention_hours: float | None) -> int:
    """VACUUM; the files it deleted, from the VACUUM END commit's metrics."""
    from delta.tables import DeltaTable

    before = _latest_version(spark, path)
    DeltaTable.forPath(spark, path).vacuum(retention_hours)
    for commit in _commits_since(spark, path, before):
        metrics = _int_metrics(commit["operationMetrics"])
        if commit["operation"] == _VACUUM_END:
            return metrics.get("numDeletedFiles", 0)
        if commit["operation"] == _VACUUM_START:
            return metrics.get("numFilesToDelete", 0)
    return 0


def _vacuum_dry_run(spark: SparkSession, path: str, retention_hours: float | None) -> int:
    """The number of files VACUUM would delete (``VACUUM ... DRY RUN`` commits nothing)."""
    retain = "" if retention_hours is None else f" RETAIN {float(retention_hours)} HOURS"
    return spark.sql(f"VACUUM {delta_path_sql(path)}{retain} DRY RUN").count()


def optimize_and_vacuum(
    spark: SparkSession,
    settings: Settings,
    retention_hours: float | None = None,
    allow_below_safety: bool = False,
    *,
    dry_run: bool = False,
) -> list[MaintenanceResult]:
    """OPTIMIZE then VACUUM every Delta table of the warehouse (see :func:`warehouse_tables`).

    ``retention_hours=None`` keeps each table's own retention (Delta's default, 168 h).
    A retention below 168 h raises :class:`MaintenanceError` before any table is touched,
    unless ``allow_below_safety``; then Delta's own check
    (``spark.databricks.delta.retentionDurationCheck.enabled``) is turned off for these
    VACUUMs only and restored afterwards. ``dry_run`` changes nothing and reports the
    files VACUUM would delete.

    Example:
        >>> for result in optimize_and_vacuum(spark, settings, 0, allow_below_safety=True):
        ...     print(result.line())
        events: optimize compacted 3 files into 1; vacuum (retain 0 h) removed 3 files
        state/customers: optimize compacted 2 files into 1; vacuum (retain 0 h) removed 2 files
    """
    check_retention(retention_hours, allow_below_safety)
    below_safety = retention_hours is not None and retention_hours < SAFETY_RETENTION_HOURS
    results: list[MaintenanceResult] = []
    for name, table_path in warehouse_tables(settings):
        path = str(table_path)
        with session_conf(spark, maintenance_conf(settings, below_safety=below_safety)):
            if dry_run:
                compacted, written = 0, 0
                removed = _vacuum_dry_run(spark, path, retention_hours)
            else:
                compacted, written = _optimize(spark, path)
                removed = _vacuum(spark, path, retention_hours)
        results.append(
            MaintenanceResult(name, path, compacted, written, removed, retention_hours, dry_run)
        )
    return results
