"""Table maintenance: Delta OPTIMIZE and VACUUM of every warehouse table, and the
compaction sweep that reconciles state tables which may have missed tombstones.

* :func:`optimize_and_vacuum` compacts small files (``OPTIMIZE``) and then deletes the
  files no table version within the retention still needs (``VACUUM``), over every
  Delta table under the warehouse: ``events``, ``rejects``, ``dq_results`` when
  present, and each ``state/<topic>``. A retention below Delta's safety default of
  168 hours (7 days) is refused unless explicitly allowed: below it, VACUUM can delete
  files that a running stream or a reader of an older version still needs.
* :func:`run_maintenance` (``eventlake maintain``, the maintenance DAG's job) runs the
  sweep below, then both of the above, then :func:`refresh_type_fields`, and sums them
  up in one line.
* :func:`compaction_sweep` runs :func:`eventlake.compaction.check_compaction` for each
  state topic and, when the state table may have missed deletions and
  ``auto_reconcile`` is on, :func:`eventlake.state.reconcile_state`.

Example:
    >>> results = optimize_and_vacuum(spark, settings)  # retention: 168 h
    >>> print(results[0].line())
    events: optimize compacted 12 files into 1; vacuum (retain 168 h) removed 0 files
    >>> [r.line() for r in compaction_sweep(spark, settings, ["customers"], auto_reconcile=True)]
    ['customers: compacted, delete.retention.ms=86400000; state table within ...']
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from eventlake.kafka import KafkaConnectionError, check_connection, missing_topics
from eventlake.lineage import job_run, table_dataset
from eventlake.settings import Settings
from eventlake.spark import session_conf
from eventlake.tables import (
    delta_path_sql,
    is_delta_table,
    state_path,
    state_table_topics,
    warehouse_tables,
)
from eventlake.topic_names import InvalidTopicNameError, check_topic_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from eventlake.state import ReconcileReport

#: Delta's default ``delta.deletedFileRetentionDuration`` (7 days): VACUUM's safety floor.
SAFETY_RETENTION_HOURS: Final = 168.0
#: Delta refuses a VACUUM retention below the table's retention while this is true.
RETENTION_CHECK_CONF: Final = "spark.databricks.delta.retentionDurationCheck.enabled"
#: Delta (4.x) ignores a VACUUM retention other than 0 hours while this is true (its
#: default) and keeps the table's ``delta.deletedFileRetentionDuration`` instead: a
#: retention asked for (``--retention-hours 720`` to keep a month of history) would be
#: 168 hours. A Delta internal, checked with the versions in
#: :data:`eventlake.ledger.CHECKED_DELTA_VERSIONS` by
#: tests/test_maintenance.py::test_vacuum_keeps_the_retention_asked_for_not_deltas_default.
RETENTION_ARGUMENT_IGNORED_CONF: Final = (
    "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"
)
#: Tasks of VACUUM's file listing (Spark's default, 10000, is far too many for small tables).
LISTING_PARALLELISM_CONF: Final = "spark.sql.sources.parallelPartitionDiscovery.parallelism"

_VACUUM_END: Final = "VACUUM END"
_VACUUM_START: Final = "VACUUM START"
_OPTIMIZE: Final = "OPTIMIZE"


class MaintenanceError(ValueError):
    """A maintenance request is refused before anything runs; the message says why."""


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


@dataclass(frozen=True)
class SweepResult:
    """The compaction check of one state topic, and the reconcile it triggered, if any."""

    topic: str
    at_risk: bool
    message: str
    reconciled: ReconcileReport | None = None
    #: False when the topic could not be checked (it is no longer on Kafka).
    checked: bool = True

    def line(self) -> str:
        """The check's message, followed by the reconcile's summary when one ran.

        Example:
            >>> SweepResult("customers", False, "customers: compacted ...").line()
            'customers: compacted ...'
        """
        if self.reconciled is None:
            return self.message
        return f"{self.message}\n{self.reconciled.line()}"


def check_retention(retention_hours: float | None, allow_below_safety: bool = False) -> None:
    """Refuse a VACUUM retention that is not a finite number, is negative, or is below 168
    hours without the override.

    ``None`` means the table's own retention (Delta's default: 168 hours) and passes.

    Example:
        >>> check_retention(168)
        >>> check_retention(0, allow_below_safety=True)
        >>> check_retention(24)
        Traceback (most recent call last):
        ...
        eventlake.maintenance.MaintenanceError: retention_hours=24 is below Delta's safety ...
    """
    if retention_hours is None:
        return
    if isinstance(retention_hours, bool) or not isinstance(retention_hours, int | float):
        raise MaintenanceError(f"retention_hours must be a number, not {retention_hours!r}.")
    if not math.isfinite(retention_hours):
        # Delta rounds NaN to 0 hours: a VACUUM of every file no version needs.
        raise MaintenanceError(
            f"retention_hours must be a finite number of hours, not {retention_hours!r}."
        )
    if retention_hours < 0:
        raise MaintenanceError(f"retention_hours must be >= 0, not {retention_hours!r}.")
    if retention_hours < SAFETY_RETENTION_HOURS and not allow_below_safety:
        raise MaintenanceError(
            f"retention_hours={retention_hours:g} is below Delta's safety retention of "
            f"{SAFETY_RETENTION_HOURS:g} hours: VACUUM could delete files that running streams "
            "or readers of recent table versions still need. Set allow_below_safety=true "
            "(--allow-below-safety) to do it anyway."
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
    """OPTIMIZE (bin-packing compaction); (files removed, files added)."""
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


def _check_topics(topics: Sequence[str]) -> None:
    for topic in topics:
        try:
            check_topic_name(topic, "topic")
        except InvalidTopicNameError as error:
            raise MaintenanceError(str(error)) from None


def compaction_sweep(
    spark: SparkSession,
    settings: Settings,
    topics: Sequence[str],
    auto_reconcile: bool,
    *,
    dry_run: bool = False,
    now_ms: int | None = None,
) -> list[SweepResult]:
    """Check each state topic for tombstones compacted away unseen; reconcile when at risk.

    A topic is at risk when its state table was last updated longer ago than the topic's
    ``delete.retention.ms`` and records are waiting (see
    :func:`eventlake.compaction.check_compaction`). With ``auto_reconcile`` (and not
    ``dry_run``) an at-risk state table is rebuilt from the topic by
    :func:`eventlake.state.reconcile_state`; otherwise the result only warns.
    ``now_ms`` overrides the clock of the check.

    Example:
        >>> [r.at_risk for r in compaction_sweep(spark, settings, ["customers"], True)]
        [False]
    """
    _check_topics(topics)
    from eventlake.compaction import check_compaction
    from eventlake.state import reconcile_state

    results: list[SweepResult] = []
    if topics:
        check_connection(settings)
    # A state table may outlive its topic: that one is reported, the others are checked.
    gone = set(missing_topics(settings, topics))
    for topic in dict.fromkeys(topics):
        if topic in gone:
            where = (
                f"{topic}: not checked: the topic does not exist on Kafka at "
                f"{settings.bootstrap_servers}"
            )
            message = (
                f"{where}; state/{topic} is left as it is (remove the folder if the topic "
                "is gone for good)"
                if is_delta_table(state_path(settings, topic))
                else f"{where}, and the warehouse has no state/{topic} table: check the name"
            )
            results.append(SweepResult(topic, False, message, checked=False))
            continue
        report = check_compaction(spark, settings, topic, now_ms=now_ms)
        reconciled = None
        if report.at_risk and auto_reconcile and not dry_run:
            reconciled = reconcile_state(spark, settings, topic)
        results.append(SweepResult(topic, report.at_risk, report.message, reconciled))
    return results


@dataclass(frozen=True)
class MaintenanceRequest:
    """What ``eventlake maintain`` is asked to do (the maintenance DAG's params).

    ``topics`` empty: every state table in the warehouse. Refused on creation
    (:class:`MaintenanceError`): a retention below 168 hours without
    ``allow_below_safety``, a name that is not a topic's.

    Example:
        >>> MaintenanceRequest(retention_hours=24)
        Traceback (most recent call last):
        ...
        eventlake.maintenance.MaintenanceError: retention_hours=24 is below Delta's ...
    """

    retention_hours: float = SAFETY_RETENTION_HOURS
    allow_below_safety: bool = False
    topics: tuple[str, ...] = ()
    auto_reconcile: bool = True
    dry_run: bool = False

    def __post_init__(self) -> None:
        check_retention(self.retention_hours, self.allow_below_safety)
        _check_topics(self.topics)


@dataclass(frozen=True)
class MaintenanceSummary:
    """The outcome of :func:`run_maintenance`; ``sweep_failed``: the compaction sweep
    raised (OPTIMIZE/VACUUM ran anyway)."""

    tables: tuple[MaintenanceResult, ...]
    sweeps: tuple[SweepResult, ...]
    state_topics: int
    sweep_failed: bool
    seconds: float
    dry_run: bool = False

    def line(self) -> str:
        """The run in one line.

        Example:
            >>> summary.line()
            'maintenance: tables=3 compacted=5 removed=5 state_topics=1 at_risk=0 reconciled=0 ...'
        """
        removed = "would_remove" if self.dry_run else "removed"
        return (
            f"maintenance{' (dry run)' if self.dry_run else ''}: tables={len(self.tables)} "
            f"compacted={sum(r.files_compacted for r in self.tables)} "
            f"{removed}={sum(r.files_removed for r in self.tables)} "
            f"state_topics={self.state_topics} at_risk={sum(s.at_risk for s in self.sweeps)} "
            f"reconciled={sum(s.reconciled is not None for s in self.sweeps)} "
            f"seconds={self.seconds:.1f}"
        )


def refresh_type_fields(spark: SparkSession, settings: Settings) -> str:
    """Infer the typed views' columns of every event type again (from its data and
    dataschema, :func:`eventlake.event_types.type_columns`) and keep them in the
    warehouse (:func:`eventlake.event_types.save_columns`), so that ``eventlake query``
    follows a type whose shape changed; one line saying what was done.

    Example:
        >>> refresh_type_fields(spark, settings)
        'types: the columns of 3 event types inferred (typed views), 1 from its dataschema'
    """
    from eventlake.event_types import fields_path, save_columns, type_columns
    from eventlake.tables import EVENTS, is_delta_table

    path = settings.table_path(EVENTS)
    if not is_delta_table(path):
        return "types: no events table yet"
    events = spark.read.format("delta").load(str(path))
    if not {"type", "data_json"} <= set(events.columns):
        return "types: the events table has no data_json column yet (the next ingest adds it)"
    columns = type_columns(
        spark,
        events,
        sample_hours=settings.type_sample_hours,
        fetch_dataschemas=settings.fetch_dataschemas,
    )
    save_columns(fields_path(settings.warehouse), columns)
    line = f"types: the columns of {len(columns)} event types inferred (typed views)"
    schemas = sum(c.from_dataschema for c in columns.values())
    unread = sum(c.unread is not None for c in columns.values())
    if schemas:
        line += f", {schemas} from {'its' if schemas == 1 else 'their'} dataschema"
    if unread:
        line += f", {unread} dataschema{'s' if unread != 1 else ''} not read (eventlake types)"
    return line


def run_maintenance(
    spark: SparkSession,
    settings: Settings,
    request: MaintenanceRequest,
    report: Callable[[str], None] = print,
) -> MaintenanceSummary:
    """The compaction sweep of the state tables (reconciling those at risk when asked),
    then OPTIMIZE and VACUUM of every table, then the typed views' columns inferred
    again (:func:`refresh_type_fields`); each step's line goes to ``report``. With its
    OpenLineage run events when lineage is configured (:mod:`eventlake.lineage`).

    A failing sweep (e.g. the broker down) does not stop the table maintenance: its
    traceback is reported and ``sweep_failed`` set.

    Example:
        >>> run_maintenance(spark, settings, MaintenanceRequest(dry_run=True)).line()
        'maintenance (dry run): tables=2 compacted=0 would_remove=0 state_topics=0 ...'
    """
    if request.dry_run:  # writes nothing: no lineage
        return _run_maintenance(spark, settings, request, report)
    # The tables it rewrites (OPTIMIZE, VACUUM) are read and written, as OpenLineage
    # models a compaction. Reconciles of the sweep emit their own runs.
    tables = [table_dataset(path) for _, path in warehouse_tables(settings)]
    with job_run(spark, "maintain", inputs=tables, outputs=tables):
        return _run_maintenance(spark, settings, request, report)


def _run_maintenance(
    spark: SparkSession,
    settings: Settings,
    request: MaintenanceRequest,
    report: Callable[[str], None],
) -> MaintenanceSummary:
    started = time.monotonic()
    topics = list(request.topics) or state_table_topics(settings)
    sweeps: list[SweepResult] = []
    failed = False
    try:
        sweeps = compaction_sweep(
            spark, settings, topics, request.auto_reconcile, dry_run=request.dry_run
        )
    except MaintenanceError:
        raise
    except KafkaConnectionError as error:  # a sentence says it all
        report(f"error: {error}")
        report("error: compaction sweep failed; OPTIMIZE/VACUUM run anyway")
        failed = True
    except Exception:  # keep maintaining the tables; the summary reports the failure
        report(traceback.format_exc().rstrip())
        report("error: compaction sweep failed; OPTIMIZE/VACUUM run anyway")
        failed = True
    for sweep in sweeps:
        report(sweep.line())
    failed = failed or not all(sweep.checked for sweep in sweeps)
    tables = optimize_and_vacuum(
        spark,
        settings,
        request.retention_hours,
        request.allow_below_safety,
        dry_run=request.dry_run,
    )
    for table in tables:
        report(table.line())
    if not request.dry_run:
        report(refresh_type_fields(spark, settings))
    return MaintenanceSummary(
        tables=tuple(tables),
        sweeps=tuple(sweeps),
        state_topics=len(topics),
        sweep_failed=failed,
        seconds=time.monotonic() - started,
        dry_run=request.dry_run,
    )
