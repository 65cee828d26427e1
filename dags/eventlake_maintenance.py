"""
### eventlake_maintenance

Daily upkeep of the warehouse: one `spark-submit` of `jobs/maintain.py` that

1. runs the **compaction check** of every state table (`state/<topic>`): when the table
   was last updated longer ago than the topic's `delete.retention.ms` and records are
   waiting, tombstones may have been compacted away unseen; with `auto_reconcile` the
   table is then rebuilt from the topic (`eventlake reconcile`), otherwise the log warns;
2. **OPTIMIZE**s (compacts small files) and then **VACUUM**s every Delta table:
   `events`, `rejects`, `dq_results` when present, and each `state/<topic>`.

* **Retention**: `retention_hours` (default 168, Delta's safety default of 7 days).
  Below 168 only with `allow_below_safety: true`: VACUUM could otherwise delete files
  that running streams or readers of recent versions still need. A run conf with a
  lower retention and no override fails in the first task (`validate`), before
  anything is submitted.
* **State topics**: `topics` (default: every state table in the warehouse).
* **Dry run**: `dry_run: true` changes nothing and logs what VACUUM would delete and
  which state tables are at risk.
* **Spark master**: the `spark_default` connection. Kafka and the warehouse come from
  the `EVENTLAKE_*` settings of the worker.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import dag, task

from eventlake import orchestration
from eventlake.settings import load_settings

#: The job script, beside the dags/ folder (a checkout, or /opt/eventlake in the image).
MAINTAIN_JOB = Path(__file__).resolve().parents[1] / "jobs" / "maintain.py"


@dag(
    dag_id="eventlake_maintenance",
    schedule="@daily",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=4),
    default_args={
        "owner": "eventlake",
        "retries": 1,
        "retry_delay": timedelta(minutes=10),
        "execution_timeout": timedelta(hours=3),
    },
    params=orchestration.maintenance_params(),
    tags=["eventlake"],
    doc_md=__doc__,
)
def eventlake_maintenance() -> None:
    # A failed validation is a bad run conf (or missing jars): retrying would not help.
    @task(retries=0, multiple_outputs=True)
    def validate(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Cross-check the params (a retention below 168 h needs allow_below_safety) and
        return the spark-submit arguments, conf, jars and environment of the job."""
        submit = orchestration.plan_maintenance(params or {}, load_settings())
        # Submitted on a dry run too: the job's own --dry-run reports what it would do.
        orchestration.log_commands(MAINTAIN_JOB, [submit], dry_run=False)
        return submit

    submit = validate()
    SparkSubmitOperator(
        task_id="maintain",
        application=str(MAINTAIN_JOB),
        conn_id=orchestration.SPARK_CONN_ID,
        name="eventlake-maintenance",
        application_args=submit["application_args"],
        conf=submit["conf"],
        jars=submit["jars"],
        env_vars=submit["env_vars"],
    )


eventlake_maintenance()
