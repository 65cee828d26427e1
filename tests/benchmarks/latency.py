"""Streaming latency: a producer at a steady rate against a running ``eventlake ingest``
stream, and the time until each record is visible to a reader of the Delta table.

    make bench-latency                                   # the three scenarios, 5 min each
    python tests/benchmarks/latency.py --scenarios 1000 --duration 60   # one, shorter

Each scenario (``<rate>`` or ``<rate>-state``) runs on the local broker, in a fresh
warehouse, with a new 2-partition topic (compacted and keyed, ~10% tombstones, for
``-state``):

1. the stream starts as its own process: ``eventlake ingest --topic T --trigger
   processing-time=1 second`` (``--state`` for ``-state``), and a warm-up of 200
   records is produced and waited for;
2. a producer process sends ~1 KB CloudEvents (the generator of bench.py, half binary,
   half structured) at the rate for ``--duration`` seconds, paced every 5 ms;
3. meanwhile this process polls the events and rejects tables' Delta logs every
   ``--poll`` seconds: a commit is visible to readers once its log file exists, and the
   time it was first seen is when its rows became visible (ingested_at is not used);
   every second, on a thread of its own (the polls keep their pace), it also notes the
   lag in offsets: Kafka's end offsets minus those of the stream's last committed batch
   (as ``eventlake status`` shows them), which stays right on a compacted topic whose
   cleaner removes records the stream never reads;
4. once the producer is done and the lag is 0 (or 120 s later), the stream
   gets SIGTERM; its exit status and the seconds it took to exit are noted.

Latency of a record = the time its commit was first seen - its Kafka timestamp (the
producer's CreateTime, same clock). Reported per scenario: p50, p95, p99 and max over
every record visible from step 2, the largest lag (offsets, and seconds at the rate),
whether the lag grew (median lag of the last 60 s of producing against the median of
the 60 s after the first 30 s: grew when larger by more than 2 s of records), whether
the stream reached Kafka's end within 120 s of the producer's end, its batches, and
the stop. The poll interval adds up to
``--poll`` seconds (half on average) to each figure. Results go to
``results/latency-<time>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Final
from urllib.parse import unquote

import pyarrow.compute as pc
import pyarrow.parquet as pq

# This checkout's eventlake (tests.benchmarks.bench.job_environment does the same for jobs).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_producer
from eventlake.kafka.topics import create_topic, delete_topics
from eventlake.ledger.marks import KEY_PREFIX, STATE
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from eventlake.status.report import warehouse_status
from eventlake.warehouse.names import state_path
from tests.benchmarks.bench import (
    PARTITIONS,
    RESULTS,
    bench_records,
    job_environment,
    new_run_id,
)

TRIGGER: Final = "processing-time=1 second"
WARM_UP_RECORDS: Final = 200
#: Distinct records the producer cycles through (generated once, before the clock runs).
POOL_SIZE: Final = 20_000
DRAIN_SECONDS: Final = 120.0
#: Targets of the issue: (rate, state, p95 at most, p99 at most); None: not a target.
LATENCY_GOALS: Final = {(1000, False): (5.0, 10.0)}
#: Rates that must be sustained without the lag growing.
SUSTAINED_GOALS: Final = {(20000, False), (20000, True)}


@dataclass(frozen=True)
class Scenario:
    """A producer rate (records/s) and whether the stream keeps the state table."""

    rate: int
    state: bool = False

    @classmethod
    def parse(cls, text: str) -> Scenario:
        match = re.fullmatch(r"(\d+)(-state)?", text)
        if not match:
            raise argparse.ArgumentTypeError(f"{text!r}: expected <rate> or <rate>-state")
        return cls(int(match.group(1)), bool(match.group(2)))

    @property
    def name(self) -> str:
        return f"{self.rate}{'-state' if self.state else ''}"


@dataclass
class ScenarioResult:
    """What one scenario measured (seconds unless named otherwise)."""

    scenario: str
    rate: int
    state: bool
    duration: float
    produced: int = 0
    achieved_rate: float = 0.0
    visible: int = 0
    latency_p50: float | None = None
    latency_p95: float | None = None
    latency_p99: float | None = None
    latency_max: float | None = None
    #: -state scenarios: from the Kafka timestamp to the state table's commit holding it.
    state_latency_p50: float | None = None
    state_latency_p95: float | None = None
    state_latency_max: float | None = None
    max_lag_records: int = 0
    early_lag_median: float = 0.0
    late_lag_median: float = 0.0
    lag_grew: bool = False
    drain_seconds: float | None = None
    commits: int = 0
    batch_seconds_median: float | None = None
    batch_seconds_p95: float | None = None
    batch_seconds_max: float | None = None
    #: Seconds from a batch's end to the next one's start (Spark's trigger wait included).
    gap_seconds_max: float | None = None
    #: Every batch's seconds, in batch order (the JSON report only).
    batch_seconds: list[float] = field(default_factory=list)
    stop_seconds: float | None = None
    stop_exit_status: int | None = None
    summary_line: str = ""
    goals: list[str] = field(default_factory=list)


# -- the producer (a process of its own) -------------------------------------------------------


def produce_steadily(
    settings: Settings,
    topic: str,
    scenario: Scenario,
    duration: float,
    seed: int,
    produced: Synchronized[int],
    started_at: Synchronized[float],
) -> None:
    """Send the pool's records round-robin at ``scenario.rate`` for ``duration`` s."""
    tombstones = 0.1 if scenario.state else 0.0
    pool = list(bench_records(POOL_SIZE, mode="mixed", seed=seed, tombstones=tombstones))
    producer = make_producer(
        settings, **{"linger.ms": 5, "queue.buffering.max.messages": 1_000_000}
    )
    start = time.time()
    started_at.value = start
    sent = 0
    while True:
        elapsed = time.time() - start
        if elapsed >= duration:
            break
        due = min(int(elapsed * scenario.rate), int(duration * scenario.rate)) - sent
        for _ in range(due):
            key, value, headers = pool[sent % POOL_SIZE]
            while True:
                try:
                    producer.produce(topic, key=key, value=value, headers=list(headers))
                    break
                except BufferError:
                    producer.poll(0.01)
            sent += 1
        produced.value = sent
        producer.poll(0)
        time.sleep(0.005)
    for index in range(sent, int(duration * scenario.rate)):
        key, value, headers = pool[index % POOL_SIZE]
        producer.produce(topic, key=key, value=value, headers=list(headers))
        sent += 1
    producer.flush(120)
    produced.value = sent


# -- the reader: Delta logs ---------------------------------------------------------------------


@dataclass
class Commit:
    """A Delta commit seen by the poller: when, its new files and their rows."""

    table: Path
    version: int
    seen_at: float
    files: list[str]
    rows: int
    #: The ledger's state marks the commit set (partition -> next offset), if any.
    state_marks: dict[int, int] = field(default_factory=dict)


class DeltaLogWatcher:
    """Notices new commits of a Delta table by their log files, as a reader would."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self.next_version = self._first_version()

    def _first_version(self) -> int:
        log = self.table / "_delta_log"
        versions = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()]
        return max(versions, default=-1) + 1

    def poll(self) -> list[Commit]:
        found: list[Commit] = []
        while True:
            path = self.table / "_delta_log" / f"{self.next_version:020d}.json"
            if not path.exists():
                return found
            seen_at = time.time()
            files, rows, marks = [], 0, {}
            for line in path.read_text().splitlines():
                action = json.loads(line) if line.strip() else {}
                add, txn = action.get("add"), action.get("txn")
                if add:
                    files.append(unquote(add["path"]))
                    rows += int(json.loads(add.get("stats") or "{}").get("numRecords", 0))
                # eventlake/state/<topic>/<partition>: the state table's marks.
                if txn and txn["appId"].startswith(f"{KEY_PREFIX}/{STATE}/"):
                    marks[int(txn["appId"].rsplit("/", 1)[1])] = int(txn["version"])
            found.append(Commit(self.table, self.next_version, seen_at, files, rows, marks))
            self.next_version += 1


def record_latencies(commits: Sequence[Commit], produced_from: float) -> list[float]:
    """Seconds from each record's Kafka timestamp to the commit that made it visible,
    for records produced at or after ``produced_from``."""
    latencies: list[float] = []
    for commit in commits:
        for name in commit.files:
            column = pq.read_table(commit.table / name, columns=["kafka_timestamp"]).column(0)
            unit = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[column.type.unit]
            stamps = pc.divide(pc.cast(column, "int64"), unit).to_pylist()
            latencies += [
                commit.seen_at - t for t in stamps if t is not None and t >= produced_from
            ]
    return latencies


def state_latencies(
    events: Sequence[Commit], states: Sequence[Commit], produced_from: float
) -> list[float]:
    """Seconds from each record's Kafka timestamp to the state table's commit whose marks
    passed its offset (the state table then holds it), for records produced at or after
    ``produced_from`` that the events table shows (rejects apart)."""
    landed: dict[int, list[tuple[int, float]]] = {}
    for commit in events:
        for name in commit.files:
            columns = ["kafka_partition", "kafka_offset", "kafka_timestamp"]
            table = pq.read_table(commit.table / name, columns=columns)
            unit = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[table.column(2).type.unit]
            stamps = pc.divide(pc.cast(table.column(2), "int64"), unit).to_pylist()
            for partition, offset, stamp in zip(
                table.column(0).to_pylist(), table.column(1).to_pylist(), stamps, strict=True
            ):
                if stamp is not None and stamp >= produced_from:
                    landed.setdefault(partition, []).append((offset, stamp))
    for records in landed.values():
        records.sort()
    latencies: list[float] = []
    passed: dict[int, int] = {}
    for commit in states:
        for partition, mark in commit.state_marks.items():
            records = landed.get(partition, [])
            start = bisect.bisect_left(records, (passed.get(partition, 0), -1.0))
            end = bisect.bisect_left(records, (mark, -1.0))
            latencies += [commit.seen_at - stamp for _, stamp in records[start:end]]
            passed[partition] = max(passed.get(partition, 0), mark)
    return latencies


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


# -- one scenario ------------------------------------------------------------------------------


def run_scenario(
    settings: Settings,
    scenario: Scenario,
    *,
    duration: float,
    poll: float,
    seed: int,
    tag: str,
    output: Path,
) -> ScenarioResult:
    """Run the stream, the producer and the poller; measure; clean up. The stream's
    output stays in ``output/<topic>.log``."""
    topic = f"{tag}-{scenario.name}"
    warehouse = settings.warehouse / topic
    shutil.rmtree(warehouse, ignore_errors=True)
    own = settings.model_copy(update={"warehouse": warehouse})
    config = {"cleanup.policy": "compact"} if scenario.state else {}
    create_topic(own, topic, partitions=PARTITIONS, config=config)
    result = ScenarioResult(scenario.name, scenario.rate, scenario.state, duration)
    log_path = output / f"{topic}.log"
    command = [sys.executable, "-m", "eventlake.cli", "ingest", "--topic", topic]
    command += ["--trigger", TRIGGER] + (["--state"] if scenario.state else [])
    env = job_environment(own) | {"EVENTLAKE_PROGRESS_SECONDS": "10"}
    print(f"latency: {scenario.name}: starting the stream: {' '.join(command[1:])}", flush=True)
    with log_path.open("w") as log:
        stream = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _warm_up(own, topic, scenario, seed, stream)
        _measure(own, topic, scenario, result, duration=duration, poll=poll, seed=seed)
        result.stop_seconds, result.stop_exit_status = _stop(stream)
        _time_batches(result, own.checkpoints)
    finally:
        if stream.poll() is None:
            stream.kill()
            stream.wait()
        delete_topics(own, [topic])
        shutil.rmtree(warehouse, ignore_errors=True)
    log_text = log_path.read_text()
    summaries = [line for line in log_text.splitlines() if line.startswith("ingest: read=")]
    result.summary_line = summaries[-1] if summaries else ""
    result.goals = evaluate(result)
    return result


def batch_times(checkpoints: Path) -> list[tuple[float, float]]:
    """(start, end) of every batch of the streams under ``checkpoints``: when Spark wrote
    the batch's offsets (its write-ahead log, before the batch runs) and its commit
    (after ``foreachBatch`` returned), in file times, in batch order.

    Example:
        >>> batch_times(settings.checkpoints)[:1]
        [(1795650602.4, 1795650602.9)]
    """
    times = []
    for offsets in sorted(checkpoints.glob("*/spark/offsets")):
        commits = offsets.parent / "commits"
        for entry in offsets.iterdir():
            committed = commits / entry.name
            if entry.name.isdigit() and committed.exists():
                times.append((int(entry.name), entry.stat().st_mtime, committed.stat().st_mtime))
    return [(start, end) for _, start, end in sorted(times)]


def _time_batches(result: ScenarioResult, checkpoints: Path) -> None:
    """Every batch's seconds and the longest pause between two, from the checkpoint (the
    progress lines give one batch in ten seconds)."""
    times = batch_times(checkpoints)
    durations = [end - start for start, end in times]
    result.batch_seconds = [round(d, 2) for d in durations]
    if durations:
        result.batch_seconds_median = statistics.median(durations)
        result.batch_seconds_p95 = percentile(durations, 0.95)
        result.batch_seconds_max = max(durations)
    gaps = [later[0] - earlier[1] for earlier, later in pairwise(times)]
    if gaps:
        result.gap_seconds_max = max(gaps)


def _warm_up(
    settings: Settings, topic: str, scenario: Scenario, seed: int, stream: subprocess.Popen[bytes]
) -> None:
    """Produce a few records and wait until they are visible: the stream is up."""
    tombstones = 0.1 if scenario.state else 0.0
    producer = make_producer(settings)
    for key, value, headers in bench_records(
        WARM_UP_RECORDS, mode="mixed", seed=seed + 1, tombstones=tombstones
    ):
        producer.produce(topic, key=key, value=value, headers=list(headers))
    producer.flush(60)
    watchers = [DeltaLogWatcher(settings.table_path(t)) for t in ("events", "rejects")]
    deadline = time.monotonic() + 300
    visible = 0
    while visible < WARM_UP_RECORDS:
        if stream.poll() is not None:
            raise RuntimeError(f"the stream exited with {stream.returncode} while warming up")
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {visible} of {WARM_UP_RECORDS} warm-up records landed")
        time.sleep(0.5)
        for watcher in watchers:
            if watcher.table.joinpath("_delta_log").is_dir():
                visible += sum(c.rows for c in watcher.poll())
    print(f"latency: {scenario.name}: stream up, warm-up visible", flush=True)


def offset_lag(settings: Settings, topic: str) -> int | None:
    """Kafka's end offsets minus the offsets the stream has committed (its last batch's
    end, as `eventlake status` shows them), summed over the topic's partitions; None when
    Kafka or the checkpoint cannot say yet."""
    report = warehouse_status(settings, topics=(topic,), kafka_timeout=5.0)
    lags = [p.lag for status in report.checkpoints for p in status.positions]
    if report.kafka_error or not lags or any(lag is None for lag in lags):
        return None
    return sum(lag for lag in lags if lag is not None)


class LagSampler(threading.Thread):
    """The stream's lag in offsets (:func:`offset_lag`), once a second from the
    producer's start, on a thread of its own: a sample reads the stream's checkpoint and
    asks Kafka for its end offsets, and taken between two polls of the Delta logs it held
    the next poll back, so that some commits were seen that much late.

    Example:
        >>> sampler = LagSampler(settings, "orders", started_at); sampler.start()
        >>> sampler.stop(); sampler.samples[:1]
        [(1.0, 950)]
    """

    def __init__(self, settings: Settings, topic: str, started_at: Synchronized[float]) -> None:
        super().__init__(name="lag sampler", daemon=True)
        self.settings, self.topic, self.started_at = settings, topic, started_at
        #: (seconds since the producer started, lag in offsets)
        self.samples: list[tuple[float, int]] = []
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(1.0):
            if not self.started_at.value:
                continue
            lag = offset_lag(self.settings, self.topic)
            if lag is not None:
                self.samples.append((time.time() - self.started_at.value, lag))

    def stop(self) -> None:
        self._stopped.set()
        self.join()


def _measure(
    settings: Settings,
    topic: str,
    scenario: Scenario,
    result: ScenarioResult,
    *,
    duration: float,
    poll: float,
    seed: int,
) -> None:
    context = multiprocessing.get_context("spawn")
    produced = context.Value("q", 0)
    started_at = context.Value("d", 0.0)
    watchers = [DeltaLogWatcher(settings.table_path(t)) for t in ("events", "rejects")]
    if scenario.state:
        watchers.append(DeltaLogWatcher(state_path(settings, topic)))
    producer = context.Process(
        target=produce_steadily,
        args=(settings, topic, scenario, duration, seed, produced, started_at),
    )
    producer.start()
    sampler = LagSampler(settings, topic, started_at)
    sampler.start()
    lag_samples = sampler.samples
    commits: list[Commit] = []
    visible = 0
    next_line = time.monotonic()
    drained_at: float | None = None
    while True:
        time.sleep(poll)
        for watcher in watchers:
            for commit in watcher.poll():
                commits.append(commit)
                visible += commit.rows
        now = time.monotonic()
        if now >= next_line:
            next_line = now + 30
            print(
                f"latency: {scenario.name}: produced {produced.value:,}, visible {visible:,}, "
                f"lag {lag_samples[-1][1] if lag_samples else '?'} offsets",
                flush=True,
            )
        if not producer.is_alive():
            # Drained once the stream has committed up to Kafka's end offsets. Not "every
            # record produced is visible": on the compacted topic of a -state scenario the
            # log cleaner may remove superseded records before the stream reads them.
            if offset_lag(settings, topic) == 0:
                drained_at = time.time()
                # The last batch's commit may have landed since this round's poll.
                for watcher in watchers:
                    for commit in watcher.poll():
                        commits.append(commit)
                        visible += commit.rows
                break
            if drained_at is None and time.time() - started_at.value > duration + DRAIN_SECONDS:
                break
    producer.join()
    sampler.stop()
    result.produced = produced.value
    result.visible = visible
    result.achieved_rate = produced.value / duration
    result.commits = sum(1 for c in commits if c.table.name == "events")
    if drained_at is not None:
        result.drain_seconds = drained_at - (started_at.value + duration)
    latencies = record_latencies([c for c in commits if c.table.name == "events"], started_at.value)
    if latencies:
        result.latency_p50 = percentile(latencies, 0.50)
        result.latency_p95 = percentile(latencies, 0.95)
        result.latency_p99 = percentile(latencies, 0.99)
        result.latency_max = max(latencies)
    if scenario.state:
        events = [c for c in commits if c.table.name == "events"]
        states = [c for c in commits if c.table == state_path(settings, topic)]
        in_state = state_latencies(events, states, started_at.value)
        if in_state:
            result.state_latency_p50 = percentile(in_state, 0.50)
            result.state_latency_p95 = percentile(in_state, 0.95)
            result.state_latency_max = max(in_state)
    producing = [(t, lag) for t, lag in lag_samples if t <= duration]
    result.max_lag_records = max((lag for _, lag in lag_samples), default=0)
    early = [lag for t, lag in producing if 30 <= t < 90] or [lag for _, lag in producing[:60]]
    late = [lag for t, lag in producing if t >= duration - 60] or [0]
    result.early_lag_median = statistics.median(early) if early else 0.0
    result.late_lag_median = statistics.median(late)
    result.lag_grew = result.late_lag_median > result.early_lag_median + 2 * scenario.rate


def _stop(stream: subprocess.Popen[bytes]) -> tuple[float, int]:
    started = time.monotonic()
    stream.send_signal(signal.SIGTERM)
    status = stream.wait(timeout=300)
    return time.monotonic() - started, status


def evaluate(result: ScenarioResult) -> list[str]:
    """A line per target of the issue that applies to the scenario: value, target, verdict."""
    lines = []
    goal = LATENCY_GOALS.get((result.rate, result.state))
    if goal is not None:
        for label, value, bound in (
            ("p95", result.latency_p95, goal[0]),
            ("p99", result.latency_p99, goal[1]),
        ):
            verdict = "not measured" if value is None else ("PASS" if value <= bound else "FAIL")
            shown = "-" if value is None else f"{value:.2f} s"
            lines.append(
                f"{result.scenario}: {label} visible latency {shown} (<= {bound} s): {verdict}"
            )
    if (result.rate, result.state) in SUSTAINED_GOALS:
        kept_up = result.achieved_rate >= 0.95 * result.rate
        drained = result.drain_seconds is not None
        verdict = "FAIL" if result.lag_grew or not kept_up or not drained else "PASS"
        lines.append(
            f"{result.scenario}: sustained {result.achieved_rate:,.0f}/s for "
            f"{result.duration:.0f} s, lag median {result.early_lag_median:,.0f} early vs "
            f"{result.late_lag_median:,.0f} late offsets (no growth beyond 2 s of records), "
            + (
                f"drained in {result.drain_seconds:.1f} s"
                if result.drain_seconds is not None
                else f"not drained within {DRAIN_SECONDS:.0f} s"
            )
            + f": {verdict}"
        )
    if result.stop_seconds is not None:
        bound = 1.0 + (result.batch_seconds_max or 0.0)
        verdict = (
            "PASS" if result.stop_exit_status == 0 and result.stop_seconds <= bound else "FAIL"
        )
        lines.append(
            f"{result.scenario}: SIGTERM -> exit {result.stop_exit_status} in "
            f"{result.stop_seconds:.1f} s (<= trigger 1 s + longest batch "
            f"{result.batch_seconds_max or 0:.1f} s): {verdict}"
        )
    return lines


# -- reports -----------------------------------------------------------------------------------


def markdown_report(results: Sequence[ScenarioResult], duration: float, poll: float) -> str:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    lines = [
        "# eventlake streaming latency",
        "",
        f"Stream: `eventlake ingest --trigger {TRIGGER}`; producer {duration:.0f} s per "
        f"scenario; Delta logs polled every {poll} s (adds up to {poll} s to each latency).",
        "",
        "| scenario | produced | rate/s | p50 s | p95 s | p99 s | max s | max lag (offsets) "
        "| lag early/late | grew | drain s | batches (median/p95/max s) | longest pause s "
        "| stop s (exit) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.scenario} | {r.produced:,} | {r.achieved_rate:,.0f} | {seconds(r.latency_p50)} "
            f"| {seconds(r.latency_p95)} | {seconds(r.latency_p99)} | {seconds(r.latency_max)} "
            f"| {r.max_lag_records:,} | {r.early_lag_median:,.0f}/{r.late_lag_median:,.0f} "
            f"| {'yes' if r.lag_grew else 'no'} | {seconds(r.drain_seconds)} "
            f"| {r.commits} ({seconds(r.batch_seconds_median)}/{seconds(r.batch_seconds_p95)}/"
            f"{seconds(r.batch_seconds_max)}) | {seconds(r.gap_seconds_max)} "
            f"| {seconds(r.stop_seconds)} ({r.stop_exit_status}) |"
        )
    stateful = [r for r in results if r.state]
    if stateful:
        lines += [
            "",
            "State tables (from the Kafka timestamp to the state commit whose marks pass the "
            "record):",
            "",
            "| scenario | state p50 s | state p95 s | state max s |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r.scenario} | {seconds(r.state_latency_p50)} | {seconds(r.state_latency_p95)} "
            f"| {seconds(r.state_latency_max)} |"
            for r in stateful
        ]
    lines += ["", "## Targets", ""]
    lines += [f"- {goal}" for r in results for goal in r.goals]
    lines += ["", "## Stream summaries", ""]
    lines += [f"- {r.scenario}: `{r.summary_line}`" for r in results]
    return "\n".join(lines) + "\n"


def run_latency(
    settings: Settings,
    scenarios: Sequence[Scenario],
    *,
    duration: float,
    poll: float,
    seed: int,
    output: Path,
    run_id: str | None = None,
) -> Path:
    """Run every scenario in turn; write the reports; returns the JSON path."""
    run_id = run_id or new_run_id()
    tag = f"latency-{run_id.lower()}"
    results: list[ScenarioResult] = []
    output.mkdir(parents=True, exist_ok=True)
    json_path = output / f"latency-{run_id}.json"
    for scenario in scenarios:
        result = run_scenario(
            settings, scenario, duration=duration, poll=poll, seed=seed, tag=tag, output=output
        )
        results.append(result)
        for goal in result.goals:
            print(f"latency: {goal}", flush=True)
        # After every scenario, so that a run cut short keeps its figures.
        json_path.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
        json_path.with_suffix(".md").write_text(markdown_report(results, duration, poll))
    print(json_path.with_suffix(".md").read_text(), flush=True)
    return json_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scenarios",
        type=Scenario.parse,
        nargs="+",
        default=[Scenario(1000), Scenario(20000), Scenario(20000, state=True)],
        help="<rate> or <rate>-state (default: 1000 20000 20000-state)",
    )
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of producing")
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between log polls")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.duration < 10:
        parser.error("--duration must be at least 10 seconds")
    base = load_local_settings()
    settings = base.model_copy(
        update={
            "warehouse": base.warehouse.parent / "bench-latency",
            "kafka_options": {**base.kafka_options, "allow.auto.create.topics": "false"},
        }
    )
    LocalBroker(settings).start()
    run_latency(
        settings,
        args.scenarios,
        duration=args.duration,
        poll=args.poll,
        seed=args.seed,
        output=args.output,
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
