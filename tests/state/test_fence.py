"""The state table's fence: a state change computed from marks another process has
since moved commits nothing, so an older record never overwrites a newer one, without
any lease (two Ledger objects are two processes on one table)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from eventlake.binding.decode import EVENT_COLUMNS
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.ingest.state_backlog import landed_between
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.ledger.commits import Ledger
from eventlake.ledger.marks import STATE, fence_key, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.state.apply import StateFencedError, StateMarks, apply_state
from eventlake.state.table import ensure_state_table
from eventlake.warehouse.delta_log import delta_rs_table
from eventlake.warehouse.names import delta_path_sql
from tests.helpers import binary_headers


def test_a_merge_from_marks_moved_since_is_skipped_and_the_newer_rows_stay(
    spark: SparkSession, broker: LocalBroker, warehouse_settings: Settings, topic_name: str
) -> None:
    topic = topic_name
    create_topic(warehouse_settings, topic, config={"cleanup.policy": "compact"})
    produce_all(
        warehouse_settings,
        topic,
        [
            (b"a", b"1", binary_headers("a1")),
            (b"b", b"1", binary_headers("b1")),
            (b"a", b"2", binary_headers("a2")),
        ],
    )
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic,)))  # events only
    events = str(warehouse_settings.table_path("events"))
    rejects = str(warehouse_settings.table_path("rejects"))

    def records(end: int):  # type: ignore[no-untyped-def]
        return landed_between(spark, events, rejects, {}, {(topic, 0): end})

    # A table with rows and a column of its own: state steps MERGE into it.
    path = ensure_state_table(spark, warehouse_settings, topic)
    records(2).where("kafka_offset = 1").select(*EVENT_COLUMNS).write.format("delta").mode(
        "append"
    ).save(path)
    spark.sql(f"ALTER TABLE {delta_path_sql(path)} ADD COLUMNS (note STRING)")
    slow, fast = Ledger(spark), Ledger(spark)
    slow.marks(path, STATE, [topic])  # reads the marks (none) and the fence (0)

    fast_marks = StateMarks(fast, {(topic, 0): 3}, caught_up_ms=None, note="fast")
    apply_state(spark, warehouse_settings, records(3), topics=[topic], marks=fast_marks)
    slow_marks = StateMarks(slow, {(topic, 0): 1}, caught_up_ms=None, note="slow")
    with pytest.raises(StateFencedError, match="another process changed the state table"):
        apply_state(spark, warehouse_settings, records(1), topics=[topic], marks=slow_marks)

    rows = spark.read.format("delta").load(path).collect()
    assert {bytes(r.kafka_key): r.id for r in rows} == {b"a": "a2", b"b": "b1"}
    assert read_marks(path, STATE, [topic])[1] == {(topic, 0): 3}
    assert delta_rs_table(path).transaction_version(fence_key(topic)) == 1
