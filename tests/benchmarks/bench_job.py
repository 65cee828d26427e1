"""One job of the benchmark in a process of its own, as a user would start it.

``tests/benchmarks/bench.py`` starts this script once per measured run and times the
process from start to exit; the script times the work alone (from the job's first call
after the SparkSession is up to its end) and prints it as the last line of its stdout:
``{"work_seconds": ..., "records": ...}``. Settings come from ``EVENTLAKE_*`` variables,
like the eventlake CLI's; Spark jobs build their session with
:func:`eventlake.spark.session.build_spark_session`, as the CLI does. Imports are those of the job
only.

    python tests/benchmarks/bench_job.py spark-count --topic orders
    python tests/benchmarks/bench_job.py ingest --topic orders [--state]

Jobs: ``librdkafka-read`` and ``sdk-decode`` (``--expected`` records), ``spark-count``,
``spark-land`` (the records as they are into a Delta table of the warehouse), ``ingest``,
``quality`` (the warehouse's events table) and ``quality-floor`` (one pass over the
columns its checks read), ``spark-copy``, ``spark-copy-batched`` and ``republish``
(``--target`` topic), ``decode`` (the binding alone over a cached frame, CPU per record). The reference job users would write instead of ingest is
``plain_pyspark_ingest.py`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eventlake.cli.common import import_in_background, leave_without_collecting
from eventlake.core.driver_work import DriverWork, ingest_driver_work
from eventlake.core.settings import Settings, load_settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _spark(
    settings: Settings, app_name: str, *, work: DriverWork = DriverWork.GENERAL
) -> SparkSession:
    from eventlake.spark.session import build_spark_session

    return build_spark_session(settings, app_name=app_name, work=work)


def _consume_all(
    settings: Settings,
    topic: str,
    expected: int,
    on_message: Callable[[Any], None],
    *,
    extra: dict[str, Any] | None = None,
    idle_timeout: float = 120.0,
) -> int:
    """Read ``expected`` records of ``topic`` from the start of every partition.

    Partitions are assigned, not subscribed to: no group join (the broker delays the
    first join of a group by group.initial.rebalance.delay.ms) is timed with the read.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            **settings.kafka_client_options(),
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            **(extra or {}),
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(partitions)])
    seen = 0
    last_record = time.monotonic()
    try:
        while seen < expected:
            # A short wait: consume() returns at 10,000 records or when the wait is over.
            messages = consumer.consume(10000, timeout=0.1)
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
    return seen


def librdkafka_read(settings: Settings, args: argparse.Namespace) -> int:
    """Ceiling A: a confluent-kafka consumer loop that discards the records."""
    return _consume_all(
        settings,
        args.topic,
        args.expected,
        lambda _message: None,
        extra={"fetch.max.bytes": 52428800},
    )


def sdk_decode(settings: Settings, args: argparse.Namespace) -> int:
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

    return _consume_all(settings, args.topic, args.expected, decode)


def spark_count(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    """Ceiling B: Spark's Kafka source reads the topic and counts."""
    return int(_whole_topic(spark, settings, args.topic, headers=False).count())


def _whole_topic(
    spark: SparkSession, settings: Settings, topic: str, *, headers: bool
) -> DataFrame:
    """Spark's Kafka source over ``topic`` from earliest, with eventlake's client options."""
    from eventlake.kafka.connector_options import spark_kafka_options

    return (
        spark.read.format("kafka")
        .options(**spark_kafka_options(settings))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", str(headers).lower())
        .load()
    )


def spark_copy(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> None:
    """Ceiling C: key, value and headers copied to a fresh topic of 2 partitions, with
    the Java producer's defaults (what a plain Spark job gets)."""
    from eventlake.kafka.connector_options import spark_kafka_options

    _copy_topic(spark, settings, args, spark_kafka_options(settings))


def spark_copy_batched(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> None:
    """Ceiling C with republish's producer batching (``eventlake.kafka.connector_options.producer_options``):
    the floor of any copy through Spark's Kafka sink as eventlake configures it."""
    from eventlake.kafka.connector_options import producer_options

    _copy_topic(spark, settings, args, producer_options(settings))


def _copy_topic(
    spark: SparkSession, settings: Settings, args: argparse.Namespace, options: dict[str, str]
) -> None:
    from eventlake.kafka.topics import create_topic

    create_topic(settings, args.target, partitions=2)
    (
        _whole_topic(spark, settings, args.topic, headers=True)
        .select("key", "value", "headers")
        .write.format("kafka")
        .options(**options)
        .option("topic", args.target)
        .save()
    )


def spark_land(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> None:
    """Ceiling D: the Kafka records as they are (every column of Spark's Kafka source,
    headers included) landed with one Delta append in ``<warehouse>/raw_records``: no
    parsing, no checks. Any landing that keeps every record pays at least this. The
    harness counts the table's rows (a count here would be one more Spark job timed)."""
    records = _whole_topic(spark, settings, args.topic, headers=True)
    records.write.format("delta").mode("append").save(str(settings.warehouse / "raw_records"))


def ingest(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    """eventlake ingest into the warehouse of the settings; returns the events written
    (with ``--state``: the records read, its topic's tombstones included)."""
    from eventlake.ingest import IngestRequest, run_ingest

    summary = run_ingest(spark, settings, IngestRequest(topics=(args.topic,), state=args.state))
    if args.state:
        return summary.records_read
    if summary.rejects:
        print(f"bench_job: {summary.line()}", file=sys.stderr)
    return summary.events


def jvm_cpu_seconds() -> float:
    """CPU seconds (user + system, every thread: tasks, JIT, GC) of this process's JVMs."""
    import psutil

    jvms = [p for p in psutil.Process().children(recursive=True) if "java" in p.name()]
    return sum(sum(p.cpu_times()[:2]) for p in jvms)


def decode(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """Decode alone: the topic held in Spark's cache, then the binding applied to it into
    the noop sink; CPU per record of the JVM, less a pass that only scans the cache.

    Each pass runs ``DECODE_PASSES`` times after one warm-up pass (JIT); medians.
    """
    import statistics

    from pyspark import StorageLevel

    from eventlake.binding.decode import decode_records

    cached = _whole_topic(spark, settings, args.topic, headers=True).persist(
        StorageLevel.MEMORY_ONLY
    )
    records = cached.count()

    def cpu_of(frame: Any) -> float:
        before = jvm_cpu_seconds()
        frame.write.format("noop").mode("overwrite").save()
        return jvm_cpu_seconds() - before

    scan = cached.select("value", "headers")
    decoded = decode_records(cached)
    cpu_of(scan)
    cpu_of(decoded)
    scans = [cpu_of(scan) for _ in range(DECODE_PASSES)]
    decodes = [cpu_of(decoded) for _ in range(DECODE_PASSES)]
    cached.unpersist()
    per_record = 1e6 / max(records, 1)
    scan_us = statistics.median(scans) * per_record
    decode_us = statistics.median(decodes) * per_record
    return {
        "records": records,
        "decode_cpu_us_per_record": round(decode_us - scan_us, 2),
        "decode_pass_cpu_us_per_record": round(decode_us, 2),
        "scan_pass_cpu_us_per_record": round(scan_us, 2),
    }


#: Timed passes of the decode job (after one warm-up pass of each).
DECODE_PASSES = 3


def quality(spark: SparkSession, settings: Settings, _args: argparse.Namespace) -> None:
    """Every data-quality check over the whole events table of the warehouse."""
    from eventlake.quality import CheckRequest, QualityConfig, TopicRules, run_checks

    # Every check applies to the bench events.
    rules = QualityConfig(
        defaults=TopicRules(
            keyed=True, time_required=True, type_pattern=r"^com[.]example[.]order[.]"
        )
    )
    report = run_checks(spark, settings, CheckRequest(full=True), config=rules)
    failed = sorted({r.check.value for r in report.results if not r.success})
    if failed:
        print(f"bench_job: quality checks failed: {', '.join(failed)}", file=sys.stderr)


def quality_floor(spark: SparkSession, settings: Settings, _args: argparse.Namespace) -> int:
    """The quality check's floor: one pass over the columns the checks read (the events
    table's :data:`eventlake.quality.suite.CHECKED_COLUMNS`) with one aggregate, a count
    of non-null values per column. Any check of every row reads at least this."""
    from pyspark.sql import functions as F

    from eventlake.ledger.marks import landed_version
    from eventlake.quality.slices import table_as_of
    from eventlake.quality.suite import CHECKED_COLUMNS
    from eventlake.warehouse.names import EVENTS

    # Read as the quality check reads a whole table: its files, listed by delta-rs.
    path = settings.table_path(EVENTS)
    events = table_as_of(spark, path, landed_version(path) or 0)
    row = events.select(
        F.count(F.lit(1)).alias("_rows"), *[F.count(c).alias(c) for c in CHECKED_COLUMNS]
    ).first()
    return int(row["_rows"]) if row is not None else 0


def republish(spark: SparkSession, settings: Settings, args: argparse.Namespace) -> int:
    """Republish re-keyed by partitionkey into ``--target``; returns the records written."""
    from eventlake.binding.decode import PARTITIONKEY
    from eventlake.republish import RepublishRequest, run_republish

    summary = run_republish(
        spark,
        settings,
        RepublishRequest(source=args.topic, target=args.target, key_mapper=PARTITIONKEY),
    )
    return summary.republished


PYTHON_JOBS: dict[str, Callable[[Settings, argparse.Namespace], int | None]] = {
    "librdkafka-read": librdkafka_read,
    "sdk-decode": sdk_decode,
}
SPARK_JOBS: dict[
    str, Callable[[SparkSession, Settings, argparse.Namespace], int | dict[str, Any] | None]
] = {
    "spark-count": spark_count,
    "spark-copy": spark_copy,
    "spark-copy-batched": spark_copy_batched,
    "spark-land": spark_land,
    "ingest": ingest,
    "quality": quality,
    "quality-floor": quality_floor,
    "republish": republish,
    "decode": decode,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("job", choices=[*PYTHON_JOBS, *SPARK_JOBS])
    parser.add_argument("--topic")
    parser.add_argument("--target", help="topic written by spark-copy and republish")
    parser.add_argument("--expected", type=int, default=0, help="records the Python jobs read")
    parser.add_argument("--state", action="store_true", help="ingest keeps the state table")
    args = parser.parse_args(argv)

    settings = load_settings()
    outcome: int | dict[str, Any] | None
    if args.job in PYTHON_JOBS:
        started = time.perf_counter()
        outcome = PYTHON_JOBS[args.job](settings, args)
    else:
        if args.job == "quality":
            # As `eventlake check` does: GX's import overlaps the session's start, after
            # pyspark's own import (both threads importing it at once can see it half-made).
            import eventlake.spark.session  # noqa: F401

            import_in_background("eventlake.quality.run")
        # As `eventlake ingest` and `eventlake check` size their drivers (the bench's
        # ingest never dedups).
        work = {
            "ingest": ingest_driver_work(state=args.state, dedup=False),
            "quality": DriverWork.CHECKING,
        }.get(args.job, DriverWork.GENERAL)
        spark = _spark(settings, f"bench-{args.job}", work=work)
        started = time.perf_counter()
        outcome = SPARK_JOBS[args.job](spark, settings, args)
    work_seconds = time.perf_counter() - started
    # A job returns the records it handled, or those with more figures of its own.
    result = outcome if isinstance(outcome, dict) else {"records": outcome}
    print(json.dumps({"work_seconds": work_seconds, **result}), flush=True)
    # As the eventlake command ends (eventlake.cli.command).
    leave_without_collecting()


if __name__ == "__main__":
    main()
