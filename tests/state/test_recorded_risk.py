"""The compaction risk kept in a state table's properties, read back with delta-rs."""

from __future__ import annotations

from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.state.recorded_risk import recorded_compaction_risk
from eventlake.state.table import record_compaction_risk
from eventlake.warehouse.names import state_path


def test_a_recorded_risk_reads_back_as_recorded_and_none_before(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    path = state_path(warehouse_settings, "customers")
    assert recorded_compaction_risk(path) is None  # no table yet
    spark.range(1).write.format("delta").save(str(path))
    assert recorded_compaction_risk(path) is None  # a table, no risk recorded

    record_compaction_risk(spark, str(path), {"found_at": "now", "next_offsets": {"0": 12}})

    assert recorded_compaction_risk(path) == {"found_at": "now", "next_offsets": {"0": 12}}
