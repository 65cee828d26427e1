"""The parts every eventlake DAG file is made of, written once: the ``@dag`` arguments
the DAGs share, the job script beside ``dags/``, the plan task and the spark-submit task
(with Kafka from the ``kafka_default`` connection when it is defined, see
:mod:`eventlake.orchestration.kafka_connection`).

A DAG file keeps what is its own: its doc, id, schedule, params, retries and timeouts,
and its task graph.

Example, a DAG file in ``dags/`` (its doc the module's docstring)::

    REPUBLISH_JOB = job_script(__file__, "republish_routes.py")

    @dag(
        dag_id="eventlake_republish",
        schedule="*/10 * * * *",
        params=republish_params(),
        **dag_arguments(__doc__, retries=2, retry_minutes=2, task_hours=0.5, run_hours=1),
    )
    def eventlake_republish() -> None:
        submits = plan_task(plan_republish)
        republish = spark_submit_each(
            REPUBLISH_JOB, submits, task_id="republish", report_outcomes=True
        )
        outcome_tasks(plan_task(plan_routes, task_id="plan_routes"), republish, task_id="route")
        submit_unless_dry_run(REPUBLISH_JOB, submits) >> republish
"""

from __future__ import annotations

import inspect
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, cast

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import XComArg, task
from airflow.sdk.definitions.mappedoperator import MappedOperator
from airflow.sdk.definitions.xcom_arg import PlainXComArg
from airflow.sdk.log import mask_secret

from eventlake.core.errors import REFUSED_EXIT_CODE, TRY_AGAIN_EXIT_CODE
from eventlake.core.settings import Settings
from eventlake.orchestration.connections import task_settings
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.kafka_connection import (
    KAFKA_CONN_ID,
    kafka_job_env,
    read_kafka_connection,
)
from eventlake.orchestration.object_store_connection import (
    AWS_CONN_ID,
    read_object_store_connection,
)
from eventlake.orchestration.submit import SPARK_CONN_ID, SUBMIT_KEYS
from eventlake.runs.outcomes import read_outcomes
from eventlake.spark.auth import SECRET_ENV

#: The first date every DAG is scheduled from.
START_DATE: Final = datetime(2026, 1, 1, tzinfo=UTC)
#: The owner and the one tag of every DAG.
OWNER: Final = "eventlake"
#: The label of a mapped spark-submit in the UI, unless told otherwise: the value of its
#: first flag (the topic of ``--topic <topic>``).
FIRST_ARGUMENT: Final = "{{ task.application_args[1] }}"

#: A DAG's plan: the run's params and the worker's settings -> its spark-submit(s).
Planner = Callable[[Mapping[str, Any], Settings], Any]


def dag_arguments(
    doc: str | None, *, retries: int, retry_minutes: float, task_hours: float, run_hours: float
) -> dict[str, Any]:
    """The ``@dag`` keyword arguments of an eventlake DAG besides its id, schedule and params:
    ``doc`` (the DAG file's docstring) shown in the UI, a failed task retried ``retries``
    times ``retry_minutes`` apart, a task stopped after ``task_hours``, a run after
    ``run_hours``.

    Example:
        >>> args = dag_arguments("## doc", retries=2, retry_minutes=2, task_hours=0.5, run_hours=1)
        >>> args["dagrun_timeout"], args["default_args"]["execution_timeout"]
        (datetime.timedelta(seconds=3600), datetime.timedelta(seconds=1800))
    """
    return {
        "start_date": START_DATE,
        # A run works on what the topics and tables hold when it starts, whatever its date:
        # runs for missed intervals would repeat it, overlapping runs would race for it.
        "catchup": False,
        "max_active_runs": 1,
        "dagrun_timeout": timedelta(hours=run_hours),
        "default_args": {
            "owner": OWNER,
            "retries": retries,
            "retry_delay": timedelta(minutes=retry_minutes),
            "execution_timeout": timedelta(hours=task_hours),
        },
        "tags": [OWNER],
        "doc_md": doc,
    }


def job_script(dag_file: str | Path, name: str) -> Path:
    """The job script ``name`` in ``jobs/``, beside the ``dags/`` folder of ``dag_file``
    (a checkout, or /opt/eventlake in the image). Found from the DAG file: the installed
    package has no checkout around it.

    Example:
        >>> job_script("/opt/eventlake/dags/eventlake_ingest.py", "ingest_cloudevents.py")
        PosixPath('/opt/eventlake/jobs/ingest_cloudevents.py')
    """
    return Path(dag_file).resolve().parents[1] / "jobs" / name


def plan_task(planner: Planner, *, task_id: str = "plan", single: bool = False) -> PlainXComArg:
    """A DAG's first task: ``planner`` checks the run's params and returns the keyword
    arguments of the run's spark-submits, a list for :func:`spark_submit_each` (or, with
    ``single``, those of its one spark-submit, for :func:`spark_submit`). The first
    paragraph of the planner's docstring is the task's doc in the UI. Call it inside the
    DAG.

    Example:
        >>> submits = plan_task(plan_republish)
    """

    # A failed plan is a bad run conf or setting (or missing jars): a retry would fail alike.
    @task(task_id=task_id, retries=0, multiple_outputs=single, doc_md=_summary(planner))
    def plan(params: dict[str, Any] | None = None) -> Any:
        # The settings of the worker that runs the task, not of the one that parsed the DAG,
        # with Kafka and the object store from their connections when they are defined.
        # The plan (an XCom) never holds a password or key: submit_kwargs gives the job no
        # credential.
        return planner(params or {}, task_settings())

    # A task called once, not mapped: its output's keys can be pulled one by one.
    return cast(PlainXComArg, plan())


class KafkaSparkSubmitOperator(SparkSubmitOperator):
    """SparkSubmitOperator that gives the job its credentials when it runs: the Kafka
    settings of the ``kafka_default`` connection, password included, the object store
    of the ``aws_default`` connection, keys included, and the Spark cluster's secret
    (the password of the Spark connection, ``spark_default``). Without them it is
    SparkSubmitOperator (the job reads the worker's ``EVENTLAKE_*`` environment).

    Secrets reach the spark-submit process only through its environment
    (``EVENTLAKE_KAFKA_PASSWORD``, ``EVENTLAKE_S3_SECRET_ACCESS_KEY``,
    ``EVENTLAKE_SPARK_AUTH_SECRET``): not its command line
    (other users see it in ``ps``), not its Spark conf (the driver's UI shows every
    property), not the task's fields (rendered in the UI), and Airflow masks them in the
    task log. ``kafka_conn_id=None``: a job that does not use Kafka gets no Kafka
    credentials.

    Example:
        >>> KafkaSparkSubmitOperator(task_id="ingest", application="jobs/ingest_cloudevents.py")
    """

    def __init__(
        self,
        *,
        kafka_conn_id: str | None = KAFKA_CONN_ID,
        aws_conn_id: str = AWS_CONN_ID,
        report_outcomes: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kafka_conn_id = kafka_conn_id
        self.aws_conn_id = aws_conn_id
        self.report_outcomes = report_outcomes

    def execute(self, context: Any) -> dict[str, Any] | None:  # type: ignore[override]
        """Run spark-submit with the connections' credentials in its environment. A run
        the job refuses (:func:`job_refusal`) fails with the job's sentence: at once when
        the same arguments would be refused again, retried when a later run may pass.
        With ``report_outcomes``, the job writes each topic's (or route's) outcome to a file of this
        task's (``--outcomes-file``; the driver runs here, in client mode), returned for
        the tasks per topic or route (:mod:`eventlake.orchestration.outcome_tasks`)."""
        if not self.report_outcomes:
            self._submit(context)
            return None
        with tempfile.TemporaryDirectory(prefix="eventlake-outcomes-") as folder:
            path = Path(folder) / "outcomes.json"
            planned = self.application_args
            self.application_args = [*(planned or []), "--outcomes-file", str(path)]
            try:
                self._submit(context)
            finally:
                self.application_args = planned
            return {t: vars(o) for t, o in read_outcomes(path).items()}

    def _submit(self, context: Any) -> None:
        from airflow.sdk.exceptions import AirflowException, AirflowFailException

        try:
            self._submit_with_credentials(context)
        except AirflowException as failure:
            refusal = job_refusal(failure)
            if refusal is None:
                raise
            # The whole spark-submit output is in the task log above; the failure is the
            # job's sentence, not the command line and the log's tail again.
            job = Path(self.application).name
            if refusal.may_pass_later:
                raise AirflowException(f"{job} could not run now: {refusal.reason}") from None
            raise AirflowFailException(f"{job} refused the run: {refusal.reason}") from None

    def _submit_with_credentials(self, context: Any) -> None:
        credentials = {**self._kafka_env(), **self._object_store_env(), **self._spark_secret_env()}
        if not credentials:
            super().execute(context)
            return
        planned = self.env_vars
        self.env_vars = {**(planned or {}), **credentials}
        try:
            super().execute(context)
        finally:
            # Not left in a task field, which Airflow may render again after the run.
            self.env_vars = planned

    def _kafka_env(self) -> dict[str, str]:
        kafka = None if self.kafka_conn_id is None else read_kafka_connection(self.kafka_conn_id)
        if kafka is None:
            return {}
        if kafka.password is not None:
            # Masked in anything this task logs, should a line ever echo it.
            mask_secret(kafka.password.get_secret_value())
            _refuse_env_on_the_command_line(self._conn_id, self.kafka_conn_id)
        self.log.info(
            "Kafka from connection %s: %s as %s",
            self.kafka_conn_id,
            kafka.bootstrap_servers,
            kafka.options.get("sasl.username", "(no SASL user)"),
        )
        return kafka_job_env(kafka)

    def _object_store_env(self) -> dict[str, str]:
        store = read_object_store_connection(self.aws_conn_id)
        if store is None:
            return {}
        if store.s3_secret_access_key is not None:
            mask_secret(store.s3_secret_access_key.get_secret_value())
            _refuse_env_on_the_command_line(self._conn_id, self.aws_conn_id)
        self.log.info(
            "Object store from connection %s: %s",
            self.aws_conn_id,
            store.s3_endpoint or f"AWS S3 ({store.s3_region})",
        )
        return store.environment()

    def _spark_secret_env(self) -> dict[str, str]:
        secret = spark_connection_secret(self._conn_id)
        if secret is None:
            return {}
        mask_secret(secret)
        _refuse_env_on_the_command_line(self._conn_id, self._conn_id)
        self.log.info("Spark RPC secret from connection %s", self._conn_id)
        return {SECRET_ENV: secret}


@dataclass(frozen=True)
class JobRefusal:
    """Why a job refused its run (its ``error: <reason>`` line) and whether a later run
    may succeed (exit 75) or the same arguments would be refused again (exit 2)."""

    reason: str
    may_pass_later: bool


def job_refusal(failure: Exception) -> JobRefusal | None:
    """The refusal a job printed (``error: <reason>``, exit 2 or 75), read from the
    spark-submit hook's failure, or None when the job failed otherwise.

    The hook reports a failed spark-submit as ``Cannot execute: <command>. Error code is:
    <code>.`` followed by the last lines of its output, where the job's ``error:`` line is
    (``tests/dags/test_ingest_dag.py`` runs a refused job through the real hook).

    Example:
        >>> job_refusal(Exception("Cannot execute: spark-submit x. Error code is: 2.\\n"
        ...     "Last spark-submit output:\\nerror: Topic 'x' does not exist"))
        JobRefusal(reason="Topic 'x' does not exist", may_pass_later=False)
    """
    text = str(failure)
    code = re.search(r"Error code is: (\d+)\.", text)
    if code is None or int(code.group(1)) not in (REFUSED_EXIT_CODE, TRY_AGAIN_EXIT_CODE):
        return None
    reasons = [
        line.strip()[len("error: ") :]
        for line in text.splitlines()
        if line.strip().startswith("error: ")
    ]
    if not reasons:
        return None
    return JobRefusal(" ".join(reasons), int(code.group(1)) == TRY_AGAIN_EXIT_CODE)


def spark_connection_secret(spark_conn_id: str) -> str | None:
    """The password of the Spark connection ``spark_conn_id``: the standalone cluster's
    shared secret (``spark.authenticate.secret``), or None when it has none or the
    connection is not defined (spark-submit then uses its defaults).

    Example:
        >>> spark_connection_secret("spark_default") is None
        True
    """
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        connection = BaseHook.get_connection(spark_conn_id)
    except AirflowNotFoundException:
        return None
    return connection.password or None


def env_on_the_command_line(spark_conn_id: str) -> tuple[bool, str]:
    """Whether spark-submit would carry the task's ``env_vars`` on its command line for
    connection ``spark_conn_id`` (YARN, Kubernetes: ``--conf spark.*Env.*``), and the
    master the connection resolves to. Asked of the Spark provider's own hook: it builds
    the command with a probe variable, whatever form the connection has (``host`` with a
    prefix, or a URI's scheme).

    Example:
        >>> env_on_the_command_line("spark_default")
        (False, 'local[*]')
    """
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    probe = "eventlake-env-probe"
    try:
        hook = SparkSubmitHook(conn_id=spark_conn_id, env_vars={"EVENTLAKE_PROBE": probe})
        command = hook._build_spark_submit_command("probe.py")
    except Exception as error:
        # Fail closed. The hook refuses a k8s:// master without the Kubernetes client
        # (provider 6.3.4: a NameError for the missing kube_client): that is still k8s.
        return True, f"{type(error).__name__}: {error}"
    return any(probe in part for part in command), str(hook._connection["master"])


def _refuse_env_on_the_command_line(spark_conn_id: str, secret_conn_id: str | None) -> None:
    """For YARN and Kubernetes masters, SparkSubmitHook turns ``env_vars`` into
    ``--conf spark.*Env.*`` arguments: a secret there would be on the command line."""
    on_command_line, master = env_on_the_command_line(spark_conn_id)
    if on_command_line:
        raise OrchestrationError(
            f"The {secret_conn_id} connection's password cannot reach a job on master "
            f"{master!r}: spark-submit would get it as a --conf argument. Give the driver "
            "its credentials another way (a Kubernetes secret, a YARN credential file)."
        )


def spark_submit(
    application: Path,
    submit: PlainXComArg,
    *,
    task_id: str,
    name: str | None = None,
    **operator: Any,
) -> SparkSubmitOperator:
    """The spark-submit (:class:`KafkaSparkSubmitOperator`) of ``application`` with the
    keyword arguments that a :func:`plan_task` with ``single`` returned. ``name`` names
    the Spark application (``eventlake-<task_id>`` unless given); ``operator`` adds
    arguments of the operator (``retries``, ...). Call it inside the DAG.

    Example:
        >>> spark_submit(MAINTAIN_JOB, submit, task_id="maintain", name="eventlake-maintenance")
    """
    # The plan exists only when the DAG runs: each argument refers to its key of the plan
    # task's output (multiple_outputs), pulled then.
    planned: dict[str, Any] = {key: submit[key] for key in SUBMIT_KEYS}
    return KafkaSparkSubmitOperator(
        **_task_arguments(task_id, application, name), **planned, **operator
    )


def spark_submit_each(
    application: Path,
    submits: XComArg,
    *,
    task_id: str,
    name: str | None = None,
    map_index_template: str = FIRST_ARGUMENT,
    **operator: Any,
) -> MappedOperator:
    """One spark-submit of ``application`` per entry of the list that a :func:`plan_task`
    returned (a mapped task; skipped when the list is empty), one at a time, each labelled
    in the UI by ``map_index_template``. ``name`` and ``operator`` as for
    :func:`spark_submit`. Call it inside the DAG.

    Example:
        >>> spark_submit_each(INGEST_JOB, submits, task_id="ingest", outlets=[events, rejects])
    """
    return KafkaSparkSubmitOperator.partial(
        **_task_arguments(task_id, application, name),
        # One driver at a time: a small worker, and no race on first table creation.
        max_active_tis_per_dagrun=1,
        map_index_template=map_index_template,
        **operator,
    ).expand_kwargs(submits)


def _summary(function: Callable[..., Any]) -> str | None:
    """The first paragraph of ``function``'s docstring, if it has one."""
    doc = inspect.getdoc(function)
    return doc.split("\n\n")[0] if doc else None


def _task_arguments(task_id: str, application: Path, name: str | None) -> dict[str, Any]:
    """What every spark-submit task is given besides its plan; the master comes from the
    ``spark_default`` connection."""
    return {
        "task_id": task_id,
        "application": str(application),
        "conn_id": SPARK_CONN_ID,
        "name": name or f"eventlake-{task_id}",
        # The job's OpenLineage events name this task as their parent run: the OpenLineage
        # provider adds spark.openlineage.parent*/rootParent* confs (ids, no secret) when
        # the task runs. Never the transport, whatever [openlineage]
        # spark_inject_transport_info says: it would put an HTTP transport's API key on the
        # command line; the job reads the worker's OPENLINEAGE_* settings instead.
        "openlineage_inject_parent_job_info": True,
        "openlineage_inject_transport_info": False,
    }
