"""
### eventlake_ingest

Every 10 minutes, land the CloudEvents of the configured Kafka topics in the Delta
tables `events` and `rejects`: one `spark-submit` of `jobs/ingest_cloudevents.py` per
topic (a mapped task), reading what the topic holds and stopping (`available-now`).

* **Topics**: `EVENTLAKE_TOPICS` (comma-separated, default `demo.orders`), or the
  `topics` param of a manual run. A topic that a running stream reads (`eventlake
  ingest --trigger processing-time=...`) is skipped, and the plan task's log says so.
* **Backfill/replay**: trigger with `ending_offsets` (`latest` or per-partition JSON):
  a bounded run that adds only records not already in the tables.
* **State**: topics listed in `EVENTLAKE_STATE_TOPICS` also keep `state/<topic>`, the
  latest event per key (`--state`; tombstones delete).
* **Full refresh**: `full_refresh: true` re-reads each topic from earliest to latest
  (adds only records not yet in the tables) and then rebuilds the state table of each
  state topic from its topic (`reconcile`, one task per state topic).
* **Dry run**: `dry_run: true` logs the spark-submit commands and submits nothing.
* **Spark master**: the `spark_default` connection. Kafka and the warehouse come from
  the `EVENTLAKE_*` settings of the worker.

Params are validated before the run is created: a bad topic name is refused.
Updates the assets `eventlake.events`, `eventlake.rejects` and `eventlake.state.<topic>`;
the quality DAG runs when they change.
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
INGEST_JOB = Path(__file__).resolve().parents[1] / "jobs" / "ingest_cloudevents.py"
RECONCILE_JOB = Path(__file__).resolve().parents[1] / "jobs" / "reconcile_state.py"

_settings = load_settings()


@dag(
    dag_id="eventlake_ingest",
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
    params=orchestration.ingest_params(orchestration.configured_topics()),
    tags=["eventlake"],
    doc_md=__doc__,
)
def eventlake_ingest() -> None:
    # A plan that fails has bad params or no jars: retrying would not help.
    @task(retries=0)
    def plan(params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Check the params; one spark-submit (args, conf, jars, env) per topic."""
        return orchestration.plan_ingest(params or {}, load_settings())

    @task(retries=0)
    def plan_state_rebuilds(params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """On a full refresh, one reconcile per state topic; otherwise none (skipped)."""
        return orchestration.plan_reconcile(params or {}, load_settings())

    submits = plan()
    rebuilds = plan_state_rebuilds()
    ingest = SparkSubmitOperator.partial(
        task_id="ingest",
        application=str(INGEST_JOB),
        conn_id=orchestration.SPARK_CONN_ID,
        name="eventlake-ingest",
        outlets=orchestration.ingest_outlets(_settings),
        # One driver at a time: a small worker, and no race on first table creation.
        max_active_tis_per_dagrun=1,
        map_index_template="{{ task.application_args[1] }}",
    ).expand_kwargs(submits)
    reconcile = SparkSubmitOperator.partial(
        task_id="reconcile",
        application=str(RECONCILE_JOB),
        conn_id=orchestration.SPARK_CONN_ID,
        name="eventlake-reconcile",
        outlets=[orchestration.state_asset(_settings, t) for t in _settings.state_topics],
        max_active_tis_per_dagrun=1,
        map_index_template="{{ task.application_args[1] }}",
    ).expand_kwargs(rebuilds)
    orchestration.submit_unless_dry_run(INGEST_JOB, submits) >> ingest >> reconcile
    rebuilds >> reconcile


eventlake_ingest()
