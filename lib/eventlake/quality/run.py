"""A data-quality run over the events table: Great Expectations, executed by Spark.

One run (:func:`run_checks`):

1. **Slice.** By default only the rows added since the last check: the Delta versions
   after the one recorded in ``dq_results`` (see :mod:`eventlake.quality.slices`);
   ``--full`` takes the whole table at its current version. ``rejects`` is sliced the
   same way.
2. **Derive** the columns some rules need, as Spark expressions: how often each
   (source, id) occurs in the whole table, the invalid extension names, the
   partitionkey extension.
3. **Count** in one aggregate pass over the slice, for every topic at once, what each
   topic's checks need: rows, nulls per checked column, offending rows per check
   (:mod:`eventlake.quality.measure`).
4. **Validate** per topic: an expectation suite built from the topic's rules
   (:mod:`eventlake.quality.config`, :mod:`eventlake.quality.suite`) is judged by GX from
   those counts; the rejects rate runs through GX's Spark data source on a one-row-per-
   topic frame of the slice's counts (:mod:`eventlake.quality.validation`).
5. **Sample**: for a failed check its condition runs again in Spark and the first 10
   Kafka coordinates of offending rows are kept, so a person can find the records.
6. **Publish**: GX Data Docs are rebuilt under ``<warehouse>/dq_docs`` and one row per
   expectation is appended to ``<warehouse>/dq_results``, which also records the versions
   checked (the next run starts after them; :mod:`eventlake.quality.results`).

Only result rows, per-topic counts and samples reach the driver; the table never does.

Example:
    >>> report = run_checks(spark, settings, CheckRequest(topic="orders"))
    >>> print(report.render())
    >>> report.exit_code  # 1 when a check of severity "error" failed
    0
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.quality.config import (
    CheckName,
    QualityConfig,
    QualityConfigError,
    TopicRules,
    load_quality_config,
)
from eventlake.quality.gx import DQ_DOCS, GX_STORES, Validator
from eventlake.quality.measure import TopicMeasures, measure_slice, no_rows
from eventlake.quality.model import SuiteCheck
from eventlake.quality.request import CheckRequest, QualityError, require_checkable
from eventlake.quality.results import CheckReport, last_checked_versions, write_results
from eventlake.quality.slices import read_slice, table_as_of
from eventlake.quality.suite import (
    CHECKED_COLUMNS,
    NO_REPEATS,
    repeated_identities,
    suite_checks,
    with_occurrences,
    with_topic_columns,
)
from eventlake.quality.validation import check_rejects_rates, check_topic
from eventlake.runs.lineage import Assertion, job_run, warehouse_dataset
from eventlake.runs.stop_signals import StopSignals, cancel_spark_jobs
from eventlake.spark.rows import local_rows, release
from eventlake.storage.store import working_copy
from eventlake.warehouse.catalog import register_warehouse
from eventlake.warehouse.names import DQ_RESULTS, REJECTS, is_delta_table
from eventlake.warehouse.schemas import REJECTS_SCHEMA
from eventlake.warehouse.tables import rejected_by_ingest


def _topic_counts(frame: DataFrame) -> dict[str, int]:
    rows = frame.groupBy("kafka_topic").count().collect()
    return {r["kafka_topic"]: int(r["count"]) for r in rows}


def run_checks(
    spark: SparkSession,
    settings: Settings,
    request: CheckRequest,
    *,
    config: QualityConfig | None = None,
) -> CheckReport:
    """Check the new slice (or the whole table) of the events table; see the module doc.
    With its OpenLineage run events when lineage is configured (:mod:`eventlake.runs.lineage`).

    ``config`` defaults to ``settings.quality``. Topics checked: those in the slice (events
    or rejects) plus the configured ones (their row-count bounds catch a topic that went
    quiet), or only ``request.topic``.

    Example:
        >>> report = run_checks(spark, settings, CheckRequest(full=True))
        >>> [r.check for r in report.failed_errors]
        [<CheckName.SOURCE_URI_REFERENCE: 'source_uri_reference'>]
    """
    table, rejects = (warehouse_dataset(settings, n) for n in (request.table, REJECTS))
    results = warehouse_dataset(settings, DQ_RESULTS)
    # A stop signal cancels the Spark jobs (from a thread of its own) and the run records
    # nothing: the next run checks the same rows.
    signals = StopSignals(
        "check",
        "cancelling its Spark jobs; a stopped run records nothing in dq_results",
        on_stop=cancel_spark_jobs(spark),
    )
    try:
        with (
            signals.installed(),
            job_run(
                spark, check_job_name(request), inputs=[table, rejects], outputs=[results]
            ) as lineage,
        ):
            report = _run_checks(spark, settings, request, config, signals)
            lineage.assertions[table] = [
                Assertion(r.check.value, r.success, r.severity, r.topic) for r in report.results
            ]
            lineage.row_counts[results] = len(report.results)
    except _CheckStopped as stopped:
        return stopped.report
    register_warehouse(spark, settings)  # dq_results, after its first run
    return report


class _CheckStopped(Exception):
    """A stop signal ended the run before it recorded anything (its report says which)."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__(f"check stopped by {report.stopped_by}")
        self.report = report


def check_job_name(request: CheckRequest) -> str:
    """The OpenLineage job name of a check: its table, and its topic if it has one.

    Example:
        >>> check_job_name(CheckRequest(topic="orders"))
        'check.events.orders'
    """
    return ".".join(["check", request.table, *([request.topic] if request.topic else [])])


def _run_checks(
    spark: SparkSession,
    settings: Settings,
    request: CheckRequest,
    config: QualityConfig | None,
    signals: StopSignals,
) -> CheckReport:
    try:
        rules_config = config or load_quality_config(settings.quality)
    except QualityConfigError as error:
        raise QualityError(str(error)) from error
    require_checkable(settings, request)
    table_path = settings.table_path(request.table)
    run_time = datetime.now(UTC)
    run_id = uuid.uuid4().hex
    after_table, after_rejects = last_checked_versions(settings, request)
    events_slice = read_slice(spark, table_path, after_table)
    rejects_path = settings.table_path(REJECTS)
    rejects_slice = (
        read_slice(spark, rejects_path, after_rejects) if is_delta_table(rejects_path) else None
    )
    description = events_slice.describe(request.table) + (
        f", {rejects_slice.describe(REJECTS)}" if rejects_slice else ", rejects absent"
    )
    # Only what the checks read: never the data or the raw record.
    events = events_slice.frame.select(*CHECKED_COLUMNS)
    rejects = (
        # Only the ingest job's rejects: republish records its own reads of a topic too.
        # (Rows written before rejected_by existed have it null; they were ingest's.)
        rejects_slice.frame.where(rejected_by_ingest())
        if rejects_slice
        else local_rows(spark, [], REJECTS_SCHEMA)
    )
    if request.topic is not None:
        events = events.where(F.col("kafka_topic") == request.topic)
        rejects = rejects.where(F.col("kafka_topic") == request.topic)
        description += f", topic {request.topic}"
    report = CheckReport(run_id, run_time, request.table, description)

    configured = list(rules_config.topics)
    uniqueness = rules_config.defaults.enabled(CheckName.UNIQUE_SOURCE_ID) or any(
        rules_config.rules_for(t).enabled(CheckName.UNIQUE_SOURCE_ID) for t in configured
    )
    named = [request.topic] if request.topic is not None else configured
    named_rules = {topic: rules_config.rules_for(topic) for topic in named}

    def latest_time(rules: TopicRules) -> datetime:
        return run_time + timedelta(seconds=rules.max_future_skew_seconds)

    def suite_of(rules: TopicRules) -> list[SuiteCheck]:
        return suite_checks(rules, latest_time=latest_time(rules), has_occurrences=uniqueness)

    # Every check of every topic counted in one pass over the slice; GX judges the counts.
    suites: dict[str | None, list[SuiteCheck]] = {t: suite_of(r) for t, r in named_rules.items()}
    if request.topic is None:
        suites[None] = suite_of(rules_config.defaults)

    def measured_slice(events: DataFrame) -> tuple[DataFrame, dict[str, TopicMeasures]]:
        events = with_topic_columns(events, rules_config.defaults, named_rules)
        return events, measure_slice(events, suites)

    def stopped() -> _CheckStopped:
        report.results, report.stopped_by = [], signals.signal_name
        return _CheckStopped(report)

    counted = events
    try:
        if uniqueness:
            # Against the table as of the slice's end, so both sides agree on what exists.
            table = table_as_of(spark, table_path, events_slice.end_version)
            whole = events_slice.after is None
            # The repeated identities are looked for while the slice is counted as if none
            # repeats, the usual case: the two jobs' planning and driver time overlap. When
            # some repeat, the slice is counted again with them.
            with ThreadPoolExecutor(max_workers=1) as pool:
                finding = pool.submit(repeated_identities, events, table, whole=whole)
                counted = with_occurrences(events, table, whole=whole, repeated=NO_REPEATS)
                counted, measured = measured_slice(counted)
                repeated = finding.result()
            if repeated:
                counted = with_occurrences(events, table, whole=whole, repeated=repeated)
                counted, measured = measured_slice(counted)
        else:
            counted, measured = measured_slice(events)
        events = counted
        event_counts = {t: m.rows for t, m in measured.items() if m.rows}
        reject_counts = _topic_counts(rejects)
        if request.topic is not None:
            topics = [request.topic]
        else:
            topics = sorted(set(event_counts) | set(reject_counts) | set(configured))
        if signals.signal_name is not None:
            # Stopped between Spark jobs: before Great Expectations records anything.
            raise stopped()
        if topics:
            docs_folder = settings.warehouse / DQ_DOCS
            with (
                working_copy(settings.warehouse / GX_STORES) as stores,
                working_copy(docs_folder) as docs,
            ):
                validator = Validator.create(
                    run_id, run_time, stores=stores, docs=docs,
                    docs_location=Location.of(docs_folder).as_uri(),
                )  # fmt: skip
                rules = {topic: rules_config.rules_for(topic) for topic in topics}
                for topic in topics:
                    # A topic with rejects only has no row in the slice: its counts are zeros.
                    topic_measures = measured.get(topic) or no_rows(
                        suites[topic] if topic in suites else suites[None]
                    )
                    report.results += check_topic(
                        validator,
                        topic,
                        rules[topic],
                        events,
                        topic_measures,
                        latest_time=latest_time(rules[topic]),
                        has_occurrences=uniqueness,
                    )
                counts = {t: (event_counts.get(t, 0), reject_counts.get(t, 0)) for t in topics}
                report.results += check_rejects_rates(validator, rules, counts, rejects)
                # Grouped by topic for reading; the sort is stable, suite order stays.
                report.results.sort(key=lambda r: r.topic)
                report.docs_index = validator.build_docs()
        rejects_version = rejects_slice.end_version if rejects_slice else -1
        if signals.signal_name is not None:
            raise stopped()
        # Last: the versions recorded here are where the next incremental run starts.
        write_results(settings, report, request, (events_slice.end_version, rejects_version))
    except Exception as error:
        # A job the stop cancelled fails with Spark's error: the stop is what to report.
        if signals.signal_name is None or isinstance(error, _CheckStopped):
            raise
        raise stopped() from error
    finally:
        # The repeated (source, id) keys with_occurrences held.
        release(counted)
    return report
