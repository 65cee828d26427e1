"""A tiny run of the benchmark harness keeps it working; no timing is asserted."""

from __future__ import annotations

import json
import time
from pathlib import Path

from pyspark.sql import SparkSession

from eventlake.broker import LocalBroker
from eventlake.kafka import make_admin
from eventlake.settings import Settings
from tests.benchmarks.bench import JOBS, QUALITY, RATIO_GOALS, REPUBLISH, run_bench


def _bench_topics(settings: Settings, prefix: str) -> list[str]:
    """Topics of the run still listed, waiting up to 30 s for deletions to show."""
    deadline = time.monotonic() + 30
    while True:
        topics = make_admin(settings).list_topics(timeout=10).topics
        left = [t for t in topics if t.startswith(prefix)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


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
    document = json.loads(report.read_text())
    results = document["results"]
    # One row per job, the quality check and republish included, in the order they ran.
    assert [r["job"] for r in results] == list(JOBS)
    assert {QUALITY, REPUBLISH} <= {r["job"] for r in results}
    assert all(r["n"] == 2000 and r["topic_n"] == 2000 for r in results)
    assert all(r["median_seconds"] > 0 and r["startup_seconds"] is not None for r in results)
    # Steady state is a number or None (never a made-up huge one), ratios where compared.
    for r in results:
        steady = r["steady_events_per_second"]
        assert steady is None or steady > 0
        assert (r["ratio_to_ceiling"] is None) == (r["ceiling"] is None)

    goals = document["goals"]
    ratio_goals = [g for g in goals if g["n"] is not None]
    assert [(g["job"], g["n"]) for g in ratio_goals] == [(job, 2000) for job, _, _ in RATIO_GOALS]
    assert all(g["status"] in {"PASS", "FAIL"} and g["value"] > 0 for g in ratio_goals)
    flat_goals = [g for g in goals if g["n"] is None]
    assert [g["job"] for g in flat_goals] == list(JOBS)
    assert all(g["status"] == "not measured" and g["value"] is None for g in flat_goals)

    markdown = report.with_suffix(".md").read_text()
    assert markdown.count("\n") >= len(results) + 3
    assert "## Goals" in markdown
    assert all(g["goal"] in markdown for g in ratio_goals)
    assert report.with_suffix(".png").stat().st_size > 10_000

    # Nothing left behind: run warehouses, the N's folder and every topic of the run.
    warehouse = warehouse_settings.warehouse
    assert not warehouse.exists() or not any(warehouse.iterdir())
    assert _bench_topics(warehouse_settings, f"bench-{document['run_id'].lower()}-") == []
