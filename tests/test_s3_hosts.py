"""A warehouse on the S3 server landed from two hosts at once.

A "host" here is a process tree that shares nothing with the other but Kafka and the
object store: its own working folder, HOME, TMPDIR and Spark local dir; no common lease
folder (the leases are objects in the warehouse). The jobs run as users run them: the
``eventlake`` command, its settings in the environment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyarrow as pa
import pytest

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.ledger.lease import lease_path
from eventlake.local.broker import LocalBroker
from eventlake.local.s3_server import LocalS3Server
from eventlake.local.samples import ProducedSamples, produce_samples
from eventlake.storage.leases import lease_at
from eventlake.storage.store import append_to_delta_table, open_delta_table
from eventlake.typed.names import typed_tables
from eventlake.warehouse.names import KAFKA_COORDINATES
from tests.conftest import TEST_BUCKET

#: Records per batch: each host lands the topic in several batches, taking turns.
BATCH: Final = 700


@dataclass(frozen=True)
class Started:
    """A process started on a host and the file that holds its output."""

    process: subprocess.Popen[bytes]
    log: Path

    def wait(self, timeout: float = 420) -> str:
        """Its output once it has ended, asserting that it succeeded."""
        self.process.wait(timeout=timeout)
        output = self.log.read_text()
        assert self.process.returncode == 0, _failure(output)
        return output


@dataclass(frozen=True)
class Host:
    """One host's environment: its own folders, the shared broker and warehouse."""

    name: str
    folder: Path
    env: dict[str, str]
    #: Its ingest's checkpoint option: one checkpoint takes one run at a time.
    checkpoint: tuple[str, ...] = ()

    def start(self, *args: str) -> Started:
        """``eventlake <args>`` on this host, in the background."""
        return self.start_python("-m", "eventlake.cli", *args)

    def start_python(self, *args: str) -> Started:
        """``python <args>`` on this host, its output to a file: through a pipe nobody
        reads while the test waits for another host, a process blocks once the pipe is
        full, and with it whatever the other host waits for (a lease, a barrier)."""
        log = self.folder / f"output-{uuid.uuid4().hex[:8]}.log"
        with log.open("w") as output:
            process = subprocess.Popen(
                [sys.executable, *args],
                env=self.env,
                cwd=self.folder,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        return Started(process, log)

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "eventlake.cli", *args],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _host(name: str, root: Path, settings: Settings, warehouse: Location) -> Host:
    folder = root / name
    for sub in ("home", "tmp", "spark-local"):
        (folder / sub).mkdir(parents=True)
    env = dict(
        os.environ,
        HOME=str(folder / "home"),
        TMPDIR=str(folder / "tmp"),
        SPARK_LOCAL_DIRS=str(folder / "spark-local"),
        EVENTLAKE_BOOTSTRAP_SERVERS=settings.bootstrap_servers,
        EVENTLAKE_WAREHOUSE=str(warehouse),
        EVENTLAKE_MAX_OFFSETS_PER_TRIGGER=str(BATCH),
        EVENTLAKE_SHUFFLE_PARTITIONS="2",
        EVENTLAKE_DRIVER_MEMORY="1g",
        EVENTLAKE_TYPED_TABLES="true",
        # One typed step as each run ends, not one a minute: each is a Delta commit per
        # type on S3, and the two hosts' last steps still race.
        EVENTLAKE_TYPED_INTERVAL_SECONDS="3600",
    )
    return Host(name, folder, env, ("--checkpoint-name", name))


@dataclass(frozen=True)
class Landed:
    """Two hosts' concurrent landings of one topic (and one host's run of it with a
    second topic) into one S3 warehouse, typed tables on."""

    warehouse: Location
    topic: str
    #: Landed only by host b's run of both topics, beside host a's of ``topic`` alone.
    other_topic: str
    #: Per topic, what was produced to it.
    produced: dict[str, list[ProducedSamples]]
    outputs: list[str]
    hosts: tuple[Host, Host]


def _failure(output: str) -> str:
    """The first exception line of a failed host's output and its tail: a JVM stack
    trace's head names the cause, its last lines only Spark's frames."""
    lines = output.splitlines()
    first = next((i for i, line in enumerate(lines) if "Exception" in line or "Error" in line), 0)
    head = "\n".join(lines[first : first + 4])
    return f"first error:\n{head}\n...\n{output[-1500:]}"


@pytest.fixture(scope="module")
def landed(
    broker: LocalBroker,
    settings: Settings,
    s3_server: LocalS3Server,
    tmp_path_factory: pytest.TempPathFactory,
) -> Landed:
    warehouse = Location.of(f"s3a://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}/warehouse")
    root = tmp_path_factory.mktemp("hosts")
    a, b = (_host(name, root, settings, warehouse) for name in ("host-a", "host-b"))
    topic, other = (f"s3-{uuid.uuid4().hex[:8]}" for _ in range(2))
    produced = {
        topic: [produce_samples(settings, topic=topic, count=1500, seed=11)],
        other: [produce_samples(settings, topic=other, count=300, seed=13)],
    }
    # Round 1: both hosts land the topic with its state table at once, each with a
    # checkpoint of its own (one checkpoint takes one run: the second is refused); host
    # b's run lands a second topic too, as a scheduled run of the topics due does.
    first = [
        a.start("ingest", "--topic", topic, "--state", *a.checkpoint),
        b.start("ingest", "--topic", topic, "--topic", other, "--state", *b.checkpoint),
    ]
    outputs = [p.wait() for p in first]
    # Round 2: more records; the host that landed nothing in round 1 (the lease went to
    # the other for every batch) lands them while the other reconciles.
    runs = {run for run in _runs(warehouse)}
    lander, reconciler = (b, a) if "host-b" not in runs else (a, b)
    produced[topic].append(produce_samples(settings, topic=topic, count=700, seed=12))
    second = [
        lander.start("ingest", "--topic", topic, "--state", *lander.checkpoint),
        reconciler.start("reconcile", "--topic", topic),
    ]
    outputs += [p.wait() for p in second]
    # A run's last typed step skips a topic another host holds then (it never waits):
    # what it left, a later run types. A backfill of both topics does it, landing nothing.
    catch_up = a.run("ingest", "--topic", topic, "--topic", other, "--ending-offsets", "latest")
    assert catch_up.returncode == 0, _failure(catch_up.stdout + catch_up.stderr)
    outputs.append(catch_up.stdout)
    return Landed(warehouse, topic, other, produced, outputs, (a, b))


def _coordinates_in(
    warehouse: Location, table: str, topic: str | None = None
) -> list[tuple[int, int]]:
    """(partition, offset) of every row of ``table`` (of ``topic``'s records only)."""
    rows = open_delta_table(warehouse / table).to_pyarrow_table(
        columns=["kafka_topic", "kafka_partition", "kafka_offset"]
    )
    topics, partitions, offsets = (rows.column(n).to_pylist() for n in range(3))
    return [
        (partition, offset)
        for row_topic, partition, offset in zip(topics, partitions, offsets, strict=True)
        if topic is None or row_topic == topic
    ]


@pytest.mark.parametrize("which", ["topic", "other_topic"], ids=["both hosts", "one host"])
def test_every_record_lands_once_from_two_hosts_at_once(landed: Landed, which: str) -> None:
    topic = getattr(landed, which)
    events = _coordinates_in(landed.warehouse, "events", topic)
    rejects = _coordinates_in(landed.warehouse, "rejects", topic)
    both = Counter(events + rejects)
    assert [c for c, n in both.items() if n > 1] == []
    assert len(both) == sum(p.valid + p.invalid for p in landed.produced[topic])
    assert len(events) == sum(p.valid for p in landed.produced[topic])


def test_each_typed_table_holds_its_types_events_once_after_both_hosts(
    landed: Landed, settings: Settings
) -> None:
    events = open_delta_table(landed.warehouse / "events").to_pyarrow_table(
        columns=["type", *KAFKA_COORDINATES]
    )
    expected = Counter(zip(*(events.column(n).to_pylist() for n in range(4)), strict=True))
    typed: Counter[tuple[str, str, int, int]] = Counter()
    tables = typed_tables(settings.model_copy(update={"warehouse": landed.warehouse}))
    for event_type, path in tables.items():
        rows = open_delta_table(path).to_pyarrow_table(columns=list(KAFKA_COORDINATES))
        columns = (rows.column(n).to_pylist() for n in range(3))
        typed.update((event_type, *place) for place in zip(*columns, strict=True))
    assert len(tables) > 1
    assert [place for place, n in typed.items() if n > 1] == []
    assert typed == expected


def _runs(warehouse: Location) -> Counter[str]:
    """The events table's commits per run (each commit names its run: its checkpoint)."""
    history = open_delta_table(warehouse / "events").history()
    return Counter(
        json.loads(commit["userMetadata"])["eventlake_run"]
        for commit in history
        if commit.get("userMetadata")
    )


def test_both_hosts_committed_batches_into_one_table(landed: Landed) -> None:
    runs = _runs(landed.warehouse)
    assert sorted(runs) == ["host-a", "host-b"], runs


def test_the_state_table_equals_the_topic_after_both_hosts(landed: Landed) -> None:
    # A reconcile after both hosts' landings finds nothing to change.
    result = landed.hosts[0].run("reconcile", "--topic", landed.topic)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "inserted=0 updated=0 deleted=0" in result.stdout, result.stdout


def test_status_and_the_quality_check_read_the_s3_warehouse(landed: Landed) -> None:
    status = landed.hosts[0].run("status")
    assert status.returncode == 0, status.stderr
    assert landed.topic in status.stdout
    check = landed.hosts[0].run("check", "--topic", landed.topic)
    assert check.returncode in (0, 1), check.stderr[-2000:]
    assert f"Data Docs: {landed.warehouse.as_uri()}/dq_docs/index.html" in check.stdout
    results = open_delta_table(landed.warehouse / "dq_results").to_pyarrow_table()
    assert results.num_rows > 0


def _signal_group(process: subprocess.Popen[str], signal_number: int) -> None:
    os.killpg(process.pid, signal_number)


@pytest.mark.faults
def test_a_stream_stopped_past_its_lease_and_resumed_lands_nothing_twice(
    broker: LocalBroker,
    settings: Settings,
    s3_server: LocalS3Server,
    tmp_path: Path,
) -> None:
    warehouse = Location.of(f"s3a://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}/warehouse")
    a, b = (_host(name, tmp_path, settings, warehouse) for name in ("host-a", "host-b"))
    topic = f"s3-{uuid.uuid4().hex[:8]}"
    produced = produce_samples(settings, topic=topic, count=6000, seed=21)
    stream = subprocess.Popen(
        [sys.executable, "-m", "eventlake.cli", "ingest", "--topic", topic, "--state",
         "--trigger", "processing-time=1 second", *a.checkpoint],
        env={**a.env, "EVENTLAKE_MAX_OFFSETS_PER_TRIGGER": "300"},
        cwd=a.folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the JVM is a child: stop the whole group
    )  # fmt: skip
    assert stream.stdout is not None
    seen: list[str] = []
    for line in stream.stdout:
        seen.append(line)
        if sum("ingest: batch " in s for s in seen) >= 2:
            break
    # Frozen while a batch holds the topic's lease (a long GC pause, a suspended VM),
    # longer than the lease's TTL.
    lease = lease_at(lease_path(warehouse, topic))
    deadline = time.monotonic() + 60
    while lease.holder() is None:
        assert time.monotonic() < deadline, "the stream's batches never held the lease"
        time.sleep(0.02)
    _signal_group(stream, signal.SIGSTOP)
    try:
        landed = b.run("ingest", "--topic", topic, "--state", *b.checkpoint, timeout=300)
        assert landed.returncode == 0, landed.stdout[-2000:] + landed.stderr[-2000:]
    finally:
        _signal_group(stream, signal.SIGCONT)
    time.sleep(20)  # the resumed stream finishes its batch and reads on
    _signal_group(stream, signal.SIGTERM)
    rest, _ = stream.communicate(timeout=120)
    output = "".join(seen) + rest
    # Stopped by the signal (0), or by a commit the ledger refused (75: run it again).
    assert stream.returncode in (0, 75), output[-3000:]
    assert "waiting for topic" in landed.stdout, landed.stdout[-2000:]
    assert "lost while held" in output, output[-3000:]
    events = _coordinates_in(warehouse, "events")
    rejects = _coordinates_in(warehouse, "rejects")
    both = Counter(events + rejects)
    assert [c for c, n in both.items() if n > 1] == []
    assert len(both) == produced.valid + produced.invalid
    check = b.run("reconcile", "--topic", topic)
    assert "inserted=0 updated=0 deleted=0" in check.stdout, check.stdout + check.stderr


#: One host's appends to one table, each started together with the other host's (a
#: barrier of files in ``turns``): both read the table at one version and commit the
#: next at once, so every append is a race for one version.
_APPENDS = """
import sys, time
from pathlib import Path
from eventlake.core.settings import load_settings
from eventlake.spark.session import build_spark_session
table, host, count, turns = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
hosts = sys.argv[5].split(",")
spark = build_spark_session(load_settings(), app_name=f"appends-{host}")
rows = spark.createDataFrame([(host, 0)], "host string, i int")
try:
    for i in range(count):
        (turns / f"{host}-{i}").touch()
        # A host that ended (a failed append) no longer holds the others back.
        while not all(
            (turns / f"{other}-{i}").exists() or (turns / f"{other}-end").exists()
            for other in hosts
        ):
            time.sleep(0.005)
        rows.selectExpr("host", f"{i} AS i").write.format("delta").mode("append").save(table)
finally:
    (turns / f"{host}-end").touch()
print("appended", count, flush=True)
"""


def _two_hosts_append(settings: Settings, tmp_path: Path, count: int) -> tuple[Location, int]:
    warehouse = Location.of(f"s3a://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}/warehouse")
    table = str(warehouse / "races")
    # Made first: two writers creating one table at once is a conflict Delta does not
    # retry (ProtocolChangedException), whatever the store.
    empty = pa.table({"host": pa.array([], pa.string()), "i": pa.array([], pa.int32())})
    append_to_delta_table(warehouse / "races", empty)
    turns = tmp_path / "turns"
    turns.mkdir()
    hosts = [_host(name, tmp_path, settings, warehouse) for name in ("host-a", "host-b")]
    names = ",".join(host.name for host in hosts)
    started = [
        host.start_python("-c", _APPENDS, table, host.name, str(count), str(turns), names)
        for host in hosts
    ]
    for process in started:
        output = process.wait(timeout=900)
        assert f"appended {count}" in output, output[-2000:]
    return warehouse, int(open_delta_table(warehouse / "races").version())


def _appended(warehouse: Location) -> Counter[tuple[str, int]]:
    rows = open_delta_table(warehouse / "races").to_pyarrow_table()
    return Counter(zip(rows.column("host").to_pylist(), rows.column("i").to_pylist(), strict=True))


def _assert_every_commit_kept(warehouse: Location, version: int, count: int) -> None:
    appended = _appended(warehouse)
    missing = [(h, i) for h in ("host-a", "host-b") for i in range(count) if (h, i) not in appended]
    assert missing == [], f"{len(missing)} commits replaced by the other host's: {missing[:5]}"
    assert max(appended.values()) == 1
    assert version == 2 * count  # version 0 made the table, then one per append


def test_two_hosts_committing_to_one_table_keep_every_commit(
    broker: LocalBroker, settings: Settings, s3_server: LocalS3Server, tmp_path: Path
) -> None:
    # 12 races for one version each (the turns of _APPENDS); the 200 each of
    # `make test-faults` below is the long run.
    warehouse, version = _two_hosts_append(settings, tmp_path, 12)
    _assert_every_commit_kept(warehouse, version, 12)


@pytest.mark.faults
def test_two_hosts_committing_200_times_each_keep_every_commit(
    broker: LocalBroker, settings: Settings, s3_server: LocalS3Server, tmp_path: Path
) -> None:
    warehouse, version = _two_hosts_append(settings, tmp_path, 200)
    _assert_every_commit_kept(warehouse, version, 200)


@pytest.mark.faults
def test_a_stream_on_one_host_beside_scheduled_runs_and_backfills_on_the_other(
    broker: LocalBroker,
    settings: Settings,
    s3_server: LocalS3Server,
    tmp_path: Path,
) -> None:
    """The ledger's combined scenario (tests/ledger/test_ledger.py: a stream beside the
    schedule and a backfill) with the parties on different hosts: every record once."""
    warehouse = Location.of(f"s3a://{TEST_BUCKET}/{uuid.uuid4().hex[:12]}/warehouse")
    a, b = (_host(name, tmp_path, settings, warehouse) for name in ("host-a", "host-b"))
    topic = f"s3-{uuid.uuid4().hex[:8]}"
    produced = [produce_samples(settings, topic=topic, count=1000, seed=31)]
    stream = subprocess.Popen(
        [sys.executable, "-m", "eventlake.cli", "ingest", "--topic", topic, "--state",
         "--trigger", "processing-time=2 seconds", *a.checkpoint],
        env=a.env,
        cwd=a.folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        for round_number in range(2):
            produced.append(
                produce_samples(settings, topic=topic, count=800, seed=32 + round_number)
            )
            # The schedule (with the state table), then a backfill (bounded: events only).
            for options in (("--state", *b.checkpoint), ("--ending-offsets", "latest")):
                run = b.run("ingest", "--topic", topic, *options)
                assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        expected = sum(p.valid + p.invalid for p in produced)
        deadline = time.monotonic() + 120
        while (
            len(_coordinates_in(warehouse, "events")) + len(_coordinates_in(warehouse, "rejects"))
            < expected
        ):
            assert time.monotonic() < deadline, "the records never all landed"
            time.sleep(1)
    finally:
        _signal_group(stream, signal.SIGTERM)
        output, _ = stream.communicate(timeout=180)
    assert stream.returncode in (0, 75), output[-3000:]
    both = Counter(_coordinates_in(warehouse, "events") + _coordinates_in(warehouse, "rejects"))
    assert [c for c, n in both.items() if n > 1] == []
    assert len(both) == expected
    check = b.run("reconcile", "--topic", topic)
    assert "inserted=0 updated=0 deleted=0" in check.stdout, check.stdout + check.stderr
