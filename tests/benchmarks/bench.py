"""eventlake's benchmark harness: each job against the fastest read of the same topic.

    make bench                       # N = 100,000 and 1,000,000
    python tests/benchmarks/bench.py --sizes 2000 --repeats 1   # smoke run

For each N it generates topics of ~1 KB CloudEvents (fixed seed; mixed, binary-only and
structured-only, plus a compacted keyed variant with ~10% tombstones) on the local
broker, then measures, interleaved and ``--repeats`` times each, median reported:

* ceiling A: a confluent-kafka consumer loop (batched consume) that discards records;
* ceiling B: Spark's Kafka source reading the topic and counting;
* ingest (decode, validate, Delta append, exactly-once) on the mixed, binary and
  structured topics; ingest with the state table (MERGE with tombstones);
* republish with a partitionkey mapper, against ceiling C: a plain Spark topic copy;
* a per-record Python baseline decoding with the official CloudEvents SDK.

Each result has events/s, MB/s, start-up (the same job on a 10-record topic), peak RSS
of the driver (Python + JVM) and of the broker, and the ratio to its ceiling. Results
go to ``results/bench-<time>.json`` and ``.md`` (and a PNG plot of events/s vs N).
Nothing here is part of ``make test`` except a smoke run of tiny size.
"""

from __future__ import annotations

import argparse
import json
import random
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
from typing import Any

import psutil

from eventlake.broker import LocalBroker
from eventlake.kafka import Record, create_topic, make_producer
from eventlake.settings import Settings, load_settings

RESULTS = Path(__file__).resolve().parents[2] / "results"
TYPES = ("com.example.order.created", "com.example.order.paid", "com.example.order.shipped")
FILLER_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


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
            body = {"specversion": "1.0", "datacontenttype": "application/json", **attributes}
            body["data"] = data
            yield (
                key,
                json.dumps(body).encode(),
                [("content-type", b"application/cloudevents+json")],
            )


def fill_topic(settings: Settings, topic: str, records: Iterator[Record], *, compact: bool) -> int:
    config = {"cleanup.policy": "compact"} if compact else {}
    create_topic(settings, topic, partitions=2, config=config)
    producer = make_producer(
        settings,
        **{"linger.ms": 50, "batch.num.messages": 10000, "queue.buffering.max.messages": 500000},
    )
    size = 0
    for count, (key, value, headers) in enumerate(records, 1):
        while True:
            try:
                producer.produce(topic, key=key, value=value, headers=headers)
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
                rss = me.memory_info().rss + sum(c.memory_info().rss for c in me.children(True))
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
    job: str
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
    def startup(self) -> float:
        return statistics.median(self.startup_seconds) if self.startup_seconds else 0.0

    def events_per_second(self) -> float:
        return self.n / self.median

    def steady_events_per_second(self) -> float:
        return self.n / max(self.median - self.startup, 1e-9)

    def mb_per_second(self) -> float:
        return self.bytes_total / 1e6 / self.median


def timed(run: Callable[[], Any], broker_pid: int | None) -> tuple[float, PeakRss]:
    with PeakRss(broker_pid) as peak:
        started = time.perf_counter()
        run()
        elapsed = time.perf_counter() - started
    return elapsed, peak


# -- the jobs -------------------------------------------------------------------------------


def librdkafka_read(settings: Settings, topic: str, *, expected: int) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    while seen < expected:
        for message in consumer.consume(10000, timeout=1.0):
            if message.error() is None:
                seen += 1
    consumer.close()


def spark_count(spark: Any, settings: Settings, topic: str) -> None:
    from eventlake.kafka import spark_kafka_options

    (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .count()
    )


def spark_copy(spark: Any, settings: Settings, topic: str) -> None:
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


def ingest(spark: Any, settings: Settings, topic: str, *, state: bool) -> None:
    from eventlake.ingest import IngestRequest, run_ingest

    run_settings = settings.model_copy(update={"warehouse": settings.warehouse / uuid.uuid4().hex})
    run_ingest(spark, run_settings, IngestRequest(topics=(topic,), state=state))


def sdk_decode(settings: Settings, topic: str, *, expected: int) -> None:
    """Per-record Python: consume, then decode each record with the CloudEvents SDK."""
    from cloudevents.core.bindings import kafka as ce_kafka
    from cloudevents.core.formats.json import JSONFormat
    from confluent_kafka import Consumer

    event_format = JSONFormat()
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    while seen < expected:
        for message in consumer.consume(10000, timeout=1.0):
            if message.error() is not None:
                continue
            seen += 1
            ce_kafka.from_kafka(
                ce_kafka.KafkaMessage(
                    headers=dict(message.headers() or []),
                    key=message.key(),
                    value=message.value() or b"",
                ),
                event_format,
            )
    consumer.close()


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

    from eventlake.spark import build_spark_session

    base = load_settings()
    settings = base.model_copy(update={"warehouse": base.warehouse.parent / "bench-warehouse"})
    broker = LocalBroker(settings)
    broker.start()
    spark = build_spark_session(settings, app_name="eventlake-bench")
    run_bench(
        spark,
        settings,
        broker.pid(),
        sizes=args.sizes,
        repeats=args.repeats,
        seed=args.seed,
        output=args.output,
        sdk_sample=args.sdk_sample,
    )
    return 0


def run_bench(
    spark: Any,
    settings: Settings,
    broker_pid: int | None,
    *,
    sizes: list[int],
    repeats: int,
    seed: int,
    output: Path,
    sdk_sample: int,
) -> Path:
    """Generate the topics, measure every job, write the reports; returns the JSON path."""
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    measurements: list[Measurement] = []

    for n in sizes:
        tag = f"bench-{run_id.lower()}-{n}"
        topics = {mode: f"{tag}-{mode}" for mode in ("mixed", "binary", "structured")}
        sizes = {
            mode: fill_topic(settings, topic, bench_records(n, mode=mode, seed=seed), compact=False)
            for mode, topic in topics.items()
        }
        keyed = f"{tag}-keyed"
        sizes["keyed"] = fill_topic(
            settings, keyed, bench_records(n, mode="mixed", seed=seed, tombstones=0.1), compact=True
        )
        tiny = f"{tag}-tiny"
        fill_topic(settings, tiny, bench_records(10, mode="mixed", seed=seed), compact=False)
        sdk_n = min(n, sdk_sample)
        sdk_topic = topics["mixed"]
        print(f"bench: N={n} topics ready ({sizes['mixed'] / 1e6:.0f} MB mixed)", flush=True)

        jobs: dict[str, tuple[Callable[[str], None], str, int, str | None]] = {
            "ceiling A: librdkafka read": (
                partial(librdkafka_read, settings, expected=n),
                topics["mixed"],
                n,
                None,
            ),
            "ceiling B: Spark Kafka count": (
                lambda t: spark_count(spark, settings, t),
                topics["mixed"],
                n,
                None,
            ),
            "ingest mixed": (
                lambda t: ingest(spark, settings, t, state=False),
                topics["mixed"],
                n,
                "ceiling B: Spark Kafka count",
            ),
            "ingest binary": (
                lambda t: ingest(spark, settings, t, state=False),
                topics["binary"],
                n,
                "ceiling B: Spark Kafka count",
            ),
            "ingest structured": (
                lambda t: ingest(spark, settings, t, state=False),
                topics["structured"],
                n,
                "ceiling B: Spark Kafka count",
            ),
            "ingest + state (keyed, 10% tombstones)": (
                lambda t: ingest(spark, settings, t, state=True),
                keyed,
                n,
                "ingest mixed",
            ),
            "ceiling C: Spark topic copy": (
                lambda t: spark_copy(spark, settings, t),
                topics["mixed"],
                n,
                None,
            ),
            "python SDK per-record decode": (
                partial(sdk_decode, settings, expected=sdk_n),
                sdk_topic,
                sdk_n,
                "ingest mixed",
            ),
        }
        results = {
            name: Measurement(job=name, n=count, ceiling=ceiling)
            for name, (_, _, count, ceiling) in jobs.items()
        }
        for name, measurement in results.items():
            mode = "keyed" if jobs[name][1] == keyed else "mixed"
            for m, t in topics.items():
                if jobs[name][1] == t:
                    mode = m
            measurement.bytes_total = sizes[mode] * measurement.n // n
        for repeat in range(repeats):
            for name, (run, topic, _, _) in jobs.items():
                spark_job = not name.startswith(("ceiling A", "python SDK"))
                if spark_job:
                    startup, _ = timed(partial(run, tiny), broker_pid)
                    results[name].startup_seconds.append(startup)
                elapsed, peak = timed(partial(run, topic), broker_pid)
                results[name].seconds.append(elapsed)
                results[name].peak_driver_rss_mb = max(
                    results[name].peak_driver_rss_mb, peak.driver / 2**20
                )
                results[name].peak_broker_rss_mb = max(
                    results[name].peak_broker_rss_mb, peak.broker / 2**20
                )
                print(f"bench: N={n} repeat {repeat + 1} {name}: {elapsed:.1f}s", flush=True)
        measurements.extend(results.values())

    return write_reports(measurements, output, run_id)


def write_reports(measurements: list[Measurement], output: Path, run_id: str) -> Path:
    output.mkdir(parents=True, exist_ok=True)
    by_key = {(m.job, m.n): m for m in measurements}
    rows = []
    for m in measurements:
        ceiling = by_key.get((m.ceiling, m.n)) if m.ceiling else None
        ratio = m.events_per_second() / ceiling.events_per_second() if ceiling else None
        rows.append(
            {
                **{k: v for k, v in asdict(m).items()},
                "median_seconds": m.median,
                "startup_seconds": m.startup,
                "events_per_second": m.events_per_second(),
                "steady_events_per_second": m.steady_events_per_second(),
                "mb_per_second": m.mb_per_second(),
                "ratio_to_ceiling": ratio,
                "per_event_microseconds": m.median / m.n * 1e6,
            }
        )
    machine = {
        "cores": psutil.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }
    json_path = output / f"bench-{run_id}.json"
    json_path.write_text(json.dumps({"machine": machine, "results": rows}, indent=2))
    lines = [
        f"# eventlake benchmark {run_id} ({machine['cores']} cores, {machine['memory_gb']} GiB)",
        "",
        "| job | N | median s | start-up s | events/s | steady events/s | MB/s | peak driver RSS MB | peak broker RSS MB | vs | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        ratio = "" if r["ratio_to_ceiling"] is None else f"{r['ratio_to_ceiling']:.2f}"
        lines.append(
            f"| {r['job']} | {r['n']:,} | {r['median_seconds']:.1f} | {r['startup_seconds']:.1f} | "
            f"{r['events_per_second']:,.0f} | {r['steady_events_per_second']:,.0f} | {r['mb_per_second']:.1f} | "
            f"{r['peak_driver_rss_mb']:.0f} | {r['peak_broker_rss_mb']:.0f} | {r['ceiling'] or ''} | {ratio} |"
        )
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
        points = sorted((m.n, m.events_per_second()) for m in measurements if m.job == job)
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
