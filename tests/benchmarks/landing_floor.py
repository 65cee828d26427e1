"""What ingest's data path costs above ceiling D's, in one warm process: the topic held
in Spark's cache (so that no pass pays Kafka), then each pass timed into Spark's ``noop``
sink or a fresh Delta table, rounds alternating, medians.

    python tests/benchmarks/landing_floor.py                 # 1M mixed events, 3 rounds
    python tests/benchmarks/landing_floor.py --records 300000 --rounds 5

Passes (``--help`` lists them): the cache scanned; decoded (the binding, as ingest runs
it) with and without ``data_json``; and written to Delta: the records as they are
(ceiling D's write), the events (ingest's write, without the ledger's commit) and the
events without ``data_json``. The difference between the events' and the raw records'
Delta passes is what ingest pays per record above ceiling D once both have read the
records: the steady-state part of issue 36's "cost per extra event" that no change to
ingest's bookkeeping can remove while it decodes every record and lands ``data_json``.
Each pass reports wall seconds and the JVM's CPU seconds (every thread), per record.
The topic (mixed ~1 KB events, the generator of ``bench.py``) is made on the local
broker and deleted at the end. The table also goes to ``results/landing-floor-<time>.md`` (``--output``: another folder).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

# Runs as a script from the checkout: its own packages first, as bench.py does.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from eventlake.binding.decode import decode_records, to_events
from eventlake.core.text_table import text_table
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.kafka.topics import delete_topics
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from eventlake.spark.session import build_spark_session
from tests.benchmarks.bench import RESULTS, bench_records, fill_topic, new_run_id
from tests.benchmarks.bench_job import jvm_cpu_seconds

#: The passes, in the order each round runs them.
PASSES: tuple[str, ...] = (
    "scan",
    "decode",
    "decode, no data_json",
    "raw records -> Delta",
    "events -> Delta",
    "events, no data_json -> Delta",
)


def _passes(cached: DataFrame, scratch: Path) -> dict[str, Callable[[], None]]:
    """Each pass as a call that runs it once (Delta passes into a fresh table)."""

    def noop(frame: DataFrame) -> Callable[[], None]:
        return lambda: frame.write.format("noop").mode("overwrite").save()

    def delta(frame: DataFrame) -> Callable[[], None]:
        def write() -> None:
            path = scratch / uuid.uuid4().hex
            frame.write.format("delta").save(str(path))
            shutil.rmtree(path, ignore_errors=True)

        return write

    return dict(
        zip(
            PASSES,
            (
                noop(cached.select("value", "headers")),
                noop(decode_records(cached)),
                noop(decode_records(cached, data_json=False)),
                delta(cached),
                delta(to_events(decode_records(cached))),
                delta(to_events(decode_records(cached, data_json=False))),
            ),
            strict=True,
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds after a warm-up one")
    parser.add_argument("--output", type=Path, default=RESULTS, help="folder of the report")
    args = parser.parse_args(argv)
    settings = load_local_settings()
    LocalBroker(settings).start()
    topic = f"landing-floor-{int(time.time())}"
    print(f"landing_floor: producing {args.records:,} mixed events to {topic}", flush=True)
    fill_topic(settings, topic, bench_records(args.records, mode="mixed", seed=42), compact=False)
    spark = build_spark_session(settings, app_name="landing-floor")
    try:
        cached = (
            spark.read.format("kafka")
            .options(**spark_kafka_options(settings))
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("includeHeaders", "true")
            .load()
            .persist(StorageLevel.MEMORY_ONLY)
        )
        records = cached.count()
        wall: dict[str, list[float]] = {name: [] for name in PASSES}
        cpu: dict[str, list[float]] = {name: [] for name in PASSES}
        with tempfile.TemporaryDirectory(dir=settings.warehouse.parent) as scratch:
            passes = _passes(cached, Path(scratch))
            for round_ in range(args.rounds + 1):
                for name, run in passes.items():
                    started, cpu_before = time.perf_counter(), jvm_cpu_seconds()
                    run()
                    if round_:  # the first round warms the JIT up
                        wall[name].append(time.perf_counter() - started)
                        cpu[name].append(jvm_cpu_seconds() - cpu_before)
                print(f"landing_floor: round {round_} of {args.rounds} done", flush=True)
        cached.unpersist()
    finally:
        spark.stop()
        delete_topics(settings, [topic])
    per_record = 1e6 / max(records, 1)
    rows = [
        [
            name,
            f"{statistics.median(wall[name]):.2f}",
            " / ".join(f"{s:.2f}" for s in wall[name]),
            f"{statistics.median(wall[name]) * per_record:.2f}",
            f"{statistics.median(cpu[name]) * per_record:.2f}",
        ]
        for name in PASSES
    ]
    header = ["pass", "wall s", "rounds", "wall µs/record", "JVM CPU µs/record"]
    above = statistics.median(wall["events -> Delta"]) - statistics.median(
        wall["raw records -> Delta"]
    )
    report = [
        f"{records:,} records, medians of {args.rounds} rounds "
        f"(`python tests/benchmarks/landing_floor.py --records {args.records} "
        f"--rounds {args.rounds}`)",
        "",
        *text_table(header, rows),
        "",
        f"ingest's data path above ceiling D's write: {above:.2f} s "
        f"({above * per_record:.2f} µs per record, wall)",
    ]
    print("\n" + "\n".join(report))
    args.output.mkdir(parents=True, exist_ok=True)
    output = args.output / f"landing-floor-{new_run_id()}.md"
    output.write_text("```\n" + "\n".join(report) + "\n```\n")
    print(f"\nlanding_floor: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
