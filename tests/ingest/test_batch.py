"""The plans of --dedup's passes (eventlake.ingest.batch): each decodes every record once."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame, Observation, SparkSession

from eventlake.binding.decode import DECODER_FUNCTION
from eventlake.ingest.batch import decided_events, duplicate_verdicts
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA


def _plan(frame: DataFrame) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def test_the_duplicates_pass_decodes_each_record_once_behind_no_observation(
    spark: SparkSession,
) -> None:
    # The window per (source, id) keeps the verdicts' filters above the decoder; the
    # decoder's own barrier would copy every row once more.
    records = spark.createDataFrame([], KAFKA_SOURCE_SCHEMA)

    plan = _plan(duplicate_verdicts(records, None, timedelta(days=7), {("t", 0): 5}))

    assert plan.count(f"{DECODER_FUNCTION}(") == 1
    assert plan.count("CollectMetrics") == 0


def test_the_events_pass_decodes_each_record_once_behind_its_counting_observation(
    spark: SparkSession,
) -> None:
    records = spark.createDataFrame([], KAFKA_SOURCE_SCHEMA)
    verdicts = spark.createDataFrame(
        [("t", 0, 3, "duplicate_event", "duplicate of ...")],
        "kafka_topic string, kafka_partition int, kafka_offset long, "
        "_verdict_reason string, _verdict_detail string",
    )

    plan = _plan(decided_events(records, verdicts, Observation()))

    assert plan.count(f"{DECODER_FUNCTION}(") == 1
    assert plan.count("CollectMetrics") == 1
