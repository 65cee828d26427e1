"""
### eventlake_ingest

Every 10 minutes, or when records arrive on its topics (`EVENTLAKE_INGEST_SCHEDULE`:
`schedule`, `events` or `both`, see docs/airflow-events.md), land the CloudEvents of
the configured Kafka topics in the Delta tables `events` and `rejects`: one
`spark-submit` of `jobs/ingest_cloudevents.py` for all the run's topics (one Spark
application; a state topic has one of its own), reading what the topics hold and
stopping (`available-now`). Each topic has its own task (`topic`, labelled by its
topic) showing what the run did with it: its counts, or why it was refused (a topic
Kafka does not have fails alone; the others land).

* **Topics**: `EVENTLAKE_TOPICS` (comma-separated, default `demo.orders`), or the
  `topics` param of a manual run. A topic that a running stream reads (`eventlake
  ingest --trigger processing-time=...`) is skipped, and the plan task's log says so.
* **Backfill/replay**: trigger with `ending_offsets` (`latest` or per-partition JSON):
  a bounded run per topic that adds only records not already in the tables.
* **State**: topics listed in `EVENTLAKE_STATE_TOPICS` also keep `state/<topic>`, the
  latest event per key (`--state`; tombstones delete).
* **Full refresh**: `full_refresh: true` re-reads each topic from earliest to latest
  (adds only records not yet in the tables) and then rebuilds the state table of each
  state topic from its topic (`reconcile`, one task per state topic).
* **Duplicates**: `dedup: true` (or `EVENTLAKE_DEDUP` on the worker) lands an event whose
  `(source, id)` already landed within the horizon in `rejects` as `duplicate_event`.
* **Dry run**: `dry_run: true` logs the spark-submit commands and submits nothing.
* **Spark master**: the `spark_default` connection.
* **Kafka**: the `kafka_default` connection (type `kafka`) when it is defined, its
  password given to the job only in spark-submit's environment; otherwise the
  `EVENTLAKE_*` settings of the worker, which also give the warehouse.

Params are validated before the run is created: a bad topic name is refused.
Updates the assets `eventlake.events`, `eventlake.rejects` and `eventlake.state.<topic>`;
the quality DAG runs when they change.
"""

from __future__ import annotations

from airflow.sdk import dag

from eventlake import orchestration
from eventlake.core.settings import load_settings

INGEST_JOB = orchestration.job_script(__file__, "ingest_cloudevents.py")
RECONCILE_JOB = orchestration.job_script(__file__, "reconcile_state.py")

_settings = load_settings()
_topics = _settings.topics
#: The cron of the `schedule` and `both` modes.
CRON = "*/10 * * * *"


@dag(
    dag_id="eventlake_ingest",
    schedule=orchestration.dag_schedule(_settings.ingest_schedule, CRON, _topics, _settings),
    params=orchestration.ingest_params(_topics),
    **orchestration.dag_arguments(__doc__, retries=2, retry_minutes=2, task_hours=0.5, run_hours=1),
)
def eventlake_ingest() -> None:
    submits = orchestration.plan_task(orchestration.plan_ingest)
    rebuilds = orchestration.plan_task(orchestration.plan_reconcile, task_id="plan_state_rebuilds")
    ingest = orchestration.spark_submit_each(
        INGEST_JOB,
        submits,
        task_id="ingest",
        map_index_template=orchestration.TOPICS_LABEL,
        report_outcomes=True,
        outlets=orchestration.ingest_outlets(_settings),
    )
    topics = orchestration.plan_task(orchestration.plan_topics, task_id="plan_topics")
    orchestration.outcome_tasks(topics, ingest, task_id="topic")
    reconcile = orchestration.spark_submit_each(
        RECONCILE_JOB, rebuilds, task_id="reconcile", outlets=orchestration.state_assets(_settings)
    )
    orchestration.submit_unless_dry_run(INGEST_JOB, submits) >> ingest >> reconcile
    rebuilds >> reconcile


eventlake_ingest()
