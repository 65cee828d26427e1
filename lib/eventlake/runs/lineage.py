"""OpenLineage run events of eventlake's jobs: START, then COMPLETE or FAIL, with the
Kafka topics and Delta tables a run reads and writes, tied to the Airflow task that
submitted it.

The jobs emit their own events (with the ``openlineage-python`` client) rather than
relying on OpenLineage's Spark listener: the listener does not see writes made inside
``foreachBatch`` (OpenLineage issue 3398), and ingest and republish write there.

Off unless OpenLineage is configured by its usual settings (:func:`lineage_configured`):
``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``, ``OPENLINEAGE__TRANSPORT__*`` variables or an
``openlineage.yml`` where the client looks for one; ``OPENLINEAGE_DISABLED=true`` turns it
off. When off, the client is not even imported. A failure to emit never fails a job: it
prints one warning line.

Dataset names follow OpenLineage's naming conventions (:mod:`eventlake.runs.datasets`,
whose names this module re-exports): a topic is ``kafka://<host:port>`` and its name; a
Delta table is ``file`` and its absolute path (or ``<scheme>://<authority>`` and the
path), with its catalog name as a ``symlinks`` facet when a metastore is set.

Example:
    >>> with job_run(spark, "ingest.orders", inputs=[kafka_dataset("kafka:9092", "orders")],
    ...              outputs=[table_dataset("/lake/events")]) as run:
    ...     run.row_counts[table_dataset("/lake/events")] = 120
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from eventlake import __version__
from eventlake.core.progress import progress_log
from eventlake.runs.datasets import (
    Dataset,
    kafka_dataset,
    kafka_namespace,
    metastore_namespace,
    table_dataset,
    warehouse_dataset,
)

_log = progress_log(__name__)

__all__ = [
    "DEFAULT_NAMESPACE",
    "MAX_ERROR_CHARS",
    "PARENT_CONFS",
    "PARENT_ENV",
    "PRODUCER",
    "ROOT_PARENT_ENV",
    "Assertion",
    "Dataset",
    "LineageRun",
    "ParentRun",
    "job_run",
    "kafka_dataset",
    "kafka_namespace",
    "lineage_configured",
    "metastore_namespace",
    "parent_from_conf",
    "parent_from_env",
    "parse_run_id",
    "spark_parent",
    "table_dataset",
    "warehouse_dataset",
]

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Who produced the events (a URI, as the spec asks).
PRODUCER: Final = f"urn:eventlake:{__version__}"
#: The namespace of eventlake's jobs unless ``OPENLINEAGE_NAMESPACE`` names another.
DEFAULT_NAMESPACE: Final = "eventlake"
#: The Spark confs the Airflow OpenLineage provider puts on a spark-submit
#: (``openlineage_inject_parent_job_info``), by the field of :class:`ParentRun` they fill.
PARENT_CONFS: Final = {
    "namespace": "spark.openlineage.parentJobNamespace",
    "name": "spark.openlineage.parentJobName",
    "run_id": "spark.openlineage.parentRunId",
    "root_namespace": "spark.openlineage.rootParentJobNamespace",
    "root_name": "spark.openlineage.rootParentJobName",
    "root_run_id": "spark.openlineage.rootParentRunId",
}
#: ``<namespace>/<job name>/<run id>`` of the parent (and root) run, as the provider's
#: ``lineage_parent_id`` macro renders it: for a job started outside SparkSubmitOperator.
PARENT_ENV: Final = "OPENLINEAGE_PARENT_ID"
ROOT_PARENT_ENV: Final = "OPENLINEAGE_ROOT_PARENT_ID"
#: An error message in a FAIL event is cut to this many characters.
MAX_ERROR_CHARS: Final = 2000


@dataclass(frozen=True)
class Assertion:
    """One data-quality check's outcome on an input (OpenLineage's
    ``dataQualityAssertions`` facet): the check, whether it passed, its severity, and a
    name that tells it apart (the topic it ran on).

    Example:
        >>> Assertion("required_not_null", False, "error", "orders").success
        False
    """

    assertion: str
    success: bool
    severity: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class ParentRun:
    """The run that started this one (an Airflow task instance) and the root of its tree
    (the DAG run).

    Example:
        >>> ParentRun("airflow", "eventlake_ingest.ingest", "0190...").root_name
        'eventlake_ingest.ingest'
    """

    namespace: str
    name: str
    run_id: str
    root_namespace: str | None = None
    root_name: str | None = None
    root_run_id: str | None = None

    def __post_init__(self) -> None:
        # No root given: the parent is its own root, as OpenLineage's integrations assume.
        if not (self.root_namespace and self.root_name and self.root_run_id):
            object.__setattr__(self, "root_namespace", self.namespace)
            object.__setattr__(self, "root_name", self.name)
            object.__setattr__(self, "root_run_id", self.run_id)


def lineage_configured(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> bool:
    """Whether OpenLineage is configured by its usual settings and not disabled: the
    places the OpenLineage client reads its transport from.

    Example:
        >>> lineage_configured({"OPENLINEAGE_URL": "http://marquez:5000"})
        True
        >>> lineage_configured({"OPENLINEAGE_URL": "http://m", "OPENLINEAGE_DISABLED": "true"})
        False
    """
    env = os.environ if env is None else env
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OPENLINEAGE_URL") or env.get("OPENLINEAGE_CONFIG"):
        return True
    if any(key.startswith("OPENLINEAGE__TRANSPORT") and value for key, value in env.items()):
        return True
    home = Path(env.get("HOME", "~")).expanduser()
    yamls = [(cwd or Path.cwd()) / "openlineage.yml", home / ".openlineage" / "openlineage.yml"]
    return any(path.is_file() for path in yamls)


def parent_from_conf(conf: Mapping[str, str | None]) -> ParentRun | None:
    """The parent run from the ``spark.openlineage.parent*`` / ``rootParent*`` confs the
    Airflow provider injects; None unless the parent's namespace, name and run id are all
    there.

    Example:
        >>> parent_from_conf({"spark.openlineage.parentJobNamespace": "airflow",
        ...                   "spark.openlineage.parentJobName": "dag.task",
        ...                   "spark.openlineage.parentRunId": "0190"}).name
        'dag.task'
    """
    values = {key: conf.get(name) or None for key, name in PARENT_CONFS.items()}
    if not (values["namespace"] and values["name"] and values["run_id"]):
        return None
    return ParentRun(**values)  # type: ignore[arg-type]


def parse_run_id(text: str | None) -> tuple[str, str, str] | None:
    """``<namespace>/<job name>/<run id>`` split in three (a job name may hold slashes);
    None when it is not of that form.

    Example:
        >>> parse_run_id("airflow/eventlake_ingest.ingest/0190-ab")
        ('airflow', 'eventlake_ingest.ingest', '0190-ab')
    """
    if not text:
        return None
    namespace, _, rest = text.strip().partition("/")
    name, _, run_id = rest.rpartition("/")
    if not (namespace and name and run_id):
        return None
    return namespace, name, run_id


def parent_from_env(env: Mapping[str, str] | None = None) -> ParentRun | None:
    """The parent run from ``OPENLINEAGE_PARENT_ID`` (and ``OPENLINEAGE_ROOT_PARENT_ID``),
    each ``<namespace>/<job name>/<run id>``; None without a parent.

    Example:
        >>> parent_from_env({"OPENLINEAGE_PARENT_ID": "airflow/dag.task/0190"}).run_id
        '0190'
    """
    env = os.environ if env is None else env
    parent = parse_run_id(env.get(PARENT_ENV))
    if parent is None:
        return None
    root = parse_run_id(env.get(ROOT_PARENT_ENV)) or (None, None, None)
    return ParentRun(*parent, *root)


def spark_parent(spark: SparkSession | None) -> ParentRun | None:
    """The parent run of this job: from its Spark conf (spark-submit by Airflow with
    ``openlineage_inject_parent_job_info``), else from the environment.

    Example:
        >>> spark_parent(spark) is None  # started by hand
        True
    """
    if spark is not None:
        conf = {name: spark.conf.get(name, None) for name in PARENT_CONFS.values()}
        found = parent_from_conf(conf)
        if found is not None:
            return found
    return parent_from_env()


@dataclass
class LineageRun:
    """One job run's lineage: what it reads and writes, which the job may complete while
    it runs (``inputs``/``outputs``), rows written per output (``row_counts``) and data
    quality assertions per input (``assertions``).

    ``enabled`` is False when lineage is off: then nothing else is looked at.
    """

    job_name: str
    inputs: list[Dataset]
    outputs: list[Dataset]
    enabled: bool
    row_counts: dict[Dataset, int] = field(default_factory=dict)
    assertions: dict[Dataset, list[Assertion]] = field(default_factory=dict)


@contextmanager
def job_run(
    spark: SparkSession | None,
    job_name: str,
    *,
    inputs: Sequence[Dataset] = (),
    outputs: Sequence[Dataset] = (),
    streaming: bool = False,
) -> Iterator[LineageRun]:
    """Emit START, run the block, then COMPLETE (or FAIL with the error, which goes on).
    Does nothing when lineage is off (:func:`lineage_configured`).

    Example:
        >>> with job_run(spark, "check.events", inputs=[table_dataset("/lake/events")]):
        ...     run_the_checks()
    """
    run = LineageRun(job_name, list(inputs), list(outputs), enabled=lineage_configured())
    if not run.enabled:
        yield run
        return
    emitter = _Emitter.create(spark, job_name, streaming)
    emitter.emit("START", run)
    try:
        yield run
    except BaseException as error:
        emitter.emit("FAIL", run, error=error)
        raise
    emitter.emit("COMPLETE", run)


def _warn(what: str, error: BaseException) -> None:
    # One line, no traceback: lineage is never a reason to look at a job's log twice.
    message = " ".join(str(error).split())[:300]
    _log.warning(f"lineage: WARNING {what}: {type(error).__name__}: {message}")


class _Emitter:
    """The OpenLineage client and what every event of one run shares; after a failure to
    emit, it stays quiet (one warning per run)."""

    def __init__(self, client: Any, job_name: str, run_id: str, run_facets: dict[str, Any]):
        self.client = client
        self.job_name = job_name
        self.run_id = run_id
        self.run_facets = run_facets
        self.job_facets: dict[str, Any] = {}
        self.namespace = os.environ.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE

    @classmethod
    def create(cls, spark: SparkSession | None, job_name: str, streaming: bool) -> _Emitter:
        try:
            # Imported here: with lineage off, a job never pays for the client's import.
            from openlineage.client import OpenLineageClient
            from openlineage.client.facet_v2 import job_type_job, processing_engine_run
            from openlineage.client.uuid import generate_new_uuid

            client = OpenLineageClient()
            facets: dict[str, Any] = {}
            if spark is not None:
                facets["processing_engine"] = processing_engine_run.ProcessingEngineRunFacet(
                    version=spark.version, name="spark", openlineageAdapterVersion=__version__
                )
            parent = spark_parent(spark)
            if parent is not None:
                facets["parent"] = _parent_facet(parent)
            emitter = cls(client, job_name, str(generate_new_uuid()), facets)
            emitter.job_facets["jobType"] = job_type_job.JobTypeJobFacet(
                processingType="STREAMING" if streaming else "BATCH",
                integration="EVENTLAKE",
                jobType="JOB",
            )
            return emitter
        except Exception as error:
            _warn("lineage events are off for this run (the OpenLineage client failed)", error)
            return cls(None, job_name, "", {})

    def emit(self, state: str, run: LineageRun, error: BaseException | None = None) -> None:
        if self.client is None:
            return
        try:
            self.client.emit(self._event(state, run, error))
        except Exception as failure:
            _warn(f"could not emit the {state} event of {self.job_name}", failure)
            self.client = None

    def _event(self, state: str, run: LineageRun, error: BaseException | None) -> Any:
        from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
        from openlineage.client.facet_v2 import error_message_run

        facets = dict(self.run_facets)
        if error is not None:
            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS],
                programmingLanguage="python",
                stackTrace="".join(traceback.format_exception(error))[-MAX_ERROR_CHARS:],
            )
        return RunEvent(
            eventType=RunState[state],
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=self.run_id, facets=facets),
            job=Job(namespace=self.namespace, name=self.job_name, facets=self.job_facets),
            inputs=[_input(d, run) for d in sorted(set(run.inputs))],
            outputs=[_output(d, run, final=state == "COMPLETE") for d in sorted(set(run.outputs))],
            producer=PRODUCER,
        )


def _parent_facet(parent: ParentRun) -> Any:
    from openlineage.client.facet_v2 import parent_run as facet

    return facet.ParentRunFacet(
        run=facet.Run(runId=parent.run_id),
        job=facet.Job(namespace=parent.namespace, name=parent.name),
        root=facet.Root(
            run=facet.RootRun(runId=str(parent.root_run_id)),
            job=facet.RootJob(namespace=str(parent.root_namespace), name=str(parent.root_name)),
        ),
    )


def _input(dataset: Dataset, run: LineageRun) -> Any:
    from openlineage.client.event_v2 import InputDataset
    from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq

    facets: dict[str, Any] = {}
    if dataset in run.assertions:
        facets["dataQualityAssertions"] = dq.DataQualityAssertionsDatasetFacet(
            assertions=[
                dq.Assertion(
                    assertion=a.assertion, success=a.success, severity=a.severity, name=a.name
                )
                for a in run.assertions[dataset]
            ]
        )
    return InputDataset(
        namespace=dataset.namespace,
        name=dataset.name,
        facets=_dataset_facets(dataset),
        inputFacets=facets,
    )


def _dataset_facets(dataset: Dataset) -> dict[str, Any]:
    """The ``symlinks`` facet of a table with a catalog name (one identifier, ``TABLE``)."""
    from openlineage.client.facet_v2 import symlinks_dataset as symlinks

    if dataset.symlink is None:
        return {}
    link = dataset.symlink
    identifier = symlinks.Identifier(namespace=link.namespace, name=link.name, type="TABLE")
    return {"symlinks": symlinks.SymlinksDatasetFacet(identifiers=[identifier])}


def _output(dataset: Dataset, run: LineageRun, *, final: bool) -> Any:
    from openlineage.client.event_v2 import OutputDataset
    from openlineage.client.facet_v2 import output_statistics_output_dataset as stats

    facets: dict[str, Any] = {}
    if final and dataset in run.row_counts:
        facets["outputStatistics"] = stats.OutputStatisticsOutputDatasetFacet(
            rowCount=run.row_counts[dataset]
        )
    return OutputDataset(
        namespace=dataset.namespace,
        name=dataset.name,
        facets=_dataset_facets(dataset),
        outputFacets=facets,
    )
