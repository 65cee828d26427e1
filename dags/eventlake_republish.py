"""
### eventlake_republish

Every 10 minutes, or when records arrive on the routes' source topics
(`EVENTLAKE_REPUBLISH_SCHEDULE`: `schedule`, `events` or `both`, see
docs/airflow-events.md), re-key and republish the configured routes: one `spark-submit` of
`jobs/republish_routes.py` sends them one after another in one Spark application
(task `republish`), each reading what its source topic holds and stopping; a task per
route (`route`, labelled `source>target`) shows its line, or fails alone with why the
route was refused (a source topic Kafka does not have) while the others ran. The Key
Mapper puts the chosen attribute (by default the `partitionkey` extension) into the
record key and never modifies the event.

* **Routes**: `EVENTLAKE_REPUBLISH_ROUTES` of the worker, a JSON list such as
  `[{"source": "orders.raw", "target": "orders", "key_mapper": "partitionkey",
  "cleanup_policy": "compact"}]` (fields: source, target, key_mapper, on_missing,
  to_mode, cleanup_policy, partitions). With no route configured the run does nothing.
* **Ad hoc**: `routes` runs only the named routes (`source>target`); a name that is not
  configured fails the first task, before anything is submitted.
* **Dry run**: `dry_run: true` logs the spark-submit commands and submits nothing.
* **Delivery**: at least once (Kafka producer); what each route has sent is in the
  ledger (docs/guarantees.md), so a run resumes there whatever ran before.
* **Spark master**: the `spark_default` connection.
* **Kafka**: the `kafka_default` connection (type `kafka`) when it is defined, its
  password given to the job only in spark-submit's environment; otherwise the
  `EVENTLAKE_*` settings of the worker, which also give the warehouse.
"""

from __future__ import annotations

from airflow.sdk import dag

from eventlake import orchestration
from eventlake.core.settings import load_settings

REPUBLISH_JOB = orchestration.job_script(__file__, "republish_routes.py")

_settings = load_settings()
_sources = [route.source for route in _settings.republish_routes]
#: The cron of the `schedule` and `both` modes.
CRON = "*/10 * * * *"


@dag(
    dag_id="eventlake_republish",
    schedule=orchestration.dag_schedule(_settings.republish_schedule, CRON, _sources, _settings),
    params=orchestration.republish_params(),
    **orchestration.dag_arguments(__doc__, retries=2, retry_minutes=2, task_hours=0.5, run_hours=1),
)
def eventlake_republish() -> None:
    submits = orchestration.plan_task(orchestration.plan_republish)
    republish = orchestration.spark_submit_each(
        REPUBLISH_JOB, submits, task_id="republish", report_outcomes=True
    )
    routes = orchestration.plan_task(orchestration.plan_routes, task_id="plan_routes")
    orchestration.outcome_tasks(routes, republish, task_id="route")
    orchestration.submit_unless_dry_run(REPUBLISH_JOB, submits) >> republish


eventlake_republish()
