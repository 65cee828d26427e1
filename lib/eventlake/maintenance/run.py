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
* :func:`compaction_sweep` runs :func:`eventlake.state.compaction_risk.check_compaction` for each
  state topic and, when the state table may have missed deletions and
  ``auto_reconcile`` is on, :func:`eventlake.state.reconcile.reconcile_state`.

Example:
    >>> results = optimize_and_vacuum(spark, settings)  # retention: 168 h
    >>> print(results[0].line())
    events: optimize compacted 12 files into 1; vacuum (retain 168 h) removed 0 files
    >>> [r.line() for r in compaction_sweep(spark, settings, ["customers"], auto_reconcile=True)]
    ['customers: compacted, delete.retention.ms=86400000; state table within ...']"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eventlake.core.settings import Settings
from eventlake.kafka.connection import KafkaConnectionError
from eventlake.maintenance.delta_upkeep import MaintenanceResult, optimize_and_vacuum
from eventlake.maintenance.request import MaintenanceError, MaintenanceRequest
from eventlake.maintenance.sweep import SweepResult, compaction_sweep
from eventlake.runs.lineage import job_run, warehouse_dataset
from eventlake.warehouse.names import (
    is_delta_table,
    state_table_topics,
    warehouse_tables,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
    dataschema, :func:`eventlake.views.event_types.type_columns`) and keep them in the
    warehouse (:func:`eventlake.views.type_fields.save_columns`), so that ``eventlake query``
    follows a type whose shape changed; one line saying what was done.

    Example:
        >>> refresh_type_fields(spark, settings)
        'types: the columns of 3 event types inferred (typed views), 1 from its dataschema'
    """
    from eventlake.views.event_types import type_columns
    from eventlake.views.type_fields import fields_path, save_columns
    from eventlake.warehouse.names import EVENTS

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
    OpenLineage run events when lineage is configured (:mod:`eventlake.runs.lineage`).

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
    tables = [warehouse_dataset(settings, name) for name, _ in warehouse_tables(settings)]
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
