"""
### eventlake_quality

Data-quality checks of the `events` table (Great Expectations on Spark): one
`spark-submit` of `jobs/check_quality.py`, run **whenever the ingest DAG has updated the
tables** (the assets `eventlake.events` and `eventlake.rejects`), and on demand.

* **Rules**: `EVENTLAKE_QUALITY` of the worker (required attributes, specversion, time
  format, rejects rate, per-topic rules and severities); see docs/quality.md.
* **Slice**: by default only the rows added since the last check; `full: true` checks
  the whole table. `topic` narrows the check to one topic.
* **Failure**: the run **fails when a check of severity `error` fails** (warnings only
  log). Every expectation's outcome is appended to the `dq_results` table either way;
  the check task is not retried, because a retry would check the next (empty) slice and
  pass.
* **Dry run**: `dry_run: true` logs the spark-submit command and checks nothing.
* **Spark master**: the `spark_default` connection.
* **Settings**: the `EVENTLAKE_*` settings of the worker. The check reads only the
  tables: it gets no Kafka credentials (not even from the `kafka_default` connection).

"""

from __future__ import annotations

from airflow.sdk import dag

from eventlake import orchestration
from eventlake.core.settings import load_settings

CHECK_JOB = orchestration.job_script(__file__, "check_quality.py")

_settings = load_settings()


@dag(
    dag_id="eventlake_quality",
    schedule=[orchestration.events_asset(_settings), orchestration.rejects_asset(_settings)],
    params=orchestration.quality_params(),
    **orchestration.dag_arguments(__doc__, retries=1, retry_minutes=2, task_hours=1, run_hours=2),
)
def eventlake_quality() -> None:
    submit = orchestration.plan_task(orchestration.plan_quality, single=True)
    check = orchestration.spark_submit(
        CHECK_JOB,
        submit,
        task_id="check",
        name="eventlake-quality",
        # Results are recorded even when a check fails: a retry would pass on an empty slice.
        retries=0,
        kafka_conn_id=None,  # reads only Delta tables: no Kafka credentials in its environment
    )
    orchestration.submit_unless_dry_run(CHECK_JOB, submit) >> check


eventlake_quality()
