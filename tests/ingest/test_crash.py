"""An ingest killed with SIGKILL twice mid-run, then completed, leaves exactly the
produced events in the table, and in its typed table (stepped after every batch, so a
kill may land in a step's commits): nothing missing, nothing twice. The default suite runs
8,000 events in batches of 2,000 (each kill lands after the first batch of its run);
the 20,000-event run is marked ``faults`` (``make test-faults``)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.views.duplicates import DUPLICATE_EVENT
from tests.helpers import (
    COORDINATES,
    binary_headers,
    landed_records,
    produce_events,
    read_table,
    typed_once,
)


def _ingest_process(
    settings: Settings, topic: str | tuple[str, ...], batch: int, *options: str, typed: bool = False
) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        EVENTLAKE_BOOTSTRAP_SERVERS=settings.bootstrap_servers,
        EVENTLAKE_WAREHOUSE=str(settings.warehouse),
        EVENTLAKE_MAX_OFFSETS_PER_TRIGGER=str(batch),
        EVENTLAKE_SHUFFLE_PARTITIONS="2",
        EVENTLAKE_DRIVER_MEMORY="1g",
        # typed: the typed tables stepped after every batch, so a kill may land in a step.
        EVENTLAKE_TYPED_TABLES=str(typed).lower(),
        EVENTLAKE_TYPED_INTERVAL_SECONDS="0",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "eventlake.cli", "ingest", *_topic_options(topic), *options],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # the JVM is a child: kill the whole group
    )


def _topic_options(topic: str | tuple[str, ...]) -> list[str]:
    topics = (topic,) if isinstance(topic, str) else topic
    return [option for name in topics for option in ("--topic", name)]


def _kill_after_batches(
    process: subprocess.Popen[str], batches: int, rng: random.Random
) -> list[str]:
    """Read progress lines until ``batches`` batches are done, wait a random moment
    (often inside the next batch's Delta writes), then SIGKILL the driver's group."""
    seen: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(line.strip())
        if sum("done" in s for s in seen) >= batches:
            break
    time.sleep(rng.uniform(0.2, 2.5))
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return seen


@pytest.mark.parametrize(
    ("events", "batch"),
    [(8_000, 2_000), pytest.param(20_000, 4_000, marks=pytest.mark.faults)],
    ids=["8k", "20k"],
)
def test_sigkill_twice_then_complete_gives_exactly_the_produced_events(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    topic_name: str,
    tmp_path: Path,
    events: int,
    batch: int,
) -> None:
    run_settings = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    create_topic(run_settings, topic_name, partitions=2)
    produced, _ = produce_events(run_settings, topic_name, events)
    rng = random.Random(events)

    ingest = partial(_ingest_process, run_settings, topic_name, batch, typed=True)
    first = _kill_after_batches(ingest(), 1, rng)
    second = _kill_after_batches(ingest(), 1, rng)
    final = ingest()
    out, _ = final.communicate(timeout=900)
    assert final.returncode == 0, out
    assert any("done" in line for line in first) and any("done" in line for line in second)

    table = read_table(spark, run_settings, "events")
    assert table.count() == produced == events
    assert table.select(COORDINATES).distinct().count() == events
    assert table.select("source", "id").distinct().count() == events
    assert read_table(spark, run_settings, "rejects").count() == 0
    assert typed_once(spark, run_settings) == {"t.test": events}


def test_a_run_of_two_topics_killed_then_one_alone_then_both_lands_each_record_once(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    """The killed run's checkpoint (of both topics) is behind the ledger once the first
    topic has landed alone: the run of both starts where the ledger stands."""
    run_settings = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    for topic in (first, second):
        create_topic(run_settings, topic, partitions=2)
        produce_events(run_settings, topic, 2_000, prefix=topic[-1])
    rng = random.Random(2)

    killed = _kill_after_batches(_ingest_process(run_settings, (first, second), 1_000), 1, rng)
    for topics in ((first,), (first, second)):
        process = _ingest_process(run_settings, topics, 1_000)
        out, _ = process.communicate(timeout=900)
        assert process.returncode == 0, out
    assert any("done" in line for line in killed)

    table = read_table(spark, run_settings, "events")
    coordinates = table.select(COORDINATES)
    assert coordinates.count() == coordinates.distinct().count() == 4_000
    assert sorted(tuple(r) for r in table.groupBy("kafka_topic").count().collect()) == [
        (first, 2_000),
        (second, 2_000),
    ]
    assert read_table(spark, run_settings, "rejects").count() == 0


def test_sigkill_twice_then_complete_with_dedup_lands_each_record_once_and_each_event_once(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    """--dedup holds each batch's records on local disk between its passes: a kill loses
    that, and the rerun decides again against what the table holds."""
    run_settings = settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
    create_topic(run_settings, topic_name, partitions=2)
    # Every tenth record repeats the id of one ~3,000 records before: mostly in an
    # earlier batch (in the table by then), some in the same one.
    ids = [f"e{n - 3_000 if n % 10 == 0 and n >= 3_000 else n}" for n in range(8_000)]
    produce_all(
        run_settings,
        topic_name,
        [(i.encode(), b"{}", binary_headers(i)) for i in ids],
    )
    rng = random.Random(35)

    for _ in range(2):
        process = _ingest_process(run_settings, topic_name, 2_000, "--dedup")
        assert any("done" in line for line in _kill_after_batches(process, 1, rng))
    final = _ingest_process(run_settings, topic_name, 2_000, "--dedup")
    out, _ = final.communicate(timeout=900)
    assert final.returncode == 0, out

    events = read_table(spark, run_settings, "events")
    rejects = read_table(spark, run_settings, "rejects")
    assert landed_records(spark, run_settings) == (len(ids), len(ids))
    assert events.count() == events.select("source", "id").distinct().count() == len(set(ids))
    assert [r[0] for r in rejects.select("reason").distinct().collect()] == [DUPLICATE_EVENT]
