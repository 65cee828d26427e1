"""
### eventlake_republish

Every 10 minutes, re-key and republish the configured routes: one `spark-submit` of
`jobs/rekey_republish.py` per route (a mapped task), reading what the source topic
holds and stopping. The Key Mapper puts the chosen attribute (by default the
`partitionkey` extension) into the record key and never modifies the event.

* **Routes**: `EVENTLAKE_REPUBLISH_ROUTES` of the worker, a JSON list such as
  `[{"source": "orders.raw", "target": "orders", "key_mapper": "partitionkey",
  "cleanup_policy": "compact"}]` (fields: source, target, key_mapper, on_missing,
  to_mode, cleanup_policy, partitions). With no route configured the run does nothing.
* **Ad hoc**: `routes` runs only the named routes (`source>target`); a name that is not
  configured fails the first task, before anything is submitted.
* **Dry run**: `dry_run: true` logs the spark-submit commands and submits nothing.
* **Delivery**: at least once (Kafka producer); each route keeps its own checkpoint.
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
REPUBLISH_JOB = Path(__file__).resolve().parents[1] / "jobs" / "rekey_republish.py"


@dag(
    dag_id="eventlake_republish",
    schedule="*/10 * * * *",
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=1),
    default_args={
        "owner": "eventlake",
        "retries": 2,
        "retry_delay": timedelta(minutes=2),
        "execution_timeout": timedelta(minutes=30),
    },
    params=orchestration.republish_params(),
    tags=["eventlake"],
    doc_md=__doc__,
)
def eventlake_republish() -> None:
    # A failed plan is a bad run conf or setting (or missing jars): retrying would not help.
    @task(retries=0)
    def plan(params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Check the params; one spark-submit (args, conf, jars, env) per route."""
        return orchestration.plan_republish(params or {}, load_settings())

    submits = plan()
    republish = SparkSubmitOperator.partial(
        task_id="republish",
        application=str(REPUBLISH_JOB),
        conn_id=orchestration.SPARK_CONN_ID,
        name="eventlake-republish",
        max_active_tis_per_dagrun=1,
        map_index_template="{{ task.application_args[1] }}>{{ task.application_args[3] }}",
    ).expand_kwargs(submits)
    orchestration.submit_unless_dry_run(REPUBLISH_JOB, submits) >> republish


eventlake_republish()
