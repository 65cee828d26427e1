"""eventlake.views.duplicates: the first event per (source, id)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.binding.decode import EVENT_COLUMNS
from eventlake.views.duplicates import landed_identities, unique_events
from eventlake.warehouse.schemas import EVENTS_SCHEMA


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


def _events(ids: list[str], at: datetime) -> list[tuple[object, ...]]:
    names = list(EVENT_COLUMNS)
    values = {"source": "/s", "kafka_timestamp": at, "kafka_topic": "t", "kafka_partition": 0}
    return [
        tuple({**values, "id": i, "kafka_offset": n}.get(c) for c in names)
        for n, i in enumerate(ids)
    ]


def test_landed_identities_leave_out_events_a_deletion_vector_removed(
    spark: SparkSession, tmp_path: Path
) -> None:
    # The files still hold a row a deletion vector removed: read through Delta, not them.
    path = str(tmp_path / "events")
    rows = _events(["1", "2", "3"], datetime(2026, 1, 1, 1))
    spark.createDataFrame(rows, EVENTS_SCHEMA).write.format("delta").option(
        "delta.enableDeletionVectors", "true"
    ).save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = '2'")

    landed = landed_identities(spark, path, 1, datetime(2026, 1, 1))

    assert sorted(r["id"] for r in landed.collect()) == ["1", "3"]


def test_landed_identities_are_the_events_from_since_on(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "events")
    for hour, ids in ((1, ["1", "2"]), (3, ["3"])):
        rows = _events(ids, datetime(2026, 1, 1, hour))
        spark.createDataFrame(rows, EVENTS_SCHEMA).write.format("delta").mode("append").save(path)

    landed = landed_identities(spark, path, 1, datetime(2026, 1, 1, 2))

    assert [(r["source"], r["id"], r["_landed"]["offset"]) for r in landed.collect()] == [
        ("/s", "3", 0)
    ]
