"""A run of several topics as each topic's own: the topics Kafka does not have refused
one by one (the others land), and an OpenLineage run per topic, named as that topic's
run alone is (``ingest.<topic>``), with its own row counts.

Example:
    >>> request, refused = present_topics(settings, IngestRequest(topics=("a", "typo")))
    >>> request.topics, list(refused)
    (('a',), ['typo'])
    >>> with lineage_runs(spark, settings, request) as lineage:
    ...     lineage.record(summary)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from pyspark.sql import SparkSession

from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.ingest.request import IngestRequest, IngestSummary
from eventlake.ingest.state_step import kept_state
from eventlake.kafka.connection import check_connection
from eventlake.kafka.topics import absent_topics, partition_counts
from eventlake.runs.lineage import LineageRun, job_run, kafka_dataset, warehouse_dataset
from eventlake.runs.triggers import AVAILABLE_NOW
from eventlake.typed.names import typed_tables
from eventlake.warehouse.names import EVENTS, REJECTS, TYPED_FOLDER, state_table

_log = progress_log(__name__)


def present_topics(
    settings: Settings, request: IngestRequest
) -> tuple[IngestRequest, dict[str, str]]:
    """``request`` without the topics Kafka does not have, and per such topic the
    sentence it is refused with, when it names several and Kafka has some of them;
    otherwise ``request`` as it is (the run refuses it whole, or lands it whole).

    Example:
        >>> present_topics(settings, IngestRequest(topics=("orders",)))[1]
        {}
    """
    if len(request.topics) < 2:
        return request, {}
    check_connection(settings)
    refused = absent_topics(settings, request.topics)
    if not refused or len(refused) == len(request.topics):
        return request, {}
    for topic, reason in sorted(refused.items()):
        _log.warning(f"ingest[{topic}]: refused: {reason}")
    present = tuple(t for t in request.topics if t not in refused)
    return dataclasses.replace(request, topics=present), refused


def ingest_job_name(request: IngestRequest, topics: tuple[str, ...] | None = None) -> str:
    """The OpenLineage job name of an ingest of ``topics`` (default: the request's), or
    of its pattern.

    Example:
        >>> ingest_job_name(IngestRequest(topics=("orders", "customers")))
        'ingest.customers,orders'
    """
    if request.topic_pattern:
        return f"ingest.pattern:{request.topic_pattern}"
    return "ingest." + ",".join(sorted(request.topics if topics is None else topics))


@dataclass
class TopicLineage:
    """The OpenLineage runs of one ingest: per topic of a run of several, or one."""

    settings: Settings
    request: IngestRequest
    #: (the topics of the run, its lineage run); one topic each for a run of several.
    runs: list[tuple[tuple[str, ...], LineageRun]]

    def record(self, summary: IngestSummary) -> None:
        """Each run's row counts from ``summary``, and the outputs known only now."""
        settings = self.settings
        enabled = [(topics, lineage) for topics, lineage in self.runs if lineage.enabled]
        if not enabled:
            return  # no lineage: not even the typed tables' listing
        events, rejects = (warehouse_dataset(settings, n) for n in (EVENTS, REJECTS))
        typed = [
            warehouse_dataset(settings, f"{TYPED_FOLDER}/{path.name}")
            for path in (typed_tables(settings).values() if settings.typed_tables else ())
        ]
        for topics, lineage in enabled:
            if self.request.topic_pattern:
                # The topics a pattern matched are known only now (one more metadata call).
                matched = partition_counts(settings, pattern=self.request.topic_pattern)
                lineage.inputs += [kafka_dataset(settings.bootstrap_servers, t) for t in matched]
            if len(self.runs) > 1:
                landed, rejected = summary.by_topic.get(topics[0], [0, 0])
            else:
                landed, rejected = summary.events, summary.rejects
            lineage.row_counts.update({events: landed, rejects: rejected})
            # The typed tables are known only now: a run may make one.
            lineage.outputs += typed


@contextmanager
def lineage_runs(
    spark: SparkSession, settings: Settings, request: IngestRequest
) -> Iterator[TopicLineage]:
    """The ingest's OpenLineage runs around the block (:func:`eventlake.runs.lineage.job_run`):
    one per topic of a run of several, else one; they end as the block does.

    Example:
        >>> with lineage_runs(spark, settings, request) as lineage:
        ...     lineage.record(land(request))
    """
    groups = [(t,) for t in request.topics] if len(request.topics) > 1 else [request.topics]
    events, rejects = (warehouse_dataset(settings, n) for n in (EVENTS, REJECTS))
    streaming = not request.bounded and request.trigger != AVAILABLE_NOW
    with ExitStack() as stack:
        runs = []
        for topics in groups:
            states = [
                warehouse_dataset(settings, state_table(t))
                for t in kept_state(settings, request, list(topics))
            ]
            lineage = job_run(
                spark,
                ingest_job_name(request, topics),
                inputs=[kafka_dataset(settings.bootstrap_servers, t) for t in topics],
                outputs=[events, rejects, *states],
                streaming=streaming,
            )
            runs.append((topics, stack.enter_context(lineage)))
        yield TopicLineage(settings, request, runs)
