"""eventlake's benchmark harness: each job against the fastest read of the same topic.

    make bench                       # N = 100,000 and 1,000,000
    python tests/benchmarks/bench.py --sizes 2000 --repeats 1   # smoke run

For each N it generates topics of ~1 KB CloudEvents (fixed seed; mixed, binary-only and
structured-only, plus a compacted keyed variant with ~10% tombstones) and a 10-record
start-up topic on the local broker, then measures, interleaved and ``--repeats`` times
each, median reported:

* ceiling A: a confluent-kafka consumer loop (batched consume) that discards records;
* ceiling B: Spark's Kafka source reading the topic and counting;
* ingest (decode, validate, Delta append, exactly-once) on the mixed, binary and
  structured topics; ingest with the state table (MERGE with tombstones);
* the data-quality check (every check, whole table) of the events table that the
  ingest mixed run just before it wrote;
* republish with a partitionkey mapper into a fresh topic, against ceiling C: a plain
  Spark topic copy;
* a per-record Python baseline decoding with the official CloudEvents SDK
  (``--sdk-sample`` records of the mixed topic).

Each result has events/s (records / median, start-up included), start-up (the same job
on the 10-record topic; for the quality check, the check of that topic's ingested
table), steady events/s ((records - 10) / (median - start-up); none when the start-up
took as long as the run), MB/s, peak RSS of the driver (Python + JVM) and of the broker,
and the ratio to its ceiling. The goals of the benchmark issue (:data:`RATIO_GOALS`,
per-event cost flat within 20% between N >= 1,000,000) get PASS/FAIL lines. Results go
to ``results/bench-<time>.json`` and ``.md`` (and a PNG plot of events/s vs N).

Disk: every run works in a fresh warehouse folder (and target topic) that is removed
once the run is measured; the generated topics and the N's folder go at the end of each
N (clients are set not to have the broker auto-create a deleted topic again: Spark's
pooled consumers ask for their topics when they close), and the command line sweeps the
run's topics once more at its end.
Nothing here is part of ``make test`` except a smoke run of tiny size.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

import psutil
from pyspark.sql import SparkSession

from eventlake.broker import LocalBroker
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka import Record, create_topic, delete_topics, make_admin, make_producer
from eventlake.quality import CheckRequest, run_checks
from eventlake.quality_config import QualityConfig, TopicRules
from eventlake.republish import PARTITIONKEY, RepublishRequest, run_republish
from eventlake.settings import Settings, load_settings

RESULTS = Path(__file__).resolve().parents[2] / "results"
TYPES = ("com.example.order.created", "com.example.order.paid", "com.example.order.shipped")
FILLER_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
MODES: Final = ("mixed", "binary", "structured")
#: Records of the start-up topic: each job's start-up is the same job on it.
STARTUP_RECORDS: Final = 10

CEILING_A: Final = "ceiling A: librdkafka read"
CEILING_B: Final = "ceiling B: Spark Kafka count"
INGEST_MIXED: Final = "ingest mixed"
QUALITY: Final = "quality check (events table)"
INGEST_BINARY: Final = "ingest binary"
INGEST_STRUCTURED: Final = "ingest structured"
INGEST_STATE: Final = "ingest + state (keyed, 10% tombstones)"
CEILING_C: Final = "ceiling C: Spark topic copy"
REPUBLISH: Final = "republish partitionkey"
SDK: Final = "python SDK per-record decode"
#: Every job and the job it is compared with, in the order they run within a repeat
#: (the quality check right after the ingest whose table it checks).
JOBS: Final[dict[str, str | None]] = {
    CEILING_A: None,
    CEILING_B: None,
    INGEST_MIXED: CEILING_B,
    QUALITY: None,
    INGEST_BINARY: CEILING_B,
    INGEST_STRUCTURED: CEILING_B,
    INGEST_STATE: INGEST_MIXED,
    CEILING_C: None,
    REPUBLISH: CEILING_C,
    SDK: INGEST_MIXED,
}
#: Goals of the benchmark issue: (job, compared with, lowest ratio of their events/s).
RATIO_GOALS: Final = (
    (INGEST_MIXED, SDK, 20.0),
    (INGEST_MIXED, CEILING_B, 0.6),
    (INGEST_STATE, INGEST_MIXED, 0.5),
    (REPUBLISH, CEILING_C, 0.7),
)
#: Per-event cost of each job flat within this share between the smallest and the
#: largest N of at least FLAT_MIN_N.
FLAT_WITHIN: Final = 0.20
FLAT_MIN_N: Final = 1_000_000
#: Rules of the measured quality check: every check applies to the bench events.
QUALITY_RULES: Final = QualityConfig(
    defaults=TopicRules(keyed=True, time_required=True, type_pattern=r"^com[.]example[.]order[.]")
)

T = TypeVar("T")


# -- data -----------------------------------------------------------------------------------


def bench_records(count: int, *, mode: str, seed: int, tombstones: float = 0.0) -> Iterator[Record]:
    """~1 KB CloudEvents: ``mode`` is mixed, binary or structured; entity keys."""
    rng = random.Random(seed)
    description = " ".join(rng.choice(FILLER_WORDS) for _ in range(120))[:760]
    for n in range(count):
        entity = f"order-{rng.randrange(max(count // 10, 1)):07d}"
        key = entity.encode()
        attributes = {
            "id": f"{seed}-{n}",
            "source": f"/shop/{n % 7}",
            "type": TYPES[n % 3],
            "time": "2026-01-01T00:00:00Z",
            "partitionkey": entity,
            "tenant": f"t{n % 13}",
        }
        if tombstones and rng.random() < tombstones:
            headers = [("ce_specversion", b"1.0")] + [
                (f"ce_{k}", v.encode()) for k, v in attributes.items()
            ]
            yield (key, None, headers)
            continue
        data = {"order": entity, "n": n, "amount": n % 1000 / 10, "description": description}
        binary = mode == "binary" or (mode == "mixed" and n % 2 == 0)
        if binary:
            headers = [("ce_specversion", b"1.0"), ("content-type", b"application/json")]
            headers += [(f"ce_{k}", v.encode()) for k, v in attributes.items()]
            yield (key, json.dumps(data).encode(), headers)
        else:
            body: dict[str, Any] = {
                "specversion": "1.0",
                "datacontenttype": "application/json",
                **attributes,
                "data": data,
            }
            yield (
                key,
                json.dumps(body).encode(),
                [("content-type", b"application/cloudevents+json")],
            )


def fill_topic(settings: Settings, topic: str, records: Iterator[Record], *, compact: bool) -> int:
    """Create ``topic`` and produce ``records`` to it; returns the bytes of values + headers."""
    config = {"cleanup.policy": "compact"} if compact else {}
    create_topic(settings, topic, partitions=2, config=config)
    producer = make_producer(
        settings,
        **{"linger.ms": 50, "batch.num.messages": 10000, "queue.buffering.max.messages": 500000},
    )
    size = 0
    for count, (key, value, headers) in enumerate(records, 1):
        typed_headers: list[tuple[str, str | bytes | None]] = list(headers)
        while True:
            try:
                producer.produce(topic, key=key, value=value, headers=typed_headers)
                break
            except BufferError:
                producer.poll(0.05)
        size += len(value or b"") + sum(len(k) + len(v) for k, v in headers)
        if count % 10000 == 0:
            producer.poll(0)
    producer.flush(300)
    return size


# -- measuring ------------------------------------------------------------------------------


class PeakRss:
    """Samples the RSS of this process tree (Python + JVM) and of the broker."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.driver = 0
        self.broker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        broker = psutil.Process(self.broker_pid) if self.broker_pid else None
        while not self._stop.is_set():
            try:
                # The broker is a child when this run started it; it is counted apart.
                children = [c for c in me.children(True) if c.pid != self.broker_pid]
                rss = me.memory_info().rss + sum(c.memory_info().rss for c in children)
                self.driver = max(self.driver, rss)
                if broker:
                    self.broker = max(self.broker, broker.memory_info().rss)
            except psutil.Error:
                pass
            self._stop.wait(0.2)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Measurement:
    """Timings of one job at one N; ``n`` is the records it handles (the SDK: a sample)."""

    job: str
    topic_n: int
    n: int
    seconds: list[float] = field(default_factory=list)
    startup_seconds: list[float] = field(default_factory=list)
    bytes_total: int = 0
    peak_driver_rss_mb: float = 0.0
    peak_broker_rss_mb: float = 0.0
    ceiling: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def startup(self) -> float | None:
        return statistics.median(self.startup_seconds) if self.startup_seconds else None

    def events_per_second(self) -> float:
        """Records over the median wall time, start-up included."""
        return self.n / self.median

    def steady_events_per_second(self) -> float | None:
        """Records beyond the start-up topic's over the time beyond its run; None when
        the start-up run took at least as long (nothing left to measure)."""
        startup = self.startup
        if startup is None or self.median <= startup:
            return None
        return (self.n - STARTUP_RECORDS) / (self.median - startup)

    def mb_per_second(self) -> float:
        return self.bytes_total / 1e6 / self.median

    def per_event_microseconds(self) -> float:
        return self.median / self.n * 1e6


def timed(run: Callable[[], T], broker_pid: int | None) -> tuple[float, PeakRss, T]:
    """Wall time, peak RSS and result of ``run()``."""
    with PeakRss(broker_pid) as peak:
        started = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - started
    return elapsed, peak, result


@dataclass
class Leftovers:
    """What a measured run leaves behind: removed after its measurement."""

    warehouses: list[Path] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)


def clean_up(settings: Settings, leftovers: Leftovers) -> None:
    """Remove a run's warehouse folders and delete its target topics."""
    for warehouse in leftovers.warehouses:
        shutil.rmtree(warehouse, ignore_errors=True)
    if leftovers.topics:
        delete_topics(settings, leftovers.topics)


def warn(message: str) -> None:
    print(f"bench: warning: {message}", file=sys.stderr, flush=True)


# -- the jobs -------------------------------------------------------------------------------


def _consume_all(
    settings: Settings,
    topic: str,
    expected: int,
    on_message: Callable[[Any], None],
    *,
    extra: dict[str, Any] | None = None,
    idle_timeout: float = 120.0,
) -> None:
    """Read ``expected`` records of ``topic`` from the start with a fresh group."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **(extra or {}),
        }
    )
    consumer.subscribe([topic])
    seen = 0
    last_record = time.monotonic()
    try:
        while seen < expected:
            messages = consumer.consume(10000, timeout=1.0)
            if messages:
                last_record = time.monotonic()
            elif time.monotonic() - last_record > idle_timeout:
                raise RuntimeError(f"read {seen} of {expected} records of {topic}, then nothing")
            for message in messages:
                if message.error() is None:
                    seen += 1
                    on_message(message)
    finally:
        consumer.close()


def librdkafka_read(settings: Settings, topic: str, *, expected: int) -> None:
    """Ceiling A: consume and discard."""
    _consume_all(
        settings, topic, expected, lambda _message: None, extra={"fetch.max.bytes": 52428800}
    )


def spark_count(spark: SparkSession, settings: Settings, topic: str) -> None:
    """Ceiling B: Spark's Kafka source reads the topic and counts."""
    from eventlake.kafka import spark_kafka_options

    (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .count()
    )


def spark_copy(spark: SparkSession, settings: Settings, topic: str) -> str:
    """Ceiling C: key, value and headers copied to a fresh topic; returns its name."""
    from eventlake.kafka import spark_kafka_options

    target = f"{topic}-copy-{uuid.uuid4().hex[:6]}"
    create_topic(settings, target, partitions=2)
    (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
        .select("key", "value", "headers")
        .write.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("topic", target)
        .save()
    )
    return target


def fresh_warehouse(settings: Settings) -> Settings:
    """``settings`` with a new warehouse folder under its own."""
    return settings.model_copy(update={"warehouse": settings.warehouse / uuid.uuid4().hex})


def ingest(
    spark: SparkSession, settings: Settings, topic: str, *, state: bool, expected: int
) -> Path:
    """Ingest ``topic`` into a fresh warehouse; returns that warehouse."""
    run_settings = fresh_warehouse(settings)
    summary = run_ingest(spark, run_settings, IngestRequest(topics=(topic,), state=state))
    if summary.records_read != expected:
        warn(f"ingest of {topic} read {summary.records_read} of {expected} records")
    return run_settings.warehouse


def quality_check(spark: SparkSession, settings: Settings, warehouse: Path) -> None:
    """Every check over the whole events table of ``warehouse``."""
    run_settings = settings.model_copy(update={"warehouse": warehouse})
    report = run_checks(spark, run_settings, CheckRequest(full=True), config=QUALITY_RULES)
    failed = sorted({r.check.value for r in report.results if not r.success})
    if failed:
        warn(f"quality check of {warehouse.name} failed: {', '.join(failed)}")


def republish(spark: SparkSession, settings: Settings, topic: str, *, expected: int) -> Leftovers:
    """Republish ``topic`` re-keyed by partitionkey into a fresh topic (fresh warehouse for
    its checkpoint and rejects); returns both, to be removed."""
    run_settings = fresh_warehouse(settings)
    target = f"{topic}-republish-{uuid.uuid4().hex[:6]}"
    summary = run_republish(
        spark,
        run_settings,
        RepublishRequest(source=topic, target=target, key_mapper=PARTITIONKEY),
    )
    if summary.republished != expected:
        warn(f"republish of {topic} wrote {summary.republished} of {expected} records")
    return Leftovers(warehouses=[run_settings.warehouse], topics=[target])


def sdk_decode(settings: Settings, topic: str, *, expected: int) -> None:
    """Per-record Python: consume, then decode each record with the CloudEvents SDK."""
    from cloudevents.core.bindings import kafka as ce_kafka
    from cloudevents.core.formats.json import JSONFormat

    event_format = JSONFormat()

    def decode(message: Any) -> None:
        raw = message.headers() or []
        pairs = raw.items() if isinstance(raw, dict) else raw
        headers = {k: v.encode() if isinstance(v, str) else (v or b"") for k, v in pairs}
        ce_kafka.from_kafka(
            ce_kafka.KafkaMessage(headers=headers, key=message.key(), value=message.value() or b""),
            event_format,
        )

    _consume_all(settings, topic, expected, decode)


@dataclass(frozen=True)
class Job:
    """One measured job: ``run(startup)`` runs it on the start-up topic or on the N topic."""

    name: str
    run: Callable[[bool], Leftovers]
    #: Records it handles at this N.
    n: int
    #: The topic whose bytes it reads (MB/s): mixed, binary, structured or keyed.
    data: str = "mixed"


def bench_jobs(
    spark: SparkSession,
    settings: Settings,
    sources: dict[str, str],
    startup_topic: str,
    *,
    n: int,
    sdk_n: int,
) -> list[Job]:
    """The jobs of one N in :data:`JOBS` order; runs work under ``settings.warehouse``."""
    # Warehouse of the last ingest mixed run (key: start-up run or not), kept for the
    # quality check that runs next and removes it.
    to_check: dict[bool, Path] = {}

    def topic(data: str, startup: bool) -> str:
        return startup_topic if startup else sources[data]

    def records(startup: bool, count: int = n) -> int:
        return STARTUP_RECORDS if startup else count

    def ceiling_a(startup: bool) -> Leftovers:
        librdkafka_read(settings, topic("mixed", startup), expected=records(startup))
        return Leftovers()

    def ceiling_b(startup: bool) -> Leftovers:
        spark_count(spark, settings, topic("mixed", startup))
        return Leftovers()

    def ingest_mixed(startup: bool) -> Leftovers:
        unchecked = to_check.pop(startup, None)  # left by a quality run that failed
        to_check[startup] = ingest(
            spark, settings, topic("mixed", startup), state=False, expected=records(startup)
        )
        return Leftovers(warehouses=[unchecked] if unchecked else [])

    def quality(startup: bool) -> Leftovers:
        warehouse = to_check.pop(startup)
        quality_check(spark, settings, warehouse)
        return Leftovers(warehouses=[warehouse])

    def ingest_of(data: str, *, state: bool) -> Callable[[bool], Leftovers]:
        def run(startup: bool) -> Leftovers:
            warehouse = ingest(
                spark, settings, topic(data, startup), state=state, expected=records(startup)
            )
            return Leftovers(warehouses=[warehouse])

        return run

    def ceiling_c(startup: bool) -> Leftovers:
        return Leftovers(topics=[spark_copy(spark, settings, topic("mixed", startup))])

    def republish_mixed(startup: bool) -> Leftovers:
        return republish(spark, settings, topic("mixed", startup), expected=records(startup))

    def sdk(startup: bool) -> Leftovers:
        sdk_decode(settings, topic("mixed", startup), expected=records(startup, sdk_n))
        return Leftovers()

    jobs = [
        Job(CEILING_A, ceiling_a, n),
        Job(CEILING_B, ceiling_b, n),
        Job(INGEST_MIXED, ingest_mixed, n),
        Job(QUALITY, quality, n),
        Job(INGEST_BINARY, ingest_of("binary", state=False), n, "binary"),
        Job(INGEST_STRUCTURED, ingest_of("structured", state=False), n, "structured"),
        Job(INGEST_STATE, ingest_of("keyed", state=True), n, "keyed"),
        Job(CEILING_C, ceiling_c, n),
        Job(REPUBLISH, republish_mixed, n),
        Job(SDK, sdk, sdk_n),
    ]
    assert [job.name for job in jobs] == list(JOBS)
    return jobs


# -- the run --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--sdk-sample",
        type=int,
        default=100_000,
        help="records the per-record SDK baseline decodes (it is slow)",
    )
    args = parser.parse_args(argv)
    if min(args.sizes) <= STARTUP_RECORDS or args.sdk_sample <= STARTUP_RECORDS:
        parser.error(f"--sizes and --sdk-sample must be above {STARTUP_RECORDS}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    from eventlake.spark import build_spark_session

    base = load_settings()
    settings = base.model_copy(update={"warehouse": base.warehouse.parent / "bench-warehouse"})
    broker = LocalBroker(settings)
    broker.start()
    spark = build_spark_session(settings, app_name="eventlake-bench")
    run_id = new_run_id()
    try:
        run_bench(
            spark,
            settings,
            broker.pid(),
            sizes=args.sizes,
            repeats=args.repeats,
            seed=args.seed,
            output=args.output,
            sdk_sample=args.sdk_sample,
            run_id=run_id,
        )
    finally:
        spark.stop()
        # Whatever a failed run or a late Kafka client left of the run's topics.
        delete_topics_named(settings, f"bench-{run_id.lower()}-")
    return 0


def new_run_id() -> str:
    """The run's time stamp: names its topics and report files."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def run_bench(
    spark: SparkSession,
    settings: Settings,
    broker_pid: int | None,
    *,
    sizes: list[int],
    repeats: int,
    seed: int,
    output: Path,
    sdk_sample: int,
    run_id: str | None = None,
) -> Path:
    """Generate the topics, measure every job, write the reports; returns the JSON path.

    Topics are named ``bench-<run id>-<N>-*``; the run id is a new time stamp unless given.
    """
    run_id = run_id or new_run_id()
    # Spark's pooled Kafka consumers ask for their topics' metadata again when they close,
    # after the topics were deleted; the Java consumer's default would have the broker
    # create them again (empty). librdkafka consumers default to false already.
    settings = settings.model_copy(
        update={"kafka_options": {**settings.kafka_options, "allow.auto.create.topics": "false"}}
    )
    print(
        f"bench: plan: N = {', '.join(f'{n:,}' for n in sizes)}; {repeats} repeat(s), jobs "
        f"interleaved, each after its start-up run on a {STARTUP_RECORDS}-record topic; "
        f"SDK baseline on min(N, {sdk_sample:,}) records; jobs:",
        flush=True,
    )
    for name, ceiling in JOBS.items():
        print(f"bench:   {name}" + (f" (vs {ceiling})" if ceiling else ""), flush=True)
    measurements: list[Measurement] = []
    report = Path()
    for n in sizes:
        measurements += measure_size(
            spark,
            settings,
            broker_pid,
            n=n,
            tag=f"bench-{run_id.lower()}-{n}",
            repeats=repeats,
            seed=seed,
            sdk_n=min(n, sdk_sample),
        )
        # After every N, so that a long run cut short still leaves its figures.
        report = write_reports(measurements, output, run_id)
    return report


def measure_size(
    spark: SparkSession,
    settings: Settings,
    broker_pid: int | None,
    *,
    n: int,
    tag: str,
    repeats: int,
    seed: int,
    sdk_n: int,
) -> list[Measurement]:
    """Every job at one N; its topics (named ``<tag>-*``) and folder are removed after."""
    size_settings = settings.model_copy(update={"warehouse": settings.warehouse / tag})
    sources = {data: f"{tag}-{data}" for data in (*MODES, "keyed")}
    startup_topic = f"{tag}-startup"
    try:
        topic_bytes = {
            mode: fill_topic(
                settings, sources[mode], bench_records(n, mode=mode, seed=seed), compact=False
            )
            for mode in MODES
        }
        topic_bytes["keyed"] = fill_topic(
            settings,
            sources["keyed"],
            bench_records(n, mode="mixed", seed=seed, tombstones=0.1),
            compact=True,
        )
        fill_topic(
            settings,
            startup_topic,
            bench_records(STARTUP_RECORDS, mode="mixed", seed=seed),
            compact=False,
        )
        print(
            f"bench: N={n:,} topics ready ({topic_bytes['mixed'] / 1e6:.0f} MB mixed)", flush=True
        )

        jobs = bench_jobs(spark, size_settings, sources, startup_topic, n=n, sdk_n=sdk_n)
        results = {
            job.name: Measurement(
                job=job.name,
                topic_n=n,
                n=job.n,
                ceiling=JOBS[job.name],
                bytes_total=topic_bytes[job.data] * job.n // n,
            )
            for job in jobs
        }
        for repeat in range(repeats):
            for job in jobs:
                result = results[job.name]
                startup, _, leftovers = timed(partial(job.run, True), broker_pid)
                clean_up(settings, leftovers)
                elapsed, peak, leftovers = timed(partial(job.run, False), broker_pid)
                clean_up(settings, leftovers)
                result.startup_seconds.append(startup)
                result.seconds.append(elapsed)
                result.peak_driver_rss_mb = max(result.peak_driver_rss_mb, peak.driver / 2**20)
                result.peak_broker_rss_mb = max(result.peak_broker_rss_mb, peak.broker / 2**20)
                print(
                    f"bench: N={n:,} repeat {repeat + 1}/{repeats} {job.name}: {elapsed:.1f}s "
                    f"(start-up {startup:.1f}s)",
                    flush=True,
                )
        return list(results.values())
    finally:
        remove_size_data(settings, tag, size_settings.warehouse)


def remove_size_data(settings: Settings, tag: str, folder: Path) -> None:
    """Delete the topics named ``<tag>-*`` and the N's warehouse folder."""
    shutil.rmtree(folder, ignore_errors=True)
    delete_topics_named(settings, f"{tag}-")


def delete_topics_named(settings: Settings, prefix: str) -> None:
    """Delete every topic whose name starts with ``prefix``; failures are only reported."""
    try:
        topics = make_admin(settings).list_topics(timeout=30).topics
        delete_topics(settings, [t for t in topics if t.startswith(prefix)])
    except Exception as error:  # must not hide the error that ended the run
        warn(f"could not delete the topics {prefix}*: {error}")


# -- reports --------------------------------------------------------------------------------


def _status(value: float | None, passed: bool) -> str:
    if value is None:
        return "not measured"
    return "PASS" if passed else "FAIL"


def evaluate_goals(measurements: list[Measurement]) -> list[dict[str, Any]]:
    """The issue's goals with the measured value and PASS/FAIL (or "not measured")."""
    by_key = {(m.job, m.topic_n): m for m in measurements}
    goals: list[dict[str, Any]] = []
    for n in dict.fromkeys(m.topic_n for m in measurements):
        for job, other, minimum in RATIO_GOALS:
            top, bottom = by_key.get((job, n)), by_key.get((other, n))
            value = top.events_per_second() / bottom.events_per_second() if top and bottom else None
            goals.append(
                {
                    "goal": f"{job} / {other}, events/s (goal >= {minimum:g})",
                    "job": job,
                    "n": n,
                    "value": value,
                    "target": f">= {minimum:g}",
                    "status": _status(value, value is not None and value >= minimum),
                }
            )
    large = sorted({m.topic_n for m in measurements if m.topic_n >= FLAT_MIN_N})
    for job in dict.fromkeys(m.job for m in measurements):
        sizes = [n for n in large if (job, n) in by_key]
        flat: float | None = None
        if len(sizes) >= 2:
            smallest, largest = by_key[(job, sizes[0])], by_key[(job, sizes[-1])]
            flat = largest.per_event_microseconds() / smallest.per_event_microseconds()
        goals.append(
            {
                "goal": f"per-event cost of {job}, largest N / smallest N >= {FLAT_MIN_N:,} "
                f"(goal within {FLAT_WITHIN:.0%})",
                "job": job,
                "n": None,
                "n_smallest": sizes[0] if len(sizes) >= 2 else None,
                "n_largest": sizes[-1] if len(sizes) >= 2 else None,
                "value": flat,
                "target": f"{1 - FLAT_WITHIN:.2f}..{1 + FLAT_WITHIN:.2f}",
                "status": _status(flat, flat is not None and abs(flat - 1) <= FLAT_WITHIN),
            }
        )
    return goals


def _number(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def markdown_report(
    rows: list[dict[str, Any]], goals: list[dict[str, Any]], title: str
) -> list[str]:
    """The results table, how to read it, and the goals."""
    lines = [
        f"# {title}",
        "",
        "| job | N | median s | start-up s | events/s | steady events/s | MB/s | peak driver RSS MB | peak broker RSS MB | vs | ratio to vs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        n = f"{r['topic_n']:,}" + (f" ({r['n']:,} sampled)" if r["n"] != r["topic_n"] else "")
        lines.append(
            f"| {r['job']} | {n} | {r['median_seconds']:.1f} | {_number(r['startup_seconds'], '.1f')} | "
            f"{r['events_per_second']:,.0f} | {_number(r['steady_events_per_second'], ',.0f')} | "
            f"{r['mb_per_second']:.1f} | {r['peak_driver_rss_mb']:.0f} | {r['peak_broker_rss_mb']:.0f} | "
            f"{r['ceiling'] or ''} | {_number(r['ratio_to_ceiling'], '.2f')} |"
        )
    lines += [
        "",
        "events/s = records / median (start-up included). Start-up = the same job on a "
        f"{STARTUP_RECORDS}-record topic (quality check: the check of that topic's ingested "
        f"table). Steady events/s = (records - {STARTUP_RECORDS}) / (median - start-up), n/a "
        "when the start-up took at least the median. Ratio to vs = events/s / events/s of the "
        "vs job (python SDK row: SDK / ingest mixed, above 1 means the SDK is faster).",
        "",
        "## Goals",
        "",
        "| goal | N | measured | result |",
        "|---|---:|---:|---|",
    ]
    flat = [g for g in goals if g["n"] is None]
    for g in goals:
        if g["n"] is not None:
            lines.append(
                f"| {g['goal']} | {g['n']:,} | {_number(g['value'], '.2f')} | {g['status']} |"
            )
    if all(g["value"] is None for g in flat):
        lines.append(
            f"| per-event cost of each job flat within {FLAT_WITHIN:.0%} between the smallest "
            f"and the largest N >= {FLAT_MIN_N:,} | | n/a | not measured (needs two N >= "
            f"{FLAT_MIN_N:,}) |"
        )
    else:
        for g in flat:
            span = (
                f"{g['n_smallest']:,} -> {g['n_largest']:,}" if g["n_smallest"] is not None else ""
            )
            lines.append(f"| {g['goal']} | {span} | {_number(g['value'], '.2f')} | {g['status']} |")
    return lines


def write_reports(measurements: list[Measurement], output: Path, run_id: str) -> Path:
    """JSON, Markdown (printed too) and a PNG plot under ``output``; returns the JSON path."""
    output.mkdir(parents=True, exist_ok=True)
    by_key = {(m.job, m.topic_n): m for m in measurements}
    rows = []
    for m in measurements:
        ceiling = by_key.get((m.ceiling, m.topic_n)) if m.ceiling else None
        ratio = m.events_per_second() / ceiling.events_per_second() if ceiling else None
        rows.append(
            {
                **asdict(m),
                "median_seconds": m.median,
                "startup_seconds": m.startup,
                "events_per_second": m.events_per_second(),
                "steady_events_per_second": m.steady_events_per_second(),
                "mb_per_second": m.mb_per_second(),
                "ratio_to_ceiling": ratio,
                "per_event_microseconds": m.per_event_microseconds(),
            }
        )
    goals = evaluate_goals(measurements)
    machine = {
        "cores": psutil.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }
    json_path = output / f"bench-{run_id}.json"
    json_path.write_text(
        json.dumps(
            {"run_id": run_id, "machine": machine, "results": rows, "goals": goals}, indent=2
        )
    )
    title = f"eventlake benchmark {run_id} ({machine['cores']} cores, {machine['memory_gb']} GiB)"
    lines = markdown_report(rows, goals, title)
    (output / f"bench-{run_id}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib not installed; no plot", file=sys.stderr)
        return json_path
    figure, axis = plt.subplots(figsize=(9, 5))
    for job in dict.fromkeys(m.job for m in measurements):
        points = sorted((m.topic_n, m.events_per_second()) for m in measurements if m.job == job)
        axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=job)
    axis.set_xscale("log")
    axis.set_xlabel("events in topic (N)")
    axis.set_ylabel("events/s (median)")
    axis.set_title(f"eventlake benchmark {run_id}")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(output / f"bench-{run_id}.png", dpi=110)
    plt.close(figure)
    return json_path


if __name__ == "__main__":
    sys.exit(main())
