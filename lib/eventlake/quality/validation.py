"""Validating a run's slice: each topic's events suite and the rejects-rate suite run
through GX, their outcomes turned into :class:`CheckResult` rows in suite order.

The events suites are judged by GX from the counts of one pass over the slice
(:mod:`eventlake.quality.measure`); for a failed check its condition runs again in Spark
and the first ``SAMPLE_SIZE`` Kafka coordinates of offending rows are kept, so a person
can find the records, with their values of the checked column as examples. The rejects
rate is judged the same way, from each topic's counts of events and rejects.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from great_expectations.expectations.core.expect_column_max_to_be_between import (
    ExpectColumnMaxToBeBetween,
)
from great_expectations.expectations.expectation import Expectation
from great_expectations.expectations.row_conditions import Column as GxColumn
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.quality.config import CheckName, TopicRules
from eventlake.quality.gx import (
    Validator,
    exception_message,
    expectation_label,
    results_by_plan_index,
)
from eventlake.quality.measure import TopicMeasures
from eventlake.quality.model import SUITE_INDEX, CheckCounts
from eventlake.quality.request import QualityError
from eventlake.quality.results import CheckResult, Coordinate, clip
from eventlake.quality.suite import LATEST_TIME_PARAMETER, suite_checks
from eventlake.warehouse.names import EVENTS, KAFKA_COORDINATES

SAMPLE_SIZE: Final = 10

#: Distinct offending values a failed check's observed value shows at most.
EXAMPLES: Final = 3


def _observed(result: Mapping[str, Any], examples: tuple[Any, ...] = ()) -> str:
    if "observed_value" in result:
        return str(result["observed_value"])
    unexpected = result.get("unexpected_count")
    if unexpected is None:
        return ""
    text = f"{unexpected} of {result.get('element_count')} rows"
    shown: list[str] = []
    for value in examples:
        value_text = clip("null" if value is None else repr(value), 40)
        if value_text not in shown:
            shown.append(value_text)
        if len(shown) == EXAMPLES:
            break
    return text + (f"; e.g. {', '.join(shown)}" if shown and unexpected else "")


def _sample(
    frame: DataFrame, condition: Column, column: str | None = None
) -> tuple[tuple[Coordinate, ...], tuple[Any, ...]]:
    """The first :data:`SAMPLE_SIZE` offending rows' Kafka coordinates and, with
    ``column``, their values of it: one small job, run only for a check that failed."""
    shown = [] if column is None else [F.col(column).alias("_value")]
    rows = (
        frame.where(condition)
        .select(*KAFKA_COORDINATES, *shown)
        .orderBy(*KAFKA_COORDINATES)
        .limit(SAMPLE_SIZE)
        .collect()
    )
    coordinates = tuple((r["kafka_topic"], r["kafka_partition"], r["kafka_offset"]) for r in rows)
    return coordinates, tuple(r["_value"] for r in rows) if column is not None else ()


def check_topic(
    validator: Validator,
    topic: str,
    rules: TopicRules,
    frame: DataFrame,
    measured: TopicMeasures,
    *,
    latest_time: datetime,
    has_occurrences: bool,
) -> list[CheckResult]:
    """Judge one topic's events slice against its rules from its counts (``measured``, by
    :func:`eventlake.quality.measure.measure_slice` with the suite of the same rules and
    ``latest_time``); results in suite order. ``frame`` (every topic's rows, with the
    derived columns) is read again only for the sample of a check that failed.

    Example:
        >>> results = check_topic(
        ...     validator, "orders", rules, frame, measured["orders"], latest_time=latest,
        ...     has_occurrences=True,
        ... )
        >>> [(r.check.value, r.success) for r in results][:1]
        [('required_not_null', True)]
    """
    suite = suite_checks(rules, latest_time=latest_time, has_occurrences=has_occurrences)
    if not suite:
        return []
    if len(suite) != len(measured.unexpected):
        raise QualityError(f"topic {topic}: the counts were taken for another suite of checks")
    outcome = validator.record(
        f"{EVENTS}.{topic}",
        validator.events_batch,
        [p.expectation for p in suite],
        [measured.counts_of(index, p.column) for index, p in enumerate(suite)],
        {LATEST_TIME_PARAMETER: latest_time},
    )
    by_index = results_by_plan_index(outcome)
    own_rows = frame.where(F.col("kafka_topic") == topic)
    results: list[CheckResult] = []
    for index, entry in enumerate(suite):
        result = by_index[index]
        details = result.result or {}
        error = exception_message(result.exception_info)
        success = bool(result.success) and error is None
        sample: tuple[Coordinate, ...] = ()
        examples: tuple[Any, ...] = ()
        if not success and error is None and entry.unexpected is not None:
            sample, examples = _sample(own_rows, entry.unexpected, entry.column)
        results.append(
            CheckResult(
                topic=topic,
                check=entry.check,
                expectation=expectation_label(result.expectation_config),
                severity=entry.severity,
                success=success,
                observed_value=f"error: {clip(error, 200)}"
                if error
                else _observed(details, examples),
                unexpected_count=details.get("unexpected_count"),
                unexpected_sample=sample,
            )
        )
    return results


def check_rejects_rates(
    validator: Validator,
    rules: Mapping[str, TopicRules],
    counts: Mapping[str, tuple[int, int]],
    rejects: DataFrame,
) -> list[CheckResult]:
    """Rejects / (events + rejects) per topic, judged by GX from the counts as the events
    suites are (:meth:`Validator.record`): one suite for all topics, one expectation per
    topic on the ``rejects_rate`` column of a table of one row per topic, restricted to its
    topic's row with a row condition (what Data Docs show); ``rejects`` is read only for
    the sample of a topic that failed.

    Example:
        >>> check_rejects_rates(validator, {"orders": rules}, {"orders": (97, 3)}, rejects)[0]
        CheckResult(topic='orders', ..., observed_value='0.0300 (3 of 100 records rejected)', ...)
    """
    topics = [t for t, r in rules.items() if r.enabled(CheckName.REJECTS_RATE)]
    if not topics:
        return []
    rows = []
    expectations: list[Expectation] = []
    measured: list[CheckCounts] = []
    for index, topic in enumerate(topics):
        events_count, rejects_count = counts.get(topic, (0, 0))
        total = events_count + rejects_count
        rate = rejects_count / total if total else 0.0
        rows.append((topic, events_count, rejects_count, rate))
        measured.append(CheckCounts(rows=1, maximum=rate))
        threshold = rules[topic].max_rejects_rate
        severity = rules[topic].severity_of(CheckName.REJECTS_RATE)
        expectations.append(
            ExpectColumnMaxToBeBetween(
                column="rejects_rate",
                max_value=threshold,
                row_condition=GxColumn("kafka_topic") == topic,
                description=f"{CheckName.REJECTS_RATE.value} [{severity}]: at most "
                f"{threshold:.2%} of the records of topic {topic} are rejects",
                meta={"eventlake_check": CheckName.REJECTS_RATE.value, SUITE_INDEX: index},
            )
        )
    outcome = validator.record(
        f"{EVENTS}.rejects_rate", validator.stats_batch, expectations, measured, {}
    )
    by_index = results_by_plan_index(outcome)
    results = []
    for index, (topic, events_count, rejects_count, rate) in enumerate(rows):
        result = by_index[index]
        error = exception_message(result.exception_info)
        success = bool(result.success) and error is None
        sample: tuple[Coordinate, ...] = ()
        if not success and error is None:
            sample, _ = _sample(rejects, F.col("kafka_topic") == topic)
        results.append(
            CheckResult(
                topic=topic,
                check=CheckName.REJECTS_RATE,
                expectation=expectation_label(result.expectation_config),
                severity=rules[topic].severity_of(CheckName.REJECTS_RATE),
                success=success,
                observed_value=f"error: {clip(error, 200)}"
                if error
                else f"{rate:.4f} ({rejects_count} of {events_count + rejects_count} records "
                "rejected)",
                unexpected_count=rejects_count,
                unexpected_sample=sample,
            )
        )
    return results
