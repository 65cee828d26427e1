"""Check planning: which expectations a topic's rules give, in which order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame, SparkSession

from eventlake.quality import suite as suite_module
from eventlake.quality.config import CheckName, TopicRules
from eventlake.quality.suite import OCCURRENCES, suite_checks, with_occurrences
from eventlake.spark.rows import release

# A plan holds Spark Columns (the conditions of offending rows): building one needs an
# active session.
pytestmark = pytest.mark.usefixtures("spark")


def test_checks_needing_topic_settings_are_off_by_default() -> None:
    planned = {p.check for p in suite_checks(TopicRules(), latest_time=datetime.now(UTC))}
    optional = {CheckName.TYPE_PATTERN, CheckName.TIME_PRESENT, CheckName.PARTITIONKEY_PRESENT}
    assert not planned & optional
    assert CheckName.SOURCE_URI_REFERENCE in planned


def test_check_selection_limits_the_plan() -> None:
    rules = TopicRules(checks=frozenset({CheckName.SPECVERSION, CheckName.ROW_COUNT}))
    planned = [p.check for p in suite_checks(rules, latest_time=datetime.now(UTC))]
    assert planned == [CheckName.SPECVERSION, CheckName.ROW_COUNT]


def _identities(spark: SparkSession, pairs: list[tuple[str | None, str | None]]) -> DataFrame:
    return spark.createDataFrame(pairs, "source string, id string")


def _occurrences(frame: DataFrame) -> list[tuple[str | None, str | None, int | None]]:
    rows = frame.select("source", "id", OCCURRENCES).collect()
    return sorted(((r[0], r[1], r[2]) for r in rows), key=str)


@pytest.mark.parametrize("collected_max", [10_000, 0], ids=["collected", "held"])
def test_occurrences_count_each_identity_in_the_whole_table(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, collected_max: int
) -> None:
    # The repeated identities' hashes are collected to the driver when few, else held on
    # the executors: both ways count the same.
    monkeypatch.setattr(suite_module, "COLLECTED_HASHES_MAX", collected_max)
    table = _identities(
        spark, [("/a", "1"), ("/a", "1"), ("/a", "2"), ("/b", "1"), (None, "9"), (None, "9")]
    )

    counted = with_occurrences(table, table, whole=True)

    assert _occurrences(counted) == sorted(
        [
            ("/a", "1", 2),
            ("/a", "1", 2),
            ("/a", "2", 1),
            ("/b", "1", 1),
            (None, "9", None),
            (None, "9", None),
        ],
        key=str,
    )
    release(counted)


def test_occurrences_of_a_slice_count_the_rows_checked_before_it(spark: SparkSession) -> None:
    earlier = [("/a", "1"), ("/a", "1"), ("/c", "3")]
    new_slice = _identities(spark, [("/a", "1"), ("/b", "2")])
    table = _identities(spark, [*earlier, ("/a", "1"), ("/b", "2")])

    counted = with_occurrences(new_slice, table, whole=False)

    assert _occurrences(counted) == [("/a", "1", 3), ("/b", "2", 1)]
    release(counted)


def test_occurrences_with_no_repeat_are_one(spark: SparkSession) -> None:
    table = _identities(spark, [("/a", "1"), ("/a", "2")])

    assert _occurrences(with_occurrences(table, table, whole=True)) == [
        ("/a", "1", 1),
        ("/a", "2", 1),
    ]
