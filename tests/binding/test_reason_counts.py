"""eventlake.binding.reason_counts: a batch counted by reason in the pass that writes it."""

from __future__ import annotations

import pytest
from pyspark.sql import Observation, SparkSession

from eventlake.binding.reason_counts import (
    CountMismatchError,
    ObservationMissingError,
    observe_reasons,
    observed_values,
    reason_counts,
)
from eventlake.spark.rows import local_rows


def test_rows_are_counted_per_reason_by_the_action_that_writes_them(
    spark: SparkSession,
) -> None:
    frame = spark.createDataFrame(
        [(1, None), (2, None), (3, "late"), (4, "bad"), (5, "late")], "n int, reason string"
    )
    seen = Observation()
    counted = observe_reasons(frame, seen, "reason", ["late", "bad", "never"])

    counted.where("reason IS NULL").write.format("noop").mode("overwrite").save()

    assert reason_counts(seen, ["late", "bad", "never"]) == {None: 2, "late": 2, "bad": 1}


def test_a_reason_left_out_of_the_list_is_an_error_not_a_miscount(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(1, None), (2, "unlisted")], "n int, reason string")
    seen = Observation()
    observe_reasons(frame, seen, "reason", ["late"]).write.format("noop").mode("overwrite").save()

    with pytest.raises(CountMismatchError, match="2 rows but 1 counted"):
        reason_counts(seen, ["late"])


def test_counts_of_a_frame_no_action_ran_over_are_an_error_not_a_wait(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("eventlake.binding.reason_counts._ARRIVAL_SECONDS", 0.5)
    seen = Observation()
    observe_reasons(spark.range(3).selectExpr("NULL AS reason"), seen, "reason", [])

    with pytest.raises(ObservationMissingError, match="no Spark job filled"):
        reason_counts(seen, [])


def test_a_frame_known_to_be_empty_is_observed_as_no_values_not_an_error(
    spark: SparkSession,
) -> None:
    """Below an aggregate, Spark drops the observing node over an empty local frame (the
    state step's read-back of a commit that added no files): the counts are zero."""
    seen = Observation()
    empty = local_rows(spark, [], spark.range(1).selectExpr("'x' AS reason").schema)
    counted = observe_reasons(empty, seen, "reason", ["late"])
    counted.groupBy("reason").count().localCheckpoint(eager=True)

    assert observed_values(seen) == {}
    assert reason_counts(seen, ["late"]) == {}
