"""eventlake.runs.streaming: streaming jobs as real processes stopped with real signals
(the batch finishes, the summary is printed, exit 0, the restart resumes exactly once),
progress lines, and the trigger check."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path

import psutil
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.listener import StreamingQueryProgress

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import produce_all
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.kafka.topics import create_topic
from eventlake.ledger.checkpoint import CheckpointBusyError
from eventlake.ledger.commits import Ledger
from eventlake.ledger.lease import LeaseTimeoutError, topic_leases
from eventlake.local.broker import LocalBroker
from eventlake.republish import RepublishRequest, run_republish
from eventlake.runs.streaming import StreamSpec, _progress_line, run_stream
from eventlake.runs.triggers import trigger_problem
from eventlake.status.checkpoints import streams_reading
from tests.fault_tools import Job
from tests.helpers import produce_events, read_table

#: Seconds a stopped job may take to exit: the batch in progress, then Spark's stop.
STOP_SECONDS = 60


def _job_process(
    settings: Settings, *arguments: str, own_group: bool = False
) -> subprocess.Popen[str]:
    """The eventlake CLI as a stream; ``own_group``: in a process group of its own, as
    ``timeout`` and service managers start a job."""
    env = Job.environment(settings, batch=None) | {"EVENTLAKE_PROGRESS_SECONDS": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "eventlake.cli",
            *arguments,
            "--trigger",
            "processing-time=1 second",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=own_group,
    )


def _read_until(process: subprocess.Popen[str], lines: list[str], *wanted: str) -> None:
    """Append the process's lines to ``lines`` until each of ``wanted`` is in one."""
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.strip())
        if all(any(w in seen for seen in lines) for w in wanted):
            return
    raise AssertionError(f"the process ended before printing {wanted}: {lines}")


def _stop(process: subprocess.Popen[str], lines: list[str]) -> int:
    """SIGTERM the process (its pid only, as ``kill`` does); its exit status."""
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=STOP_SECONDS)
    lines.extend(rest.splitlines())
    return process.returncode


def test_an_ingest_stream_lands_records_produced_while_it_runs_and_stops_on_sigterm(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 40, prefix="a")
    process = _job_process(warehouse_settings, "ingest", "--topic", topic_name)
    lines: list[str] = []
    request = IngestRequest(topics=(topic_name,))

    _read_until(process, lines, "batch 0 done, 40 records")
    produce_events(warehouse_settings, topic_name, 10, prefix="b")
    _read_until(process, lines, "done, 10 records", "ingest: running")
    with pytest.raises(CheckpointBusyError, match=rf"pid {process.pid} "):
        run_ingest(spark, warehouse_settings, request)
    streams = streams_reading(warehouse_settings, topic_name)
    status = _stop(process, lines)

    assert [(s.holder or {}).get("pid") for s in streams] == [process.pid]
    assert status == 0
    assert lines[-1].startswith("ingest: read=50 events=50")
    assert lines[-1].endswith("stopped_by=SIGTERM")
    produce_events(warehouse_settings, topic_name, 5, prefix="c")
    resumed = run_ingest(spark, warehouse_settings, request)
    events = read_table(spark, warehouse_settings, "events")
    assert resumed.records_read == 5
    assert events.count() == events.select("kafka_offset").distinct().count() == 55


def test_sigterm_to_the_whole_process_group_stops_the_stream_as_sigterm_to_it_does(
    broker: LocalBroker, warehouse_settings: Settings, topic_name: str
) -> None:
    # timeout(1) and systemd signal the job's driver JVM too: the JVM ignores SIGTERM
    # (eventlake.spark.session.ignore_sigterm_in_jvm) and ends with the job.
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 20)
    process = _job_process(warehouse_settings, "ingest", "--topic", topic_name, own_group=True)
    lines: list[str] = []
    _read_until(process, lines, "batch 0 done, 20 records")
    jvms = [p for p in psutil.Process(process.pid).children(recursive=True) if p.name() == "java"]

    os.killpg(process.pid, signal.SIGTERM)
    rest, _ = process.communicate(timeout=STOP_SECONDS)
    lines.extend(rest.splitlines())
    _, alive = psutil.wait_procs(jvms, timeout=STOP_SECONDS)

    assert jvms and not alive
    assert process.returncode == 0, lines
    assert lines[-1].startswith("ingest: read=20 events=20")
    assert lines[-1].endswith("stopped_by=SIGTERM")


def test_sigterm_stops_a_republish_stream_with_its_summary_and_the_restart_resumes(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    target = f"{topic_name}.copy"
    create_topic(warehouse_settings, topic_name)
    produce_events(warehouse_settings, topic_name, 30, prefix="a")
    process = _job_process(
        warehouse_settings, "republish", "--source", topic_name, "--target", target
    )

    lines: list[str] = []
    _read_until(process, lines, "batch 0 done", "republish: running")
    status = _stop(process, lines)

    assert status == 0
    assert lines[-1].startswith(f"republish {topic_name} -> {target}: read=30 republished=30")
    assert "stopped_by=SIGTERM" in lines[-1]
    produce_events(warehouse_settings, topic_name, 5, prefix="b")
    request = RepublishRequest(source=topic_name, target=target)
    resumed = run_republish(spark, warehouse_settings, request)
    copied = (
        spark.read.format("kafka")
        .options(**spark_kafka_options(warehouse_settings))
        .option("subscribe", target)
        .load()
    )
    assert resumed.records_read == 5
    assert copied.count() == 35


def test_a_batch_refused_by_eventlake_ends_the_run_with_that_error_not_sparks_report(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another process holds the topic's lease for longer than the batch waits: the run
    # ends with the lease's sentence (which the commands print as one line), where Spark
    # would hand over a StreamingQueryException carrying the Python traceback as text.
    settings = warehouse_settings
    create_topic(settings, topic_name)
    produce_events(settings, topic_name, 4)
    leases = Ledger.leases

    def short_wait(
        self: Ledger, warehouse: Path, topics: Iterable[str], *, job: str, wait_seconds: float = 1
    ) -> AbstractContextManager[None]:
        return leases(self, warehouse, topics, job=job, wait_seconds=1.0)

    monkeypatch.setattr(Ledger, "leases", short_wait)
    holder = topic_leases(settings.warehouse, [topic_name], job="the test's holder")
    refused = pytest.raises(LeaseTimeoutError, match="is being landed by the test's holder")
    with holder, refused:
        run_ingest(spark, settings, IngestRequest(topics=(topic_name,)))


def test_an_error_between_batches_stops_the_stream_and_reaches_the_caller(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    create_topic(warehouse_settings, topic_name)
    options = spark_kafka_options(warehouse_settings) | {"subscribe": topic_name}
    spec = StreamSpec("test", options, tmp_path / "checkpoint", "processing-time=1 second")
    calls: list[float] = []

    def idle() -> None:
        calls.append(time.monotonic())
        raise RuntimeError("the state step failed between batches")

    with pytest.raises(RuntimeError, match="failed between batches"):
        run_stream(spark, spec, lambda _batch, _id: None, idle=idle)

    assert len(calls) == 1
    assert not [q for q in spark.streams.active if q.name == "checkpoint"]


def test_no_idle_work_runs_after_a_batch_failed(
    broker: LocalBroker,
    spark: SparkSession,
    warehouse_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    # Between the batch's error and Spark's report of the failed query the loop still
    # polls; idle work there (a state step) would run what just failed once more.
    create_topic(warehouse_settings, topic_name)
    produce_all(warehouse_settings, topic_name, [(b"k", b"v", [])])
    options = spark_kafka_options(warehouse_settings) | {
        "subscribe": topic_name,
        "startingOffsets": "earliest",
    }
    spec = StreamSpec("test", options, tmp_path / "checkpoint", "processing-time=1 second")
    failed_at: list[float] = []
    idle_calls: list[float] = []

    def fail(_batch: DataFrame, _batch_id: int) -> None:
        failed_at.append(time.monotonic())
        raise RuntimeError("the batch failed")

    with pytest.raises(Exception, match="the batch failed"):
        run_stream(spark, spec, fail, idle=lambda: idle_calls.append(time.monotonic()))

    assert failed_at
    assert [t for t in idle_calls if t >= failed_at[0]] == []


@pytest.mark.parametrize("trigger", ["available-now", "processing-time=2 seconds"])
def test_known_triggers_are_accepted(trigger: str) -> None:
    assert trigger_problem(trigger) is None


#: Intervals Spark's ``Trigger.ProcessingTime`` reads, and some it refuses.
INTERVALS = [
    "30 seconds",
    "1 minute 30 seconds",
    "interval 2 hours",
    "1.5 seconds",
    "500 milliseconds",
    "30 SECONDS",
    "1 week",
    "abc",
    "",
    "30",
    "30s",
    "30 secs",
    "10seconds",
]


@pytest.mark.parametrize("interval", INTERVALS)
def test_a_trigger_interval_is_refused_when_spark_refuses_it(
    spark: SparkSession, interval: str
) -> None:
    trigger = spark._jvm.org.apache.spark.sql.streaming.Trigger  # type: ignore[union-attr]
    try:
        trigger.ProcessingTime(interval)
        spark_reads = True
    except Exception:  # Spark's IllegalArgumentException through py4j
        spark_reads = False

    problem = trigger_problem(f"processing-time={interval}")

    assert (problem is None) == spark_reads, problem
    assert problem is None or f"Trigger interval {interval!r} is not one Spark reads" in problem


def test_an_unknown_trigger_is_explained() -> None:
    assert "use 'available-now' or 'processing-time=<interval>'" in str(
        trigger_problem("every minute")
    )


def _progress(rows: int, seconds: float, lag: int) -> StreamingQueryProgress:
    """Spark's progress of one trigger, as its JSON has it (the fields the line reads)."""
    source = {
        "description": "KafkaV2[Subscribe[t]]",
        "startOffset": "{}",
        "endOffset": "{}",
        "latestOffset": "{}",
        "numInputRows": rows,
        "inputRowsPerSecond": 0.0,
        "processedRowsPerSecond": rows / seconds,
        "metrics": {"maxOffsetsBehindLatest": str(lag)},
    }
    return StreamingQueryProgress.fromJson(
        {
            "id": "00000000-0000-0000-0000-000000000001",
            "runId": "00000000-0000-0000-0000-000000000002",
            "name": None,
            "timestamp": "2026-11-28T22:00:00.000Z",
            "batchId": 7,
            "batchDuration": int(seconds * 1000),
            "durationMs": {"triggerExecution": int(seconds * 1000)},
            "stateOperators": [],
            "sources": [source],
            "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
            "numInputRows": rows,
            "processedRowsPerSecond": rows / seconds,
        }
    )


def test_the_progress_line_gives_the_last_batchs_records_seconds_rate_and_lag() -> None:
    line = _progress_line("ingest", _progress(4000, 2.0, 12), lambda: "batches=3")

    assert line == (
        "ingest: running; batches=3; last batch 7: 4000 records in 2.0 s, 2000 records/s, "
        "lag 12 offsets (largest per partition)"
    )


def test_the_progress_line_gives_the_records_the_job_counted_not_spark_reads_of_them() -> None:
    # Spark counted 4000 input rows: the batch's 2000 records, read twice (rejects again).
    line = _progress_line("ingest", _progress(4000, 2.0, 0), None, {7: 2000}.get)

    assert "last batch 7: 2000 records in 2.0 s, 1000 records/s" in line


def test_the_progress_line_says_idle_when_no_batch_ran_since_the_last_line() -> None:
    line = _progress_line("ingest", _progress(4000, 2.0, 0), None, {7: 2000}.get, shown=7)

    assert line == "ingest: running; idle: no new records, lag 0 offsets (largest per partition)"


def test_the_progress_line_of_a_trigger_that_found_nothing_says_idle() -> None:
    line = _progress_line("ingest", _progress(0, 0.1, 0), None)

    assert line == "ingest: running; idle: no new records, lag 0 offsets (largest per partition)"
