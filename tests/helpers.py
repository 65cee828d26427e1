"""Small helpers shared by tests: producing CloudEvents and reading tables back."""

from __future__ import annotations

import http.server
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from deltalake import DeltaTable as DeltaRsTable
from pyspark.sql import DataFrame, SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.kafka.topics import create_topic
from eventlake.typed.names import typed_tables
from eventlake.warehouse.names import EVENTS, KAFKA_COORDINATES, REJECTS


def binary_headers(
    event_id: str, *, source: str = "/tests", type_: str = "t.test"
) -> list[tuple[str, bytes]]:
    return [
        ("ce_specversion", b"1.0"),
        ("ce_id", event_id.encode()),
        ("ce_source", source.encode()),
        ("ce_type", type_.encode()),
    ]


def structured_value(event_id: str, *, source: str = "/tests", data: object = None) -> bytes:
    body: dict[str, object] = {
        "specversion": "1.0",
        "id": event_id,
        "source": source,
        "type": "t.test",
    }
    if data is not None:
        body["data"] = data
    return json.dumps(body).encode()


def produce_events(
    settings: Settings, topic: str, count: int, *, prefix: str = "e", invalid_every: int = 0
) -> tuple[int, int]:
    """Produce ``count`` records alternating binary and structured mode; every
    ``invalid_every``-th one is a plain tombstone. Returns (valid, invalid)."""
    records: list[Record] = []
    valid = invalid = 0
    for n in range(count):
        key = f"k{n % 97}".encode()
        if invalid_every and n % invalid_every == 0:
            records.append((key, None, []))
            invalid += 1
        elif n % 2:
            records.append((key, b"%d" % n, binary_headers(f"{prefix}{n}")))
            valid += 1
        else:
            json_ct = [("content-type", b"application/cloudevents+json")]
            records.append((key, structured_value(f"{prefix}{n}", data={"n": n}), json_ct))
            valid += 1
    produce_all(settings, topic, records)
    return valid, invalid


def read_table(spark: SparkSession, settings: Settings, name: str) -> DataFrame:
    return spark.read.format("delta").load(str(settings.table_path(name)))


#: Where a record was in Kafka: what exactly once is counted by.
#: A record's place in Kafka, as the tables name it (a list, as ``select`` takes it).
COORDINATES = list(KAFKA_COORDINATES)


def landed_records(spark: SparkSession, settings: Settings) -> tuple[int, int]:
    """(rows in events + rejects, distinct coordinates among them): equal when every
    record read landed once."""
    events = read_table(spark, settings, EVENTS).select(COORDINATES)
    rejects = read_table(spark, settings, REJECTS).select(COORDINATES)
    both = events.unionByName(rejects)
    return both.count(), both.distinct().count()


def append_small_files(spark: SparkSession, path: Path, files: int) -> None:
    """``files`` appends of one small file each to a Delta table: something to compact."""
    for n in range(files):
        spark.range(n * 10, n * 10 + 10).coalesce(1).write.format("delta").mode("append").save(
            str(path)
        )


def delta_operations(path: Path) -> list[str]:
    """The table's commit operations, oldest first, read by an independent reader."""
    history = DeltaRsTable(str(path)).history()
    return [commit["operation"] for commit in sorted(history, key=lambda c: c["version"])]


def keyed_events(keys: list[str], *, tombstones: tuple[str, ...] = ()) -> list[Record]:
    """One binary CloudEvent per key (``{}`` as data); a key in ``tombstones`` gets no value."""
    return [
        (key.encode(), None if key in tombstones else b"{}", binary_headers(f"{key}-{n}"))
        for n, key in enumerate(keys)
    ]


def read_topic(spark: SparkSession, settings: Settings, topic: str) -> list[Any]:
    """Every record of ``topic`` with its headers, as Spark's Kafka source reads it, in
    (partition, offset) order."""
    return (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .orderBy("partition", "offset")
        .collect()
    )


def land(
    spark: SparkSession, settings: Settings, topic: str, records: list[Record], **request: Any
) -> IngestSummary:
    """Create ``topic``, produce ``records`` to it and ingest it with ``request``'s
    options (:class:`eventlake.ingest.IngestRequest`); the run's summary."""
    create_topic(settings, topic)
    produce_all(settings, topic, records)
    return run_ingest(spark, settings, IngestRequest(topics=(topic,), **request))


#: A response of :func:`http_server`: status, headers, body.
Response = tuple[int, dict[str, str], bytes]


class _Routes(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, Response]] = {}

    def do_GET(self) -> None:
        status, headers, body = self.routes.get(self.path, (404, {}, b""))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # no request lines in the test output


@contextmanager
def http_server(routes: dict[str, Response]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering GET ``path`` with ``routes[path]`` (404
    otherwise), for as long as the block runs: its base URL. No other network."""
    handler = type("Routes", (_Routes,), {"routes": routes})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


#: What Spark's status store says it holds of one RDD: (cached partitions, bytes in
#: memory, bytes on disk) per storage entry.
Storage = list[tuple[int, int, int]]


def held_storage(
    spark: SparkSession, frame: DataFrame, settled: Callable[[Storage], bool]
) -> Storage:
    """The storage Spark reports for the rows under ``frame`` (other tests' aside), once
    ``settled`` holds or 10 s have passed: the status store hears of stored and removed
    blocks from its listener bus, after the job or the removal returns."""
    rdd_id = frame._jdf.queryExecution().analyzed().rdd().id()

    def storage() -> Storage:
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()  # type: ignore[union-attr]
        return [
            (i.numCachedPartitions(), i.memSize(), i.diskSize()) for i in infos if i.id() == rdd_id
        ]

    deadline = time.monotonic() + 10
    while not settled(storage()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return storage()


@contextmanager
def state_stream(
    spark: SparkSession, settings: Settings, topic: str
) -> Iterator[list[BaseException]]:
    """``ingest --state`` of ``topic`` as a 1-second stream in a thread for the block;
    yields the list its failure goes into (the test asserts on it after the block)."""
    request = IngestRequest(
        topics=(topic,), state=True, trigger="processing-time=1 second", checkpoint_name="s"
    )
    failures: list[BaseException] = []

    def run() -> None:
        try:
            run_ingest(spark, settings, request)
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(error)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        yield failures
    finally:
        for query in spark.streams.active:
            query.stop()
        runner.join(timeout=120)


def interrupted_spark_job(spark: SparkSession, *_args: Any, **_kwargs: Any) -> Any:
    """A Spark job that runs for a minute unless cancelled, and a SIGINT to this process
    a second into it (Ctrl-C): in place of a job's step, to test how the job stops."""
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    sleep = "reflect('java.lang.Thread', 'sleep', cast(60000 as bigint))"
    return spark.range(1).selectExpr(sleep).collect()


def typed_once(spark: SparkSession, settings: Settings) -> dict[str, int]:
    """Rows per typed table, asserting each holds its type's events, each once: the
    typed tables' exactly once, as the ledger's tests check it for events."""
    events = read_table(spark, settings, EVENTS)
    counts = {}
    for event_type, path in typed_tables(settings).items():
        rows = spark.read.format("delta").load(str(path))
        coordinates = rows.select(COORDINATES)
        expected = events.where(events.type == event_type).select(coordinates.columns)
        assert coordinates.count() == coordinates.distinct().count(), f"{event_type}: twice"
        assert coordinates.exceptAll(expected).count() == 0, f"{event_type}: not its events"
        assert expected.exceptAll(coordinates).count() == 0, f"{event_type}: missing"
        counts[event_type] = coordinates.count()
    return counts
