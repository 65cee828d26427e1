"""eventlake.duplicates: the first event per (source, id)."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import SparkSession

from eventlake.duplicates import unique_events


def test_unique_events_keeps_the_first_by_kafka_time_per_source_and_id(
    spark: SparkSession,
) -> None:
    rows = [
        ("/a", "1", datetime(2026, 1, 1, 0, 0, 2), "t", 0, 5),
        ("/a", "1", datetime(2026, 1, 1, 0, 0, 1), "t", 0, 9),
        ("/b", "1", datetime(2026, 1, 1, 0, 0, 3), "t", 0, 6),
        ("/a", "2", datetime(2026, 1, 1, 0, 0, 1), "t", 1, 2),
        ("/a", "2", datetime(2026, 1, 1, 0, 0, 1), "t", 0, 7),
    ]
    events = spark.createDataFrame(
        rows,
        "source string, id string, kafka_timestamp timestamp, kafka_topic string, "
        "kafka_partition int, kafka_offset long",
    )

    kept = {
        (r["source"], r["id"]): (r["kafka_partition"], r["kafka_offset"])
        for r in unique_events(events).collect()
    }

    assert kept == {("/a", "1"): (0, 9), ("/b", "1"): (0, 6), ("/a", "2"): (0, 7)}
