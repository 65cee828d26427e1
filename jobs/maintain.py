"""spark-submit entry point of the maintenance job: the compaction sweep of the state
tables (reconciling those that may have missed tombstones), then Delta OPTIMIZE and
VACUUM of every warehouse table.

    spark-submit --jars "$(ls infra/jars/spark/*.jar | paste -sd,)" \
        jobs/maintain.py --retention-hours 168 --auto-reconcile

Prints one line per state topic and per table, then a summary line. Exit codes: 0 done,
2 refused arguments (nothing ran), 1 a step failed (OPTIMIZE/VACUUM still ran when the
compaction sweep failed, e.g. with the broker down).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Sequence

from eventlake.maintenance import (
    SAFETY_RETENTION_HOURS,
    MaintenanceError,
    check_retention,
    compaction_sweep,
    optimize_and_vacuum,
)
from eventlake.settings import load_settings
from eventlake.spark import build_spark_session
from eventlake.tables import state_table_topics


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The job's arguments (the maintenance DAG's params)."""
    parser = argparse.ArgumentParser(
        prog="maintain.py", description="OPTIMIZE and VACUUM the warehouse; compaction sweep."
    )
    parser.add_argument(
        "--retention-hours",
        type=float,
        default=SAFETY_RETENTION_HOURS,
        help=f"VACUUM retention (default {SAFETY_RETENTION_HOURS:g}, Delta's safety default).",
    )
    parser.add_argument(
        "--allow-below-safety",
        action="store_true",
        help=f"Allow a retention below {SAFETY_RETENTION_HOURS:g} hours.",
    )
    parser.add_argument(
        "--topics",
        nargs="+",
        action="extend",
        default=[],
        metavar="TOPIC",
        help="State topics to check (default: every state table in the warehouse).",
    )
    parser.add_argument(
        "--auto-reconcile",
        action="store_true",
        help="Reconcile a state table that may have missed tombstones (otherwise only warn).",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="Change nothing; report what would be done."
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep and the table maintenance; return the process exit code."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        check_retention(args.retention_hours, args.allow_below_safety)
    except MaintenanceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    started = time.monotonic()
    settings = load_settings()
    spark = build_spark_session(settings, app_name="eventlake-maintenance")
    topics = args.topics or state_table_topics(settings)
    failed = False
    at_risk = reconciled = 0
    try:
        for sweep in compaction_sweep(
            spark, settings, topics, args.auto_reconcile, dry_run=args.dry_run
        ):
            print(sweep.line(), flush=True)
            at_risk += sweep.at_risk
            reconciled += sweep.reconciled is not None
    except Exception:  # keep maintaining the tables; the exit code reports the failure
        traceback.print_exc()
        print("error: compaction sweep failed; OPTIMIZE/VACUUM run anyway", file=sys.stderr)
        failed = True
    results = optimize_and_vacuum(
        spark,
        settings,
        args.retention_hours,
        args.allow_below_safety,
        dry_run=args.dry_run,
    )
    for result in results:
        print(result.line(), flush=True)
    print(
        f"maintenance{' (dry run)' if args.dry_run else ''}: tables={len(results)} "
        f"compacted={sum(r.files_compacted for r in results)} "
        f"{'would_remove' if args.dry_run else 'removed'}="
        f"{sum(r.files_removed for r in results)} "
        f"state_topics={len(topics)} at_risk={at_risk} reconciled={reconciled} "
        f"seconds={time.monotonic() - started:.1f}",
        flush=True,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
