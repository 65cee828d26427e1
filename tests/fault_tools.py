"""Tools of the fault-injection tests: a keyed corpus whose every record's coordinates
are known, job subprocesses whose whole process group can be SIGKILLed, and a watcher
of a Delta table's commit window.

Example:
    >>> corpus = produce_keyed_corpus(settings, "orders", count=6_000, keys=600, seed=1)
    >>> job = Job.ingest(settings, "orders", tmp_path / "ingest", state=True, batch=1_500)
    >>> kill = kill_in_commit_window(job, CommitWindow(settings.table_path("events")))
    >>> kill.in_window
    True
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError, Message

from eventlake.core.locations import Location, LocationLike
from eventlake.core.settings import Settings
from eventlake.kafka.clients import make_producer
from eventlake.kafka.topics import create_topic
from eventlake.ledger.checkpoint import SPARK_FOLDER
from eventlake.storage import store
from tests.helpers import binary_headers, structured_value

JSON_CT = ("content-type", b"application/cloudevents+json")
#: Kinds of produced records that are valid CloudEvents (rows of the events table).
EVENT_KINDS = ("update", "tombstone")
#: Invalid records mixed in, by the reject reason the decoder must give them.
INVALID_KINDS = (
    "not_a_cloudevent",
    "malformed_json",
    "missing_required_attribute",
    "unsupported_specversion",
    "invalid_time",
)
PLAIN_TOMBSTONE = "plain_tombstone"
Coordinates = tuple[int, int]


@dataclass(frozen=True)
class ProducedRecord:
    """One record on the topic: its kind, key, event id (events only) and coordinates."""

    kind: str
    key: bytes
    event_id: str | None
    partition: int
    offset: int


@dataclass
class Corpus:
    """Everything produced to one topic, with what ingest must make of it."""

    topic: str
    records: list[ProducedRecord]

    def events(self) -> dict[Coordinates, str]:
        """(partition, offset) -> event id of every valid CloudEvent."""
        return {
            (r.partition, r.offset): str(r.event_id) for r in self.records if r.kind in EVENT_KINDS
        }

    def rejects(self) -> dict[Coordinates, str]:
        """(partition, offset) -> reject reason of every other record."""
        return {(r.partition, r.offset): r.kind for r in self.records if r.kind not in EVENT_KINDS}

    def state(self) -> dict[bytes, tuple[str, int, int]]:
        """Key -> (event id, partition, offset) of its latest record, computed here:
        updates put, binary tombstones and plain tombstones delete, invalid records
        change nothing."""
        latest: dict[bytes, tuple[str, int, int]] = {}
        for record in sorted(self.records, key=lambda r: (r.partition, r.offset)):
            if record.kind == "update":
                latest[record.key] = (str(record.event_id), record.partition, record.offset)
            elif record.kind in ("tombstone", PLAIN_TOMBSTONE):
                latest.pop(record.key, None)
        return latest

    def kinds(self) -> Counter[str]:
        return Counter(r.kind for r in self.records)


def _record(
    kind: str, key: bytes, n: int, prefix: str
) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """Value and headers of the n-th record of a kind."""
    event_id = f"{prefix}-{n}"
    if kind == "update":
        if n % 2:
            return b'{"n": %d, "key": "%s"}' % (n, key), [
                *binary_headers(event_id, source="/faults"),
                ("content-type", b"application/json"),
            ]
        return structured_value(event_id, source="/faults", data={"n": n}), [JSON_CT]
    if kind == "tombstone":
        return None, binary_headers(event_id, source="/faults")
    if kind == PLAIN_TOMBSTONE:
        return None, []
    if kind == "not_a_cloudevent":
        return b"plain bytes %d" % n, [("x-trace", b"%d" % n)]
    if kind == "malformed_json":
        return b'{"specversion": "1.0", "id": "%d"' % n, [JSON_CT]
    if kind == "missing_required_attribute":
        headers = [h for h in binary_headers(event_id) if h[0] != "ce_source"]
        return b"x", headers
    if kind == "unsupported_specversion":
        return b"x", [("ce_specversion", b"0.3"), *binary_headers(event_id)[1:]]
    if kind == "invalid_time":
        return b"x", [*binary_headers(event_id), ("ce_time", b"yesterday at noon")]
    raise ValueError(kind)


def produce_keyed_corpus(
    settings: Settings,
    topic: str,
    *,
    count: int,
    keys: int,
    seed: int,
    partitions: int = 2,
    invalid_rate: float = 0.01,
    tombstone_rate: float = 0.10,
    compacted: bool = True,
    first: int = 0,
) -> Corpus:
    """Create ``topic`` and produce ``count`` keyed records: updates (binary and
    structured), ~``tombstone_rate`` tombstones (one in five a plain Kafka tombstone, the
    rest binary events without data) and ~``invalid_rate`` invalid records (reasons in
    INVALID_KINDS, taken in turn). Each record's partition and offset come from its
    delivery report, so the expected tables can be computed exactly.

    A compacted topic gets a huge ``min.compaction.lag.ms``: compaction during the test
    would remove records the expectations count on. ``first`` numbers the records (and
    their event ids) on from an earlier call for the same topic.
    """
    config = (
        {"cleanup.policy": "compact", "min.compaction.lag.ms": str(7 * 24 * 3600 * 1000)}
        if compacted
        else {}
    )
    create_topic(settings, topic, partitions=partitions, config=config)
    rng = random.Random(seed)
    prefix = f"{topic}-e"
    producer = make_producer(settings, **{"enable.idempotence": True})
    kinds: list[str] = []
    keys_of: list[bytes] = []
    landed: dict[int, Coordinates] = {}
    errors: list[str] = []

    def on_delivery(n: int) -> Callable[[KafkaError | None, Message], None]:
        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                errors.append(str(error))
            else:
                landed[n] = (int(message.partition() or 0), int(message.offset() or 0))

        return report

    invalid_turn = 0
    for n in range(first, first + count):
        draw = rng.random()
        if draw < invalid_rate:
            kind = INVALID_KINDS[invalid_turn % len(INVALID_KINDS)]
            invalid_turn += 1
        elif draw < invalid_rate + tombstone_rate:
            kind = PLAIN_TOMBSTONE if rng.random() < 0.2 else "tombstone"
        else:
            kind = "update"
        key = b"key-%d" % rng.randrange(keys)
        value, headers = _record(kind, key, n, prefix)
        typed: list[tuple[str, str | bytes | None]] = list(headers)
        while True:
            try:
                producer.produce(
                    topic, key=key, value=value, headers=typed, on_delivery=on_delivery(n)
                )
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.1)
        producer.poll(0)
        kinds.append(kind)
        keys_of.append(key)
    assert producer.flush(120) == 0, "records still queued after 120 s"
    assert not errors, errors[:3]
    assert len(landed) == count
    records = [
        ProducedRecord(
            kind=kinds[i],
            key=keys_of[i],
            event_id=f"{prefix}-{first + i}" if kinds[i] in EVENT_KINDS else None,
            partition=landed[first + i][0],
            offset=landed[first + i][1],
        )
        for i in range(count)
    ]
    return Corpus(topic=topic, records=records)


class Job:
    """An eventlake CLI command in a process group of its own (the Python driver and
    its JVM), its stdout collected line by line, its stderr kept in a file."""

    def __init__(self, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / "stderr.txt"
        self.lines: list[str] = []
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "eventlake.cli", *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                start_new_session=True,  # the JVM is a child: kill the whole group
            )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @staticmethod
    def environment(settings: Settings, batch: int | None) -> dict[str, str]:
        env = dict(
            os.environ,
            EVENTLAKE_BOOTSTRAP_SERVERS=settings.bootstrap_servers,
            EVENTLAKE_WAREHOUSE=str(settings.warehouse),
            EVENTLAKE_SHUFFLE_PARTITIONS="2",
            EVENTLAKE_DRIVER_MEMORY="1g",
        )
        if batch is not None:
            env["EVENTLAKE_MAX_OFFSETS_PER_TRIGGER"] = str(batch)
        return env

    @classmethod
    def ingest(
        cls, settings: Settings, topic: str, log_dir: Path, *, state: bool, batch: int
    ) -> Job:
        args = ["ingest", "--topic", topic, *(["--state"] if state else [])]
        return cls(args, cls.environment(settings, batch), log_dir)

    @classmethod
    def republish(
        cls, settings: Settings, source: str, target: str, log_dir: Path, *, batch: int
    ) -> Job:
        args = ["republish", "--source", source, "--target", target]
        return cls(args, cls.environment(settings, batch), log_dir)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def batches_done(self) -> int:
        return sum(1 for line in self.lines if line.startswith("ingest: batch "))

    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the driver's whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._reader.join(timeout=10)

    def wait(self, timeout: float) -> int:
        """Wait for the job to end; kill it if it outlives the timeout (a hang)."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"job still running after {timeout:.0f}s (hang?); stdout: {self.lines[-5:]}, "
                f"stderr: {self.stderr()[-2000:]}"
            ) from None
        self._reader.join(timeout=10)
        return code

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def output(self) -> str:
        return "\n".join(self.lines) + "\n" + self.stderr()


def wait_for(
    condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.05
) -> None:
    """Poll ``condition()`` until true; fail with ``what`` after the timeout."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


class CommitWindow:
    """Watches a Delta table's folder for the window of a commit: data files written
    (complete ones) that no commit in ``_delta_log`` adds yet. Delta writes a
    transaction's data files straight into the table folder and makes them part of the
    table only when the commit's JSON lands, so such files mean the writer is inside
    that window. Files left over from earlier kills are known at creation and ignored.

    The table may be a local folder or on S3 (read through the warehouse's store): an
    S3 object is listed only once its upload is complete, a local file once its
    Parquet footer (the ``PAR1`` magic at its end) is written."""

    def __init__(self, table: LocationLike) -> None:
        self.table = Location.of(table)
        self._adds: set[str] = set()
        self._parsed: set[str] = set()
        self.leftovers: set[str] = set()
        self.leftovers = self.orphans()

    def committed(self) -> set[str]:
        """Data files added by any commit so far (commit files never change once there)."""
        log = self.table / "_delta_log"
        for entry in store.names(log):
            if entry in self._parsed or not (entry.endswith(".json") and entry[:20].isdigit()):
                continue
            for line in (store.read_text(log / entry) or "").splitlines():
                action = json.loads(line)
                if "add" in action:
                    self._adds.add(action["add"]["path"])
            self._parsed.add(entry)
        return self._adds

    def data_files(self) -> set[str]:
        """Complete Parquet files in the table folder (not subfolders, not hidden)."""
        candidates = {
            name
            for name in store.names(self.table)
            if name.endswith(".parquet") and not name.startswith((".", "_"))
        }
        if store.on_object_store(self.table) is not None:
            return candidates
        return {name for name in candidates if _has_parquet_footer(self.table.local() / name)}

    def orphans(self) -> set[str]:
        """Complete data files no commit adds (leftovers of earlier kills excluded)."""
        files = self.data_files()
        return files - self.committed() - self.leftovers


def _has_parquet_footer(path: Path) -> bool:
    """Whether the local file ends in Parquet's footer magic (its writer closed it)."""
    try:
        with open(path, "rb") as data:
            if data.seek(0, os.SEEK_END) < 12:
                return False
            data.seek(-4, os.SEEK_END)
            return data.read(4) == b"PAR1"
    except FileNotFoundError:
        return False


@dataclass
class Kill:
    """Where one SIGKILL landed."""

    label: str
    batches_done: int
    in_window: bool = False
    orphans: set[str] = field(default_factory=set)
    note: str = ""

    def describe(self) -> str:
        where = (
            f"inside the commit window ({len(self.orphans)} data file(s) written, not committed)"
            if self.in_window
            else self.note or "at a random point"
        )
        return f"{self.label}: after {self.batches_done} batch(es) of the run, {where}"


def kill_in_commit_window(
    job: Job, window: CommitWindow, *, after_batches: int, label: str, timeout: float = 600
) -> Kill:
    """Once ``after_batches`` batches of the run are done, SIGKILL the job as soon as
    ``window`` shows written but uncommitted data files. Afterwards, with the job dead,
    check that those files are still not committed: then the kill landed inside the
    window (the commit never happened)."""
    deadline = time.monotonic() + timeout
    while job.batches_done() < after_batches and job.running():
        if time.monotonic() > deadline:
            raise AssertionError(f"{label}: no progress within {timeout:.0f}s")
        time.sleep(0.05)
    while job.running():
        orphans = window.orphans()
        if orphans:
            job.kill()
            still = orphans - window.committed()
            kill = Kill(label, job.batches_done(), in_window=still == orphans, orphans=orphans)
            if not kill.in_window:
                kill.note = "the commit landed between seeing the files and the kill"
            return kill
        if time.monotonic() > deadline:
            job.kill()
            raise AssertionError(f"{label}: no commit window seen within {timeout:.0f}s")
        time.sleep(0.01)
    return Kill(label, job.batches_done(), note="the job ended before a window was seen")


def kill_at_random(job: Job, rng: random.Random, *, after_batches: int, label: str) -> Kill:
    """SIGKILL the job a random moment (0 to 3 s) after ``after_batches`` batches."""
    wait_for(
        lambda: job.batches_done() >= after_batches or not job.running(),
        600,
        f"{label}: {after_batches} batches",
    )
    time.sleep(rng.uniform(0.0, 3.0))
    ended = not job.running()
    job.kill()
    return Kill(
        label,
        job.batches_done(),
        note="the job had ended already" if ended else "at a random point",
    )


def committed_batches(settings: Settings, checkpoint_name: str) -> int:
    """Micro-batches a streaming query has committed in its checkpoint so far."""
    commits = settings.checkpoints / checkpoint_name / SPARK_FOLDER / "commits"
    if not commits.is_dir():
        return 0
    return sum(1 for entry in os.listdir(commits) if entry.isdigit())
