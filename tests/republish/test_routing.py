"""The plan a republish run sends (eventlake.republish.routing): its shape as Spark runs it."""

from __future__ import annotations

import pytest
from pyspark.sql import Observation, SparkSession

from eventlake.binding.decode import DECODER_FUNCTION
from eventlake.binding.encode import ENCODER_FUNCTION
from eventlake.republish.request import RepublishRequest
from eventlake.republish.routing import counted_plan, routed_records
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA


@pytest.mark.parametrize("to_mode", ["keep", "binary", "structured"])
def test_the_routing_decodes_and_encodes_each_record_once_behind_one_observation(
    spark: SparkSession, to_mode: str
) -> None:
    # The observation that counts the reasons keeps the filter of the records to send
    # above the decoder; a second node (the decoder's own barrier) would copy every row.
    request = RepublishRequest(source="a", target="b", to_mode=to_mode, key_mapper="partitionkey")
    raw = spark.createDataFrame([], KAFKA_SOURCE_SCHEMA)
    planned = routed_records(counted_plan(raw, request, Observation(), target_compacted=True))
    plan = planned._jdf.queryExecution().executedPlan().toString()
    assert plan.count(f"{DECODER_FUNCTION}(") == 1
    assert plan.count(f"{ENCODER_FUNCTION}(") == 1
    assert plan.count("CollectMetrics") == 1
