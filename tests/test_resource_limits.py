"""Resource limits: a backlog larger than one batch is ingested in bounded micro-batches,
and the driver never receives the records' data.

One ingest (available-now, on the session's Spark) runs with two limits:
``max_offsets_per_trigger=1000`` in the settings (the setting under test) and Spark's
``spark.driver.maxResultSize`` lowered to 1 MiB, the cap on the bytes that task results
may bring to the driver in one job. The topic holds 5,000 records of about 2 KiB
(10 MiB; 2 MiB per batch), so:

* batch sizes come from two independent places: the per-batch lines ingest prints, and
  the Delta log of ``events``/``rejects``, where each micro-batch is one commit whose
  ``txn.version`` is the batch id and whose ``numOutputRows`` is the rows it appended;
* driver memory is checked by behaviour, not by measuring RSS (noisy, and silent about
  which code path holds the memory): had the data path collected a batch
  (``collect()``, ``toPandas()``, a Python loop over rows), that job would have brought
  about 2 MiB to the driver and Spark would have failed the run against the cap. A
  positive control proves the cap is live: in the same window, collecting the ``data``
  column of the table just written is refused with the maxResultSize error.

The cap is a SparkContext setting that each task set reads from the live ``SparkConf``;
``spark.conf.set`` refuses core settings, so the fixture sets it on the context's conf
and restores the previous value afterwards (a session's tests run one at a time). A
separate driver started with ``--conf spark.driver.maxResultSize=1m`` would check the
same at the cost of a second JVM start.
"""

from __future__ import annotations

import io
import json
import random
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, IngestSummary, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic, topic_offsets
from eventlake.local.broker import LocalBroker
from tests.helpers import binary_headers, read_table

RECORDS: Final = 5_000
MAX_PER_BATCH: Final = 1_000
VALUE_BYTES: Final = 2_048
PARTITIONS: Final = 2
RESULT_SIZE_CONF: Final = "spark.driver.maxResultSize"
MAX_RESULT_SIZE: Final = "1m"
#: ingest prints one such line per micro-batch (eventlake.ingest.run._run_streaming).
BATCH_LINE: Final = re.compile(r"^ingest: batch (\d+) done, (\d+) records$")


@dataclass(repr=False)
class Run:
    """The module's one ingest and what it left behind."""

    settings: Settings
    summary: IngestSummary
    #: batch id -> records, from the lines ingest printed
    printed: dict[int, int]
    end_offsets: dict[int, int]
    #: what collecting the data column did under the cap: "collected" or the error text
    control: str


@contextmanager
def driver_result_cap(spark: SparkSession, size: str) -> Iterator[None]:
    """Lower spark.driver.maxResultSize for the jobs started inside the block."""
    conf = spark.sparkContext._jsc.sc().conf()  # the live SparkConf, not a copy
    previous = conf.get(RESULT_SIZE_CONF) if conf.contains(RESULT_SIZE_CONF) else None
    conf.set(RESULT_SIZE_CONF, size)
    try:
        yield
    finally:
        if previous is None:
            conf.remove(RESULT_SIZE_CONF)
        else:
            conf.set(RESULT_SIZE_CONF, previous)


def _records() -> list[Record]:
    rng = random.Random(RECORDS)
    return [
        (f"k{n}".encode(), rng.randbytes(VALUE_BYTES), list(binary_headers(f"r{n}")))
        for n in range(RECORDS)
    ]


@pytest.fixture(scope="module")
def run(
    broker: LocalBroker,
    spark: SparkSession,
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Run]:
    topic = f"limits-{uuid.uuid4().hex[:10]}"
    run_settings = settings.model_copy(
        update={
            "warehouse": tmp_path_factory.mktemp("limits") / "warehouse",
            "max_offsets_per_trigger": MAX_PER_BATCH,
        }
    )
    create_topic(run_settings, topic, partitions=PARTITIONS)
    assert produce_all(run_settings, topic, _records()) == RECORDS
    output = io.StringIO()
    with driver_result_cap(spark, MAX_RESULT_SIZE):
        # Also catches the prints of foreachBatch, which runs on a py4j callback thread.
        with redirect_stdout(output):
            summary = run_ingest(spark, run_settings, IngestRequest(topics=(topic,)))
        try:
            read_table(spark, run_settings, "events").select("data").collect()
            control = "collected"
        except Exception as error:  # py4j/pyspark wrap Spark's SparkException
            control = str(error)
    printed: dict[int, int] = {}
    for line in output.getvalue().splitlines():
        match = BATCH_LINE.match(line.strip())
        if match:
            printed[int(match[1])] = int(match[2])
    yield Run(run_settings, summary, printed, topic_offsets(run_settings, topic)[1], control)


def _delta_batches(table: Path) -> dict[int, int]:
    """Rows appended per micro-batch, from the Delta log: the batch its commit names
    (userMetadata) -> numOutputRows."""
    appended: dict[int, int] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        if "eventlake_batch" not in info.get("userMetadata", ""):
            continue  # the table's creation
        batch = json.loads(info["userMetadata"])["eventlake_batch"]
        rows = int(info.get("operationMetrics", {}).get("numOutputRows", 0))
        appended[batch] = appended.get(batch, 0) + rows
    return appended


def test_backlog_is_read_in_several_batches_of_at_most_max_offsets(run: Run) -> None:
    batches = run.printed
    assert run.summary.batches == len(batches)
    assert len(batches) >= RECORDS // MAX_PER_BATCH
    assert all(0 < n <= MAX_PER_BATCH for n in batches.values()), batches
    assert sum(batches.values()) == RECORDS


def test_delta_log_shows_one_bounded_commit_per_batch(run: Run) -> None:
    events = _delta_batches(run.settings.table_path("events"))
    rejects = _delta_batches(run.settings.table_path("rejects"))
    assert set(events) == set(run.printed)
    assert set(rejects) <= set(run.printed)
    per_batch = {b: events[b] + rejects.get(b, 0) for b in events}
    assert per_batch == run.printed
    assert max(per_batch.values()) <= MAX_PER_BATCH


def test_every_record_arrives_exactly_once(run: Run, spark: SparkSession) -> None:
    produced = {(p, o) for p, end in run.end_offsets.items() for o in range(end)}
    assert len(produced) == RECORDS
    rows = read_table(spark, run.settings, "events").select("kafka_partition", "kafka_offset")
    found = [(r["kafka_partition"], r["kafka_offset"]) for r in rows.collect()]
    assert len(found) == RECORDS
    assert set(found) == produced
    assert read_table(spark, run.settings, "rejects").count() == 0
    assert (run.summary.records_read, run.summary.events) == (RECORDS, RECORDS)


def test_ingest_stays_under_a_result_cap_that_collecting_its_data_exceeds(run: Run) -> None:
    """The run completed under maxResultSize=1m with 2 MiB of values per batch, while
    collecting the data it wrote is refused under the same cap: the ingest path never
    brings record data to the driver."""
    assert MAX_PER_BATCH * VALUE_BYTES > 1.9 * 1024 * 1024  # a batch's values: ~2x the cap
    assert run.summary.records_read == RECORDS
    assert "maxResultSize" in run.control, run.control[:500]
