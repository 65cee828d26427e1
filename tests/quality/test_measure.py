"""One-pass counts judged by GX give what GX gives when it scans the slice itself.

A crafted slice of three topics breaks every check at least once (nulls, empty values,
bad patterns, repeats, a future time, a bad extension name, a missing partitionkey, too
many rows); two topics have rules of their own, the third the defaults. Each topic's
suite is validated both ways, GX's own Spark run and :func:`measure_slice` +
``Validator.record``, and every expectation's success and result must be the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from great_expectations.expectations.core.expect_column_max_to_be_between import (
    ExpectColumnMaxToBeBetween,
)
from great_expectations.expectations.expectation import Expectation
from great_expectations.expectations.row_conditions import Column as GxColumn
from pyspark.sql import DataFrame, Row, SparkSession

from eventlake.core.settings import Settings
from eventlake.quality.config import CheckName, TopicRules
from eventlake.quality.gx import Validator, judge, results_by_plan_index
from eventlake.quality.measure import measure_slice
from eventlake.quality.model import SUITE_INDEX, CheckCounts, SuiteCheck
from eventlake.quality.request import QualityError
from eventlake.quality.suite import (
    LATEST_TIME_PARAMETER,
    suite_checks,
    with_occurrences,
    with_topic_columns,
)
from eventlake.spark.rows import release
from eventlake.warehouse.schemas import EVENTS_SCHEMA

RUN_TIME = datetime(2026, 11, 25, 12, tzinfo=UTC)
DEFAULTS = TopicRules()
OWN_RULES = {
    "strict": TopicRules(
        keyed=True, time_required=True, type_pattern=r"^com[.]acme[.]", max_rows=3
    ),
    "short": TopicRules(max_extension_name_length=4, type_pattern=r"^org[.]"),
}


def _rows(topic: str) -> list[dict[str, Any]]:
    base = {
        "id": "a",
        "source": "/s",
        "specversion": "1.0",
        "type": "com.acme.x",
        "time": RUN_TIME - timedelta(hours=1),
        "datacontenttype": "application/json",
        "dataschema": "https://example.com/s.json",
        "extensions": {"partitionkey": "k"},
        "content_mode": "binary",
        "kafka_topic": topic,
        "kafka_partition": 0,
        "ingested_at": RUN_TIME,
    }
    variants: list[dict[str, Any]] = [
        {},
        {"id": None},
        {"source": ""},
        {"source": "bad uri with spaces"},
        {"specversion": "0.3"},
        {"type": "org.other.y"},
        {"time": None},
        {"time": RUN_TIME + timedelta(days=2)},
        {"datacontenttype": "not a media type"},
        {"dataschema": "relative/ref"},
        {"extensions": {"Trace": "x", "longname": "y"}},
        {"extensions": {}},
        {"id": "dup"},
        {"id": "dup"},
    ]
    return [
        {**base, "id": f"{topic}-{i}", **variant, "kafka_offset": i}
        for i, variant in enumerate(variants)
    ]


@pytest.fixture(scope="module")
def crafted(spark: SparkSession) -> Iterator[DataFrame]:
    rows = [r for topic in (*OWN_RULES, "plain") for r in _rows(topic)]
    frame = spark.createDataFrame(
        [Row(**{f: r.get(f) for f in EVENTS_SCHEMA.names}) for r in rows], EVENTS_SCHEMA
    )
    derived = with_occurrences(frame, frame, whole=True)
    yield with_topic_columns(derived, DEFAULTS, OWN_RULES)
    release(derived)


def _validator(folder: Path) -> Validator:
    docs = folder / "dq_docs"
    return Validator.create(
        "m", RUN_TIME, stores=folder / "_dq_gx", docs=docs, docs_location=docs.as_uri()
    )


def _plan(rules: TopicRules) -> list[SuiteCheck]:
    latest = RUN_TIME + timedelta(seconds=rules.max_future_skew_seconds)
    return suite_checks(rules, latest_time=latest, has_occurrences=True)


@pytest.mark.parametrize("topic", [*OWN_RULES, "plain"])
def test_counts_judged_by_gx_equal_gx_scanning_the_slice(
    crafted: DataFrame, settings: Settings, tmp_path: Any, topic: str
) -> None:
    rules = OWN_RULES.get(topic, DEFAULTS)
    validator = _validator(tmp_path)
    latest = {LATEST_TIME_PARAMETER: RUN_TIME + timedelta(seconds=rules.max_future_skew_seconds)}
    own = crafted.where(crafted.kafka_topic == topic)
    scanned_plan = _plan(rules)
    scanned = validator.validate(
        "scanned", validator.events_batch, [p.expectation for p in scanned_plan], own, latest
    )
    measured = measure_slice(
        crafted, {None: _plan(DEFAULTS), **{t: _plan(r) for t, r in OWN_RULES.items()}}
    )
    counted_plan = _plan(rules)
    counted = validator.record(
        "counted",
        validator.events_batch,
        [p.expectation for p in counted_plan],
        [measured[topic].counts_of(i, p.column) for i, p in enumerate(counted_plan)],
        latest,
    )
    by_scan, by_count = results_by_plan_index(scanned), results_by_plan_index(counted)
    assert len(by_count) == len(scanned_plan) > 10
    failed = set()
    for index, check in enumerate(scanned_plan):
        assert (by_count[index].success, by_count[index].result) == (
            by_scan[index].success,
            by_scan[index].result,
        ), check.check
        if not by_scan[index].success:
            failed.add(check.check)
    # The slice breaks the checks it was crafted to break.
    assert {
        CheckName.REQUIRED_NOT_NULL,
        CheckName.SPECVERSION,
        CheckName.UNIQUE_SOURCE_ID,
    } <= failed
    assert counted.success == scanned.success is False


def test_a_topic_counted_under_the_defaults_gets_the_defaults_plan(crafted: DataFrame) -> None:
    measured = measure_slice(crafted, {None: _plan(DEFAULTS), "strict": _plan(OWN_RULES["strict"])})
    assert set(measured) == {"strict", "short", "plain"}
    assert len(measured["short"].unexpected) == len(_plan(DEFAULTS))
    assert measured["plain"].rows == len(_rows("plain"))


def test_a_metric_the_counts_cannot_give_is_an_error_naming_it(spark: SparkSession) -> None:
    (row_count,) = [p for p in _plan(DEFAULTS) if p.check is CheckName.ROW_COUNT]
    not_null = _plan(DEFAULTS)[0].expectation
    # A column expectation judged without its column's counts.
    with pytest.raises(QualityError, match=r"column_values\.nonnull\.unexpected_count"):
        judge(not_null, CheckCounts(rows=3), {}, "b")
    assert judge(row_count.expectation, CheckCounts(rows=3), {}, "b").success


def test_a_largest_value_judged_by_gx_equals_gx_scanning_the_rows(
    spark: SparkSession, settings: Settings, tmp_path: Any
) -> None:
    # The rejects rate's shape: one row per topic, an expectation per topic on its row.
    rates = {"calm": 0.05, "noisy": 0.4}

    def expectations() -> list[Expectation]:
        return [
            ExpectColumnMaxToBeBetween(
                column="rejects_rate",
                max_value=0.1,
                row_condition=GxColumn("kafka_topic") == topic,
                meta={SUITE_INDEX: index},
            )
            for index, topic in enumerate(rates)
        ]

    frame = spark.createDataFrame(list(rates.items()), "kafka_topic string, rejects_rate double")
    validator = _validator(tmp_path)

    scanned = validator.validate("scanned", validator.stats_batch, expectations(), frame, {})
    counted = validator.record(
        "counted",
        validator.stats_batch,
        expectations(),
        [CheckCounts(rows=1, maximum=rate) for rate in rates.values()],
        {},
    )

    by_scan, by_count = results_by_plan_index(scanned), results_by_plan_index(counted)
    assert [(r.success, r.result) for r in by_count.values()] == [
        (by_scan[i].success, by_scan[i].result) for i in by_count
    ]
    assert [by_count[i].success for i in range(2)] == [True, False]
