"""
### eventlake_maintenance

Daily upkeep of the warehouse: one `spark-submit` of `jobs/maintain.py` that

1. runs the **compaction check** of every state table (`state/<topic>`): when the table
   was last updated longer ago than the topic's `delete.retention.ms` and records are
   waiting, tombstones may have been compacted away unseen; with `auto_reconcile` the
   table is then rebuilt from the topic (`eventlake reconcile`), otherwise the log warns;
2. **OPTIMIZE**s (compacts small files) and then **VACUUM**s every Delta table:
   `events`, `rejects`, `dq_results` when present, and each `state/<topic>`;
3. infers the **typed views' columns** of every event type again, from its data and
   its readable `dataschema` (`eventlake types` does too), and keeps them in the
   warehouse, where `eventlake query` reads them.

* **Retention**: `retention_hours` (default 168, Delta's safety default of 7 days).
  Below 168 only with `allow_below_safety: true`: VACUUM could otherwise delete files
  that running streams or readers of recent versions still need. A run conf with a
  lower retention and no override fails in the first task (`validate`), before
  anything is submitted.
* **State topics**: `topics` (default: every state table in the warehouse).
* **Dry run**: `dry_run: true` changes nothing and logs what VACUUM would delete and
  which state tables are at risk.
* **Spark master**: the `spark_default` connection.
* **Kafka**: the `kafka_default` connection (type `kafka`) when it is defined, its
  password given to the job only in spark-submit's environment; otherwise the
  `EVENTLAKE_*` settings of the worker, which also give the warehouse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import dag

from eventlake import orchestration
from eventlake.core.settings import Settings

MAINTAIN_JOB = orchestration.job_script(__file__, "maintain.py")


def validate(params: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """Cross-check the params (a retention below 168 h needs allow_below_safety) and
    return the spark-submit arguments, conf, jars and environment of the job."""
    submit = orchestration.plan_maintenance(params, settings)
    # Submitted on a dry run too (no dry-run stop): the job's own --dry-run reports what it
    # would do, so the command is logged here.
    orchestration.log_commands(MAINTAIN_JOB, [submit], dry_run=False)
    return submit


@dag(
    dag_id="eventlake_maintenance",
    schedule="@daily",
    params=orchestration.maintenance_params(),
    **orchestration.dag_arguments(__doc__, retries=1, retry_minutes=10, task_hours=3, run_hours=4),
)
def eventlake_maintenance() -> None:
    submit = orchestration.plan_task(validate, task_id="validate", single=True)
    orchestration.spark_submit(
        MAINTAIN_JOB, submit, task_id="maintain", name="eventlake-maintenance"
    )


eventlake_maintenance()
