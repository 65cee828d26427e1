"""Tiny runs of the benchmark harness keep it working; no timing is asserted.

The run inside ``make test`` measures four jobs (each a process of its own, twice for
the two on the empty topic): Spark's read-and-count, the plain PySpark reference job and
eventlake ingest, the three of the issue's main targets, and Spark's raw landing of the
records, the floor that the targets' asked seconds are read against. Every job of
``make bench`` runs in the second test, and ``landing_floor.py``'s passes in another, only
when selected by marker: ``pytest -m bench tests/test_bench_smoke.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_admin
from eventlake.local.broker import LocalBroker
from tests.benchmarks.bench import (
    CEILING_B,
    CEILING_D,
    DECODE,
    DECODE_CPU_GOAL,
    EXTRA_EVENT_GOALS,
    FLOORS,
    INGEST_MIXED,
    INGEST_STATE,
    JOBS,
    PLAIN_MIXED,
    QUALITY,
    RATIO_GOALS,
    STARTUP_GOALS,
    TIME_GOALS,
    job_environment,
    run_bench,
    tree_memory,
)
from tests.benchmarks.landing_floor import PASSES
from tests.benchmarks.latency import Commit, Scenario, batch_times, run_latency, state_latencies

N = 2000
#: The jobs of the run inside ``make test``.
SMOKE_JOBS = (CEILING_B, CEILING_D, PLAIN_MIXED, INGEST_MIXED)


def _bench_topics(settings: Settings, prefix: str) -> list[str]:
    """Topics of the run still listed, waiting up to 30 s for deletions to show."""
    deadline = time.monotonic() + 30
    while True:
        topics = make_admin(settings).list_topics(timeout=10).topics
        left = [t for t in topics if t.startswith(prefix)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _run(broker: LocalBroker, settings: Settings, output: Path, jobs: tuple[str, ...]) -> Path:
    # The job processes are short: a JVM compiling with C1 only is done sooner.
    quick = settings.model_copy(update={"driver_java_options": "-XX:TieredStopAtLevel=1"})
    return run_bench(
        quick,
        broker.pid(),
        sizes=[N],
        repeats=1,
        seed=1,
        output=output,
        sdk_sample=N,
        jobs=jobs,
    )


def _check_report(report: Path, settings: Settings, jobs: tuple[str, ...]) -> dict[str, Any]:
    """What every run's report must show; returns its results by job."""
    document = json.loads(report.read_text())
    assert document["partitions"] == 2
    results = {r["job"]: r for r in document["results"]}
    # One row per job, in the order of JOBS, each from one whole process per repeat.
    assert list(results) == [name for name in JOBS if name in jobs]
    for r in results.values():
        assert r["n"] == r["topic_n"] == N
        assert len(r["seconds"]) == len(r["work_seconds"]) == len(r["records_out"]) == 1
        # The work timed inside the process is part of the process timed from outside.
        assert 0 < r["work_median_seconds"] < r["median_seconds"]
        assert r["outside_work_seconds"] > 0
        assert r["steady_events_per_second"] > r["events_per_second"] > 0
        assert (r["ratio"] is None) == (r["vs"] not in results)
        assert (r["empty_topic_seconds"] is None) == (not JOBS[r["job"]].empty_run)
    # Counts: Spark read every record; the raw landing, ingest and the reference wrote one
    # row per record (the raw landing's and the reference's rows counted by the harness
    # from their Delta table's log).
    assert results[CEILING_B]["records_out"] == [N]
    if CEILING_D in results:
        assert results[CEILING_D]["records_out"] == [N]
    assert results[PLAIN_MIXED]["records_out"] == [N]
    assert results[INGEST_MIXED]["records_out"] == [N]
    ingest, plain = results[INGEST_MIXED], results[PLAIN_MIXED]
    assert ingest["vs"] == PLAIN_MIXED
    assert ingest["ratio"] == pytest.approx(plain["median_seconds"] / ingest["median_seconds"])
    assert ingest["steady_ratio"] == pytest.approx(
        plain["work_median_seconds"] / ingest["work_median_seconds"]
    )

    # A line per target of the issue at this N, measured where both of its jobs ran.
    goals = document["goals"]
    lines = [g for g in goals if g["n"] == N and g["kind"] in ("ratio", "startup", "time")]
    cpu_lines = [g for g in goals if g["kind"] == "cpu"]
    assert [g["job"] for g in cpu_lines] == ([DECODE] if DECODE in results else [])
    for g in cpu_lines:
        figures = {k: v[0] for k, v in results[DECODE]["cpu_figures"].items()}
        assert g["value"] == figures["decode_cpu_us_per_record"]
        assert figures["decode_pass_cpu_us_per_record"] > figures["scan_pass_cpu_us_per_record"]
        assert g["status"] == ("PASS" if g["value"] <= DECODE_CPU_GOAL else "FAIL")
    assert [(g["kind"], g["job"], g["vs"]) for g in lines] == [
        ("ratio", job, vs) for job, vs, _ in RATIO_GOALS
    ] + [("startup", job, vs) for job, vs, _ in STARTUP_GOALS] + [
        ("time", job, vs) for job, vs, _ in TIME_GOALS
    ]
    # Keyed by kind too: ingest mixed against ceiling B has a ratio and a start-up target.
    limits = {("ratio", job, vs): limit for job, vs, limit in RATIO_GOALS}
    limits |= {("startup", job, vs): limit for job, vs, limit in STARTUP_GOALS}
    limits |= {("time", job, vs): limit for job, vs, limit in TIME_GOALS}
    for g in lines:
        limit = limits[(g["kind"], g["job"], g["vs"])]
        if g["job"] in results and g["vs"] in results:
            assert g["value"] is not None and g["steady_value"] is not None
            passed = g["value"] >= limit if g["kind"] == "ratio" else g["value"] <= limit
            assert g["status"] == ("PASS" if passed else "FAIL")
        else:
            assert g["status"] == "not measured" and g["value"] is None
    by_pair = {(g["kind"], g["job"], g["vs"]): g for g in lines}
    # Each target names its issue: issue 16's (ended blocked) apart from issue 36's.
    assert by_pair[("ratio", INGEST_MIXED, PLAIN_MIXED)]["issue"] == "16 (ended: blocked)"
    assert {g["issue"] for g in lines if g["kind"] == "time"} == {"36"}
    versus_plain = by_pair[("ratio", INGEST_MIXED, PLAIN_MIXED)]
    assert versus_plain["value"] == pytest.approx(ingest["ratio"])
    # What the target asks: ingest's process seconds at exactly the target's ratio.
    at_least = limits[("ratio", INGEST_MIXED, PLAIN_MIXED)]
    assert versus_plain["asks_seconds"] == pytest.approx(plain["median_seconds"] / at_least)
    startup = by_pair[("startup", INGEST_MIXED, CEILING_B)]
    assert startup["value"] == pytest.approx(
        ingest["empty_topic_seconds"] - results[CEILING_B]["empty_topic_seconds"]
    )
    flat = [g for g in goals if g["kind"] == "flat"]
    assert [g["job"] for g in flat] == list(results)
    assert all(g["status"] == "not measured" and g["value"] is None for g in flat)
    # One N: no cost per extra event, and below the RSS target's N no RSS line.
    extra = [g for g in goals if g["kind"] == "extra"]
    assert [(g["job"], g["vs"]) for g in extra] == [(j, v) for j, v, _ in EXTRA_EVENT_GOALS]
    assert all(g["status"] == "not measured" and g["value"] is None for g in extra)
    assert [g for g in goals if g["kind"] == "rss"] == []
    # Seconds above the floor: the job's whole process less its floor's, at the same N.
    for r in results.values():
        floor = FLOORS.get(r["job"])
        if floor in results:
            assert r["floor"] == floor
            assert r["above_floor_seconds"] == pytest.approx(
                r["median_seconds"] - results[floor]["median_seconds"]
            )
        else:
            assert r["above_floor_seconds"] is None

    markdown = report.with_suffix(".md").read_text()
    assert "## Targets" in markdown
    assert all(f"| {job} | {N:,} |" in markdown for job in results)
    for g in lines:
        assert f"| {g['goal']} | {N:,} |" in markdown
        asks = "" if g["kind"] != "ratio" else "n/a"
        if g.get("asks_seconds") is not None:
            asks = f"{g['asks_seconds']:.1f}"
        assert f"| {g['target']} | {asks} | {g['status']} |" in markdown
    assert report.with_suffix(".png").stat().st_size > 10_000

    # Nothing left behind: run warehouses, the N's folder and every topic of the run.
    warehouse = settings.warehouse
    assert not warehouse.exists() or not any(warehouse.iterdir())
    assert _bench_topics(settings, f"bench-{document['run_id'].lower()}-") == []
    return results


def test_bench_times_processes_against_the_plain_pyspark_reference(
    broker: LocalBroker, warehouse_settings: Settings, tmp_path: Path
) -> None:
    report = _run(broker, warehouse_settings, tmp_path, SMOKE_JOBS)
    _check_report(report, warehouse_settings, SMOKE_JOBS)


@pytest.mark.bench
def test_bench_runs_every_job(
    request: pytest.FixtureRequest,
    broker: LocalBroker,
    warehouse_settings: Settings,
    tmp_path: Path,
) -> None:
    # Some minutes of processes: only when asked for by marker (-m bench).
    if "bench" not in request.config.getoption("markexpr"):
        pytest.skip("every job of make bench, some minutes: run with -m bench")
    every = tuple(JOBS)
    results = _check_report(
        _run(broker, warehouse_settings, tmp_path, every), warehouse_settings, every
    )
    assert {QUALITY, INGEST_STATE, DECODE} <= set(results)


@pytest.mark.bench
def test_landing_floor_times_every_pass(
    request: pytest.FixtureRequest,
    broker: LocalBroker,
    warehouse_settings: Settings,
    tmp_path: Path,
) -> None:
    # A Spark process of its own: only when asked for by marker (-m bench).
    if "bench" not in request.config.getoption("markexpr"):
        pytest.skip("landing_floor.py's passes, a minute: run with -m bench")
    script = Path(__file__).parent / "benchmarks" / "landing_floor.py"
    arguments = ["--records", str(N), "--rounds", "1", "--output", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(script), *arguments],
        env=job_environment(warehouse_settings),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = done.stdout.split(f"{N:,} records")[1]
    assert all(f"\n{name} " in table for name in PASSES)
    assert "ingest's data path above ceiling D's write" in table
    (report,) = tmp_path.glob("landing-floor-*.md")
    assert all(f"\n{name} " in report.read_text() for name in PASSES)


def test_latency_bench_sees_every_record_land_and_stops_the_stream(
    broker: LocalBroker, warehouse_settings: Settings, tmp_path: Path
) -> None:
    quick = warehouse_settings.model_copy(update={"driver_java_options": "-XX:TieredStopAtLevel=1"})
    report = run_latency(quick, [Scenario(50)], duration=10, poll=0.1, seed=1, output=tmp_path)

    (result,) = json.loads(report.read_text())
    # Every record produced became visible in the events table, each after its timestamp.
    assert result["produced"] == result["visible"] == 500
    assert 0 < result["latency_p50"] <= result["latency_p95"] <= result["latency_max"]
    assert result["stop_exit_status"] == 0
    # Every batch is timed from the checkpoint, not only those the progress lines name.
    assert 0 < result["batch_seconds_median"] <= result["batch_seconds_max"]
    assert result["gap_seconds_max"] > 0
    # The lag was sampled while producing (at 50/s some records always wait for a batch).
    assert result["max_lag_records"] > 0
    assert result["summary_line"].startswith("ingest: read=700 events=700")
    assert "| 50 | 500 |" in report.with_suffix(".md").read_text()
    # The scenario's warehouse (and topic) go when it is measured.
    assert not any(p.is_dir() for p in warehouse_settings.warehouse.glob("latency-*"))


def test_a_records_state_latency_runs_to_the_state_commit_whose_marks_pass_it(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events"
    events.mkdir()
    stamps = [datetime(2026, 11, 28, 0, 0, s, tzinfo=UTC) for s in (0, 1, 2, 3)]
    table = pa.table(
        {
            "kafka_partition": pa.array([0, 0, 1, 1], pa.int32()),
            "kafka_offset": pa.array([0, 1, 0, 1], pa.int64()),
            "kafka_timestamp": pa.array(stamps, pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, events / "part-0.parquet")
    t0 = stamps[0].timestamp()
    landed = Commit(events, 1, t0 + 4, ["part-0.parquet"], 4)
    # The first state commit passes offset 0 of each partition, the second the rest.
    first = Commit(tmp_path / "state", 1, t0 + 10, [], 0, {0: 1, 1: 1})
    second = Commit(tmp_path / "state", 2, t0 + 20, [], 0, {0: 2, 1: 2})

    latencies = state_latencies([landed], [first, second], produced_from=t0 + 1)

    # Produced at 1 s (partition 0, offset 1), 2 s and 3 s (partition 1); 0 s is before
    # produced_from. Offset 0 of partition 1 (2 s) is in the first commit, the others in
    # the second.
    assert sorted(latencies) == pytest.approx([8.0, 17.0, 19.0])


FORKING_JVM = """
import os, sys, time
held = bytearray(300 * 2**20)  # 300 MB of pages the fork shares
for i in range(0, len(held), 4096):
    held[i] = 1
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
print("forked", flush=True)
time.sleep(60)
"""


def test_bench_counts_a_process_the_jvm_forked_by_its_own_pages(tmp_path: Path) -> None:
    # A Python interpreter named "java" stands for the driver's JVM: its child, forked
    # and not yet exec'd (as Hadoop's shell helpers are), shares its 300 MB.
    java = tmp_path / "java"
    java.symlink_to(Path(sys.executable).resolve())
    parent = subprocess.Popen([str(java), "-c", FORKING_JVM], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "forked"
        process = psutil.Process(parent.pid)
        (child,) = process.children()
        assert child.memory_info().rss > 250 * 2**20  # what summed RSS counted twice
        counted = tree_memory([process, child])
        assert process.memory_info().rss < counted < process.memory_info().rss + 100 * 2**20
    finally:
        for running in psutil.Process(parent.pid).children():
            running.kill()
        parent.kill()
        parent.wait()


def test_batch_times_pair_each_batchs_offsets_with_its_commit(tmp_path: Path) -> None:
    spark = tmp_path / "stream-1" / "spark"
    for folder, name, when in [
        ("offsets", "0", 100.0),
        ("commits", "0", 100.5),
        ("offsets", "1", 101.0),
        ("commits", "1", 101.75),
        ("offsets", "2", 102.0),  # running: no commit yet, not timed
        ("offsets", ".0.crc", 100.0),
    ]:
        path = spark / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        os.utime(path, (when, when))
    assert batch_times(tmp_path) == [(100.0, 100.5), (101.0, 101.75)]
