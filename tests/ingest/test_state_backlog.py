"""A stream's state step every ``state_interval_seconds``: the backlog's bookkeeping, its
read-back (from the batches' commits, or from the tables when another lander came
between), and streams on the real broker that go quiet, stop, or fail with a backlog."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame, SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest, state_step
from eventlake.ingest.batch import BatchResult, land_batch
from eventlake.ingest.state_backlog import LandedBatch, StateBacklog, read_back
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic, topic_offsets
from eventlake.ledger.commits import Ledger
from eventlake.ledger.lease import topic_leases
from eventlake.ledger.marks import INGEST, STATE, read_marks
from eventlake.local.broker import LocalBroker
from eventlake.warehouse.names import EVENTS, REJECTS, state_path
from eventlake.warehouse.schemas import KAFKA_SOURCE_SCHEMA
from eventlake.warehouse.tables import ensure_tables
from tests.helpers import binary_headers, read_table, state_stream

# -- the backlog's bookkeeping ----------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _landed() -> BatchResult:
    return BatchResult({None: 1})


def test_a_backlog_is_due_once_its_interval_has_passed_and_only_with_batches() -> None:
    clock = _Clock()
    backlog = StateBacklog(interval_seconds=5.0, clock=clock)
    clock.now += 10
    assert not backlog.due()  # nothing to apply
    backlog.add(_landed(), {("t", 0): 10})
    assert backlog.due()
    backlog.applied()
    backlog.add(_landed(), {("t", 0): 20})
    clock.now += 4.9
    assert not backlog.due()
    clock.now += 0.1
    assert backlog.due()


def test_a_backlog_without_an_interval_is_due_after_every_batch() -> None:
    backlog = StateBacklog(interval_seconds=0.0, clock=_Clock())
    backlog.add(_landed(), {("t", 0): 10})
    assert backlog.due()


def test_a_backlog_ends_where_its_furthest_batch_ends_per_partition() -> None:
    backlog = StateBacklog(interval_seconds=5.0, clock=_Clock())
    backlog.add(BatchResult({}), {("t", 0): 10, ("t", 1): 7}, caught_up_ms=1000)
    backlog.add(BatchResult({}), {("t", 0): 25, ("u", 0): 3}, caught_up_ms=None)
    assert backlog.ends() == {("t", 0): 25, ("t", 1): 7, ("u", 0): 3}
    assert backlog.caught_up_ms() == 1000
    assert backlog.topics() == ["t", "u"]
    backlog.applied()
    assert backlog.batches == [] and backlog.ends() == {}


# -- reading the backlog back -----------------------------------------------------------------


def _kafka_rows(spark: SparkSession, topic: str, offsets: range) -> DataFrame:
    """Kafka source rows of binary events keyed k<offset % 5>, ids e<offset>."""
    now = datetime.now(UTC)
    return spark.createDataFrame(
        [
            (
                f"k{o % 5}".encode(),
                b"{}",
                topic,
                0,
                o,
                now,
                0,
                binary_headers(f"e{o}"),
            )
            for o in offsets
        ],
        KAFKA_SOURCE_SCHEMA,
    )


def _land(spark: SparkSession, settings: Settings, topic: str, offsets: range) -> LandedBatch:
    ends = {(topic, 0): offsets.stop}
    result = land_batch(
        spark,
        _kafka_rows(spark, topic, offsets),
        ledger=Ledger(spark),
        ends=ends,
        events_path=str(settings.table_path(EVENTS)),
        rejects_path=str(settings.table_path(REJECTS)),
        note="test",
    )
    return LandedBatch(result, ends)


def _ids(rows: DataFrame) -> list[str]:
    return sorted((r.id for r in rows.select("id").collect()), key=lambda i: int(i[1:]))


def test_a_backlog_of_consecutive_batches_is_read_back_from_their_commits(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    settings = warehouse_settings
    ensure_tables(spark, settings)
    backlog = [_land(spark, settings, "t", range(0, 4)), _land(spark, settings, "t", range(4, 9))]
    events, rejects = str(settings.table_path(EVENTS)), str(settings.table_path(REJECTS))

    rows, from_files = read_back(spark, backlog, None, events, rejects, {}, {("t", 0): 9})

    assert from_files
    assert _ids(rows) == [f"e{o}" for o in range(9)]
    # What the state marks hold already is not read again.
    rows, _ = read_back(spark, backlog, None, events, rejects, {("t", 0): 6}, {("t", 0): 9})
    assert _ids(rows) == ["e6", "e7", "e8"]


def test_a_backlog_with_another_landers_batch_between_is_read_from_the_tables(
    spark: SparkSession, warehouse_settings: Settings
) -> None:
    # A backfill (another process) landed offsets 4-5 between the stream's two batches:
    # the stream's commits do not hold them, the tables do.
    settings = warehouse_settings
    ensure_tables(spark, settings)
    first = _land(spark, settings, "t", range(0, 4))
    _land(spark, settings, "t", range(4, 6))
    last = _land(spark, settings, "t", range(6, 9))
    events, rejects = str(settings.table_path(EVENTS)), str(settings.table_path(REJECTS))

    rows, from_files = read_back(
        spark, [first, last], None, events, rejects, {("t", 0): 2}, {("t", 0): 9}
    )

    assert from_files
    assert _ids(rows) == [f"e{o}" for o in range(2, 9)]


# -- streams on the real broker ---------------------------------------------------------------


@pytest.fixture
def compacted(broker: LocalBroker, warehouse_settings: Settings, topic_name: str) -> str:
    create_topic(warehouse_settings, topic_name, partitions=2, config={"cleanup.policy": "compact"})
    return topic_name


def _produce_round(settings: Settings, topic: str, round_: int) -> None:
    """Keys k0-k9 set to id r<round>-k<n>; in odd rounds k0 is deleted (a tombstone)."""
    records: list[Record] = [
        (f"k{n}".encode(), b"{}", binary_headers(f"r{round_}-k{n}")) for n in range(10)
    ]
    if round_ % 2:
        records.append((b"k0", None, []))
    produce_all(settings, topic, records)


def _state(spark: SparkSession, settings: Settings, topic: str) -> dict[str, str]:
    rows = spark.read.format("delta").load(str(state_path(settings, topic))).collect()
    return {bytes(r.kafka_key).decode(): r.id for r in rows}


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting until {what}")


def _marks_at_head(settings: Settings, topic: str, table: str) -> bool:
    _, head = topic_offsets(settings, topic)
    path = state_path(settings, topic) if table == "state" else settings.table_path(table)
    if not path.joinpath("_delta_log").is_dir():
        return False
    job = STATE if table == "state" else INGEST
    _, marks = read_marks(path, job, [topic])
    return all(marks.get((topic, p), 0) >= end for p, end in head.items())


def _land_rounds(settings: Settings, topic: str, rounds: int) -> None:
    """:func:`_produce_round` ``rounds`` times, each waited for until its events landed."""
    for round_ in range(rounds):
        _produce_round(settings, topic, round_)
        _wait_until(lambda: _marks_at_head(settings, topic, EVENTS), "events landed")


def _expected_after(rounds: int) -> dict[str, str]:
    last = rounds - 1
    expected = {f"k{n}": f"r{last}-k{n}" for n in range(10)}
    if last % 2:
        del expected["k0"]
    return expected


def test_a_quiet_stream_applies_its_backlog_once_the_interval_has_passed(
    spark: SparkSession, warehouse_settings: Settings, compacted: str
) -> None:
    settings = warehouse_settings.model_copy(update={"state_interval_seconds": 4.0})
    with state_stream(spark, settings, compacted) as failures:
        _land_rounds(settings, compacted, 3)
        # No record arrives from here on, so Spark starts no batch: the state step comes
        # from the wait between batches.
        _wait_until(lambda: _marks_at_head(settings, compacted, "state"), "state applied")
        assert _state(spark, settings, compacted) == _expected_after(3)
    assert not failures, failures


def test_a_stream_that_stops_applies_its_backlog_first(
    spark: SparkSession, warehouse_settings: Settings, compacted: str
) -> None:
    settings = warehouse_settings.model_copy(update={"state_interval_seconds": 3600.0})
    with state_stream(spark, settings, compacted) as failures:
        _land_rounds(settings, compacted, 2)
        assert not _marks_at_head(settings, compacted, "state")  # an hour's interval
    assert not failures, failures
    assert _marks_at_head(settings, compacted, "state")
    assert _state(spark, settings, compacted) == _expected_after(2)


def test_a_stream_stopped_while_another_job_holds_its_topic_leaves_the_state_step_to_the_next_run(
    spark: SparkSession,
    warehouse_settings: Settings,
    compacted: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = warehouse_settings.model_copy(update={"state_interval_seconds": 3600.0})
    with state_stream(spark, settings, compacted) as failures:
        _land_rounds(settings, compacted, 2)
        with topic_leases(settings.warehouse, [compacted], job="the test's reconcile"):
            capsys.readouterr()
            # The stream stops here, its topic held: it does not wait for the lease.
            for query in spark.streams.active:
                query.stop()
            _wait_until(lambda: "left to the next run" in capsys.readouterr().out, "stop")
            assert not _marks_at_head(settings, compacted, "state")
    assert not failures, failures
    run_ingest(spark, settings, IngestRequest(topics=(compacted,), state=True, checkpoint_name="s"))
    assert _state(spark, settings, compacted) == _expected_after(2)
    assert read_table(spark, settings, EVENTS).count() == 20


def test_a_stream_that_fails_with_a_backlog_is_caught_up_by_the_next_run(
    spark: SparkSession,
    warehouse_settings: Settings,
    compacted: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = warehouse_settings.model_copy(update={"state_interval_seconds": 3600.0})

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("driver died before the state step")

    monkeypatch.setattr(state_step, "apply_state", crash)
    with state_stream(spark, settings, compacted) as failures:
        _land_rounds(settings, compacted, 2)
    assert [str(f) for f in failures] == ["driver died before the state step"]
    monkeypatch.undo()

    # The checkpoint is past what the state table holds: the next run restarts from the
    # state marks, lands no event twice and applies the rest.
    run_ingest(spark, settings, IngestRequest(topics=(compacted,), state=True, checkpoint_name="s"))
    assert _state(spark, settings, compacted) == _expected_after(2)
    assert read_table(spark, settings, EVENTS).count() == 20
