"""A tiny run of the benchmark harness keeps it working; no timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.broker import LocalBroker
from eventlake.settings import Settings
from tests.benchmarks.bench import run_bench


def test_bench_harness_writes_json_markdown_and_plot(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, tmp_path: Path
) -> None:
    report = run_bench(
        spark,
        warehouse_settings,
        broker.pid(),
        sizes=[2000],
        repeats=1,
        seed=1,
        output=tmp_path,
        sdk_sample=2000,
    )
    results = json.loads(report.read_text())["results"]
    jobs = {r["job"] for r in results}
    assert {"ceiling A: librdkafka read", "ceiling B: Spark Kafka count", "ingest mixed"} <= jobs
    assert all(r["n"] > 0 and r["median_seconds"] > 0 for r in results)
    assert report.with_suffix(".md").read_text().count("\n") >= len(results) + 3
    assert report.with_suffix(".png").stat().st_size > 10_000
