"""
### eventlake_quality

Data-quality checks of the `events` table (Great Expectations on Spark): one
`spark-submit` of `jobs/check_quality.py`, run **whenever the ingest DAG has updated the
tables** (the assets `eventlake.events` and `eventlake.rejects`), and on demand.

* **Rules**: `EVENTLAKE_QUALITY` of the worker (required attributes, specversion, time
  format, rejects rate, per-topic rules and severities); see the README.
* **Slice**: by default only the rows added since the last check; `full: true` checks
  the whole table. `topic` narrows the check to one topic.
* **Failure**: the run **fails when a check of severity `error` fails** (warnings only
  log). Every expectation's outcome is appended to the `dq_results` table either way;
  the check task is not retried, because a retry would check the next (empty) slice and
  pass.
* **Dry run**: `dry_run: true` logs the spark-submit command and checks nothing.
* **Spark master**: the `spark_default` connection.

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
CHECK_JOB = Path(__file__).resolve().parents[1] / "jobs" / "check_quality.py"

_settings = load_settings()


@dag(
    dag_id="eventlake_quality",
    schedule=[orchestration.events_asset(_settings), orchestration.rejects_asset(_settings)],
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    default_args={
        "owner": "eventlake",
        "retries": 1,
        "retry_delay": timedelta(minutes=2),
        "execution_timeout": timedelta(hours=1),
    },
    params=orchestration.quality_params(),
    tags=["eventlake"],
    doc_md=__doc__,
)
def eventlake_quality() -> None:
    # A failed plan is a bad run conf (or missing jars): retrying would not help.
    @task(retries=0, multiple_outputs=True)
    def plan(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Check the params; the spark-submit arguments, conf, jars and environment."""
        return orchestration.plan_quality(params or {}, load_settings())

    submit = plan()
    check = SparkSubmitOperator(
        task_id="check",
        application=str(CHECK_JOB),
        conn_id=orchestration.SPARK_CONN_ID,
        name="eventlake-quality",
        application_args=submit["application_args"],
        conf=submit["conf"],
        jars=submit["jars"],
        env_vars=submit["env_vars"],
        # Results are recorded even when a check fails: a retry would pass on an empty slice.
        retries=0,
    )
    orchestration.submit_unless_dry_run(CHECK_JOB, submit) >> check


eventlake_quality()
