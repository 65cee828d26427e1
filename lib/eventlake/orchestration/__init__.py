"""What the Airflow DAGs need, kept out of the DAG files so it can be tested on its own.

The modules, one concern each:

* ``options``: one table of each DAG's options (JSON schema, default, job flag), from
  which the DAG's params, the reading of a run's params and the job's arguments come;
* ``ingest``, ``maintenance``, ``quality``, ``republish``: one DAG each: its checked
  params (:class:`IngestParams`, ...), its Airflow params and its spark-submit plan;
* ``submit``: one spark-submit (application args, Spark conf, jars, environment) for
  SparkSubmitOperator, and its command line for logs; the master comes from the
  Airflow connection ``spark_default``, never from here;
* ``dag_parts``: what every DAG file is made of: the ``@dag`` arguments they share
  (start date, owner, tags, one run at a time, retries and timeouts), the job script
  beside ``dags/``, the plan task and the spark-submit task, single or mapped;
* ``kafka_connection``: Kafka settings and credentials from the Airflow connection
  ``kafka_default`` (the Kafka provider's type), the password only for the spark-submit
  process's environment;
* ``object_store_connection``: the warehouse's object store (endpoint, region,
  addressing, keys) from the Airflow connection ``aws_default`` (the Amazon provider's
  type), the keys likewise only for the spark-submit process's environment;
* ``connections``: a task's settings, the worker's with both connections in place;
* ``dry_run``: the DAGs' short-circuit task that logs the commands and stops a dry run;
* ``topics``: topic names in the DAGs' forms and offsets per topic;
* ``outcome_tasks``: the ingest DAG's task per topic and the republish DAG's per route,
  showing what the run's one spark-submit did with each;
* ``assets``: the Delta tables as Airflow assets;
* ``schedule``: a DAG's schedule from the settings: its cron, the arrival of records on
  its topics (an asset per topic, watched by ``arrivals``' trigger), or both;
* ``arrivals``: the triggerer's watch of a topic's end offsets, one event per burst;
* ``errors``: :class:`OrchestrationError`.

Not here: the DAGs themselves (``dags/``: each its doc, id, schedule, params and task
graph), the jobs and their command line
(``jobs/``, :mod:`eventlake.cli`), and the settings all of this derives from
(:mod:`eventlake.core.settings`). The DAG files use the names exported below.

Example:
    >>> from eventlake.core.settings import load_settings
    >>> params = IngestParams.from_params({"topics": ["orders"], "dry_run": False})
    >>> ingest_application_args(params)
    [['--topic', 'orders', '--starting-offsets', 'earliest', '--trigger', 'available-now']]
    >>> plan = plan_ingest({"topics": ["orders", "payments"]}, load_settings())
    >>> [sorted(submit) for submit in plan][0]
    ['application_args', 'conf', 'env_vars', 'jars']
"""

from eventlake.orchestration.assets import (
    EVENTS_ASSET_NAME,
    REJECTS_ASSET_NAME,
    events_asset,
    ingest_outlets,
    rejects_asset,
    state_asset,
    state_assets,
)
from eventlake.orchestration.connections import task_settings
from eventlake.orchestration.dag_parts import (
    KafkaSparkSubmitOperator,
    dag_arguments,
    job_script,
    plan_task,
    spark_submit,
    spark_submit_each,
)
from eventlake.orchestration.dry_run import log_commands, submit_unless_dry_run
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.ingest import (
    TOPICS_LABEL,
    IngestParams,
    ingest_application_args,
    ingest_params,
    plan_ingest,
    plan_reconcile,
    plan_topics,
    stream_owner_notice,
)
from eventlake.orchestration.kafka_connection import (
    KAFKA_CONN_ID,
    KafkaConnection,
    read_kafka_connection,
)
from eventlake.orchestration.maintenance import (
    MAINTENANCE_RETENTION_HOURS,
    MaintenanceParams,
    maintenance_params,
    plan_maintenance,
)
from eventlake.orchestration.outcome_tasks import outcome_tasks
from eventlake.orchestration.quality import QualityParams, plan_quality, quality_params
from eventlake.orchestration.republish import (
    RepublishParams,
    plan_republish,
    plan_routes,
    republish_params,
)
from eventlake.orchestration.schedule import dag_schedule, topic_asset
from eventlake.orchestration.submit import (
    SPARK_CONN_ID,
    dry_run_report,
    job_env,
    spark_submit_args,
    submit_conf,
    submit_jars,
    submit_kwargs,
)
from eventlake.orchestration.topics import (
    check_topic,
    topic_offsets,
)

__all__ = [
    "EVENTS_ASSET_NAME",
    "KAFKA_CONN_ID",
    "MAINTENANCE_RETENTION_HOURS",
    "REJECTS_ASSET_NAME",
    "SPARK_CONN_ID",
    "TOPICS_LABEL",
    "IngestParams",
    "KafkaConnection",
    "KafkaSparkSubmitOperator",
    "MaintenanceParams",
    "OrchestrationError",
    "QualityParams",
    "RepublishParams",
    "check_topic",
    "dag_arguments",
    "dag_schedule",
    "dry_run_report",
    "events_asset",
    "ingest_application_args",
    "ingest_outlets",
    "ingest_params",
    "job_env",
    "job_script",
    "log_commands",
    "maintenance_params",
    "outcome_tasks",
    "plan_ingest",
    "plan_maintenance",
    "plan_quality",
    "plan_reconcile",
    "plan_republish",
    "plan_routes",
    "plan_task",
    "plan_topics",
    "quality_params",
    "read_kafka_connection",
    "rejects_asset",
    "republish_params",
    "spark_submit",
    "spark_submit_args",
    "spark_submit_each",
    "state_asset",
    "state_assets",
    "stream_owner_notice",
    "submit_conf",
    "submit_jars",
    "submit_kwargs",
    "submit_unless_dry_run",
    "task_settings",
    "topic_asset",
    "topic_offsets",
]
