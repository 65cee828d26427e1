"""Concurrent writers on the same Delta tables: nothing fails, nothing is lost.

(a) OPTIMIZE of ``state/<topic>`` commits while an ingest's state MERGE is under way.
    Timing alone would make that overlap a matter of luck, so the test makes it certain:
    the MERGE's source passes a gate (a Python UDF that waits for a file) that holds the
    MERGE after it has read the table and before it commits; OPTIMIZE runs and commits
    meanwhile, then the gate opens. Delta then refuses the MERGE's commit (the files it
    read were rewritten), and eventlake.state.retry retries it on the new snapshot.
(b) Two ingest runs on different topics, on two threads of the shared SparkSession,
    start together on a fresh warehouse and append to the same ``events`` and
    ``rejects`` tables in several micro-batches each.
"""

from __future__ import annotations

import io
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, Final

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

import eventlake.state.apply
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.ledger.commits import Ledger
from eventlake.local.broker import LocalBroker
from eventlake.state.recorded_risk import recorded_compaction_risk
from eventlake.state.table import record_compaction_risk
from eventlake.warehouse.names import state_path
from eventlake.warehouse.tables import ensure_tables
from tests.helpers import COORDINATES, binary_headers, produce_events, read_table

KEYS: Final = 8
GATE_TIMEOUT_S: Final = 300.0


# ---------------------------------------------------------------------------------------
# (a) OPTIMIZE while a state MERGE commits
# ---------------------------------------------------------------------------------------


def keyed_records(start: int, count: int, keys: range) -> list[Record]:
    """Events e<n> over ``keys`` (k<i>); every 5th is a tombstone (binary, no value)."""
    return [
        (
            f"k{keys[n % len(keys)]}".encode(),
            None if n % 5 == 4 else b"%d" % n,
            list(binary_headers(f"e{n}")),
        )
        for n in range(start, start + count)
    ]


def expected_state(records: list[Record]) -> dict[bytes, str]:
    """Latest record per key in log order; a tombstone removes the key."""
    state: dict[bytes, str] = {}
    for key, value, headers in records:
        assert key is not None
        if value is None:
            state.pop(key, None)
        else:
            state[key] = dict(headers)["ce_id"].decode()
    return state


def _gate_udf(spark: SparkSession, gate: Path) -> Callable[[Column], Column]:
    """A UDF that, while ``gate/armed`` exists and ``gate/open`` does not, writes
    ``gate/entered`` and waits for ``gate/open``; it always returns True."""
    folder = str(gate)

    def wait(_: object) -> bool:
        import os
        import time

        armed, opened = os.path.join(folder, "armed"), os.path.join(folder, "open")
        if os.path.exists(armed) and not os.path.exists(opened):
            with open(os.path.join(folder, "entered"), "w"):
                pass
            deadline = time.monotonic() + GATE_TIMEOUT_S
            while not os.path.exists(opened) and time.monotonic() < deadline:
                time.sleep(0.05)
        return True

    # Python workers must run this interpreter (the session's default is `python3` on
    # PATH, which need not be the project's Python): the UDF takes the executable when
    # it is created.
    context = spark.sparkContext
    previous = context.pythonExec
    context.pythonExec = sys.executable
    try:
        udf = F.udf(wait, "boolean").asNondeterministic()
        return lambda column: udf(column)
    finally:
        context.pythonExec = previous


def _wait_for(path: Path, thread: threading.Thread) -> None:
    """Wait until ``path`` exists; fail early when ``thread`` ended without reaching it."""
    done = threading.Event()
    while not path.exists():
        assert thread.is_alive(), f"{path.name} never reached"
        done.wait(0.1)


@contextmanager
def gated_state_merge(spark: SparkSession, gate: Path) -> Iterator[None]:
    """Route the source of every state MERGE through the gate."""
    original = eventlake.state.apply.merge_source
    gate_column = _gate_udf(spark, gate)

    def gated(rows: DataFrame) -> DataFrame:
        # After the checkpoint, so the gate runs inside the MERGE, not before it.
        return original(rows).where(gate_column(F.col("kafka_offset")))

    eventlake.state.apply.merge_source = gated
    try:
        yield
    finally:
        eventlake.state.apply.merge_source = original


def _ingest_through_gate(
    spark: SparkSession,
    settings: Settings,
    request: IngestRequest,
    gate: Path,
    during: Callable[[], Any],
) -> tuple[IngestSummary, Any, str]:
    """Run ``request`` in a thread with its state MERGE held at the gate, call ``during``
    while it waits there, then open the gate. Returns the run's summary, what ``during``
    returned and what the run printed; fails the test when the run failed."""
    gate.mkdir()
    outcome: dict[str, Any] = {}
    output = io.StringIO()

    def ingest() -> None:
        try:
            outcome["summary"] = run_ingest(spark, settings, request)
        except Exception as error:  # reported by the assertion below
            outcome["error"] = error

    with gated_state_merge(spark, gate), redirect_stdout(output):
        (gate / "armed").touch()
        thread = threading.Thread(target=ingest, name="ingest-with-state")
        thread.start()
        try:
            _wait_for(gate / "entered", thread)
            during_result = during()
        finally:
            (gate / "open").touch()
            thread.join(timeout=GATE_TIMEOUT_S)
    assert "error" not in outcome, f"ingest failed: {outcome.get('error')}"
    return outcome["summary"], during_result, output.getvalue()


def _state(spark: SparkSession, settings: Settings, topic: str) -> dict[bytes, str]:
    rows = spark.read.format("delta").load(str(state_path(settings, topic))).collect()
    assert len({bytes(r["kafka_key"]) for r in rows}) == len(rows), "a key twice in state"
    return {bytes(r["kafka_key"]): r["id"] for r in rows}


def _history(spark: SparkSession, path: Path) -> list[str]:
    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, str(path)).history().collect()
    return [r["operation"] for r in sorted(rows, key=lambda r: r["version"])]


# The gate's UDF has type hints; PySpark warns that they do not name a pandas UDF type.
@pytest.mark.filterwarnings("ignore:Cannot infer the eval type from type hints")
@pytest.mark.parametrize("applied_by", ["rewrite", "merge"])
def test_a_compaction_risk_recorded_during_a_state_batch_loses_nothing(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    applied_by: str,
) -> None:
    # The compaction check of another run records a risk on the state table (a change of
    # its properties) while a stream's batch applies its state: merge, the MERGE is made
    # again, not failed; rewrite, the batch's rewrite (eventlake.state.rewrite) starts its
    # commit after it, on the version with the risk (a commit that loses to one is renewed:
    # tests/ledger/test_ledger.py).
    if applied_by == "merge":
        monkeypatch.setattr(eventlake.state.apply, "_rewrite_with_marks", lambda *a, **k: None)
    settings = warehouse_settings
    request = IngestRequest(topics=(topic_name,), state=True)
    create_topic(settings, topic_name)
    first = keyed_records(0, 40, range(0, KEYS))
    second = keyed_records(40, 40, range(0, 2 * KEYS))
    produce_all(settings, topic_name, first)
    run_ingest(spark, settings, request)
    table = state_path(settings, topic_name)
    produce_all(settings, topic_name, second)

    _, _, output = _ingest_through_gate(
        spark,
        settings,
        request,
        tmp_path / "gate",
        lambda: record_compaction_risk(spark, str(table), {"found_at": "test"}),
    )
    if applied_by == "merge":
        assert "retrying" in output, output[-2000:]
    assert _state(spark, settings, topic_name) == expected_state(first + second)
    assert recorded_compaction_risk(table) == {"found_at": "test"}


# The gate's UDF has type hints; PySpark warns that they do not name a pandas UDF type.
@pytest.mark.filterwarnings("ignore:Cannot infer the eval type from type hints")
@pytest.mark.parametrize("applied_by", ["rewrite", "merge"])
def test_optimize_committing_during_a_state_batch_loses_nothing(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    applied_by: str,
) -> None:
    # rewrite: the batch's rewrite of the files (eventlake.state.rewrite) finds them
    # changed and the batch is MERGEd; merge: the MERGE itself loses the race and retries.
    if applied_by == "merge":
        monkeypatch.setattr(eventlake.state.apply, "_rewrite_with_marks", lambda *a, **k: None)
    # One partition and 40 records per batch: each list below is exactly one batch.
    settings = warehouse_settings.model_copy(update={"max_offsets_per_trigger": 40})
    request = IngestRequest(topics=(topic_name,), state=True)
    create_topic(settings, topic_name)
    first = keyed_records(0, 40, range(0, KEYS))
    second = keyed_records(40, 40, range(KEYS, 2 * KEYS))
    third = keyed_records(80, 40, range(0, 2 * KEYS))
    # A first run of two batches on disjoint keys leaves the state table in several
    # files (the second batch only inserts), so OPTIMIZE has files to rewrite; the
    # gated run reads and rewrites files of both.
    produce_all(settings, topic_name, first + second)
    assert run_ingest(spark, settings, request).batches == 2
    table = state_path(settings, topic_name)
    produce_all(settings, topic_name, third)

    summary, optimized, output = _ingest_through_gate(
        spark,
        settings,
        request,
        tmp_path / "gate",
        lambda: spark.sql(f"OPTIMIZE delta.`{table}`").collect()[0]["metrics"],
    )
    assert optimized["numFilesRemoved"] >= 2 and optimized["numFilesAdded"] == 1
    operations = _history(spark, table)
    # OPTIMIZE committed between the first run's commits and the gated run's MERGE (then
    # its ledger commit, a WRITE of no rows).
    assert operations[-3:] == ["OPTIMIZE", "MERGE", "WRITE"], operations
    said = "retrying" if applied_by == "merge" else "changed under the batch's rewrite"
    assert said in output, output[-2000:]
    assert _state(spark, settings, topic_name) == expected_state(first + second + third)
    assert summary.records_read == len(third)
    events = read_table(spark, settings, "events")
    assert events.count() == events.select(COORDINATES).distinct().count() == 120


def test_a_column_added_to_events_while_a_batch_commits_loses_nothing(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A newer eventlake's ensure_tables adds a column to the events table (a change of its
    # metadata) after this batch wrote its events files and before it commits them: the
    # batch commits the same files on the new version, each record once.
    settings = warehouse_settings
    create_topic(settings, topic_name)
    valid, invalid = produce_events(settings, topic_name, 30, invalid_every=7)
    events_path = str(settings.table_path("events"))
    write = Ledger.write
    added: list[str] = []

    def write_then_add_a_column(self: Ledger, path: str, rows: DataFrame | None) -> Any:
        pending = write(self, path, rows)
        if path == events_path and not added:
            spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (`added_later` STRING)")
            added.append(path)
        return pending

    monkeypatch.setattr(Ledger, "write", write_then_add_a_column)
    output = io.StringIO()
    with redirect_stdout(output):
        summary = run_ingest(spark, settings, IngestRequest(topics=(topic_name,)))

    assert added, "the column was never added"
    assert "committing the same files" in output.getvalue(), output.getvalue()[-2000:]
    assert (summary.events, summary.rejects) == (valid, invalid)
    events = read_table(spark, settings, "events")
    assert "added_later" in events.columns
    assert events.count() == events.select(COORDINATES).distinct().count() == valid
    assert read_table(spark, settings, "rejects").count() == invalid


# ---------------------------------------------------------------------------------------
# (b) Two ingest runs on different topics, same tables, at the same time
# ---------------------------------------------------------------------------------------


def test_two_ingests_of_different_topics_write_the_same_tables_at_once(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings
) -> None:
    settings = warehouse_settings.model_copy(update={"max_offsets_per_trigger": 60})
    topics = [f"t-{uuid.uuid4().hex[:10]}-{side}" for side in ("a", "b")]
    produced: dict[str, tuple[int, int]] = {}
    for topic in topics:
        create_topic(settings, topic, partitions=2)
        produced[topic] = produce_events(settings, topic, 150, prefix=topic, invalid_every=10)
    assert not settings.table_path("events").exists()  # both runs create the tables

    start = threading.Barrier(len(topics))
    results: dict[str, IngestSummary | BaseException] = {}

    def ingest(topic: str) -> None:
        start.wait(timeout=60)
        try:
            results[topic] = run_ingest(spark, settings, IngestRequest(topics=(topic,)))
        except BaseException as error:  # reported by the assertion below
            results[topic] = error

    threads = [threading.Thread(target=ingest, args=(t,), name=f"ingest-{t}") for t in topics]
    with redirect_stdout(io.StringIO()):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=900)

    failures = {
        t: "".join(traceback.format_exception(r))[-3000:]
        for t, r in results.items()
        if isinstance(r, BaseException)
    }
    assert not failures, "\n".join(failures.values())
    events = read_table(spark, settings, "events")
    rejects = read_table(spark, settings, "rejects")
    for topic, (valid, invalid) in produced.items():
        summary = results[topic]
        assert isinstance(summary, IngestSummary)
        assert summary.batches >= 2
        assert (summary.events, summary.rejects) == (valid, invalid)
        mine_events = events.where(F.col("kafka_topic") == topic)
        mine_rejects = rejects.where(F.col("kafka_topic") == topic)
        assert mine_events.count() == mine_events.select(COORDINATES).distinct().count() == valid
        assert mine_rejects.count() == invalid
        offsets = mine_events.select(*COORDINATES).union(mine_rejects.select(*COORDINATES))
        assert offsets.distinct().count() == valid + invalid
    assert events.count() == sum(v for v, _ in produced.values())


def test_tables_created_by_two_writers_at_once_are_created_once(
    spark: SparkSession, settings: Settings, tmp_path: Path
) -> None:
    """The creation race of (b), made frequent: two threads create the tables of a fresh
    warehouse at the same instant, a few times over. Each round ends with both calls
    returning and each table created once (one commit, version 0)."""
    from delta.tables import DeltaTable

    errors: list[BaseException] = []

    def create(target: Settings, start: threading.Barrier) -> None:
        start.wait(timeout=60)
        try:
            ensure_tables(spark, target)
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    for round_ in range(4):
        fresh = settings.model_copy(update={"warehouse": tmp_path / f"w{round_}"})
        start = threading.Barrier(2)
        threads = [threading.Thread(target=create, args=(fresh, start)) for _ in range(2)]
        with redirect_stdout(io.StringIO()):
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
        assert errors == [], errors
        for name in ("events", "rejects"):
            history = DeltaTable.forPath(spark, str(fresh.table_path(name))).history()
            operations = [r["operation"] for r in history.orderBy("version").collect()]
            assert operations == ["CREATE TABLE"], operations
