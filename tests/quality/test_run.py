"""Data-quality checks: real Great Expectations on Spark over tables ingested from the broker.

One module-scoped ingest of two topics (``good``: every rule holds; ``bad``: one crafted
record per rule, so each failure's sample points at exactly that record), one check run
through the CLI, then one assertion per behaviour on its dq_results rows. Rules that
ingest already enforces (required attributes, specversion) fail only on a crafted Delta
table written directly. A second ingest + ``--topic`` run shows the incremental slice.
"""

from __future__ import annotations

import json
import signal
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

from eventlake.cli import app
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.quality import CheckName, CheckReport, CheckRequest, QualityConfig, run_checks
from eventlake.quality import run as run_module
from eventlake.quality.gx import DQ_DOCS
from eventlake.warehouse.names import DQ_RESULTS, EVENTS
from eventlake.warehouse.schemas import EVENTS_SCHEMA
from tests.helpers import interrupted_spark_job

RUN = uuid.uuid4().hex[:8]
GOOD = f"q-good-{RUN}"
BAD = f"q-bad-{RUN}"
TOPIC_RULES: dict[str, Any] = {
    "type_pattern": "^com[.]acme[.]",
    "time_required": True,
    "keyed": True,
    "max_future_skew_seconds": 3600,
    "min_rows": 1,
    "max_rows": 20,
    "max_rejects_rate": 0.2,
}
QUALITY: dict[str, Any] = {
    "topics": {GOOD: TOPIC_RULES, BAD: {**TOPIC_RULES, "max_rows": 5}},
}
JSON_CT = ("content-type", b"application/cloudevents+json")
FUTURE = (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")


def binary_event(event_id: str, **overrides: str | None) -> Record:
    """A binary-mode event that passes every rule; an override of None drops the header."""
    headers: dict[str, str | None] = {
        "ce_specversion": "1.0",
        "ce_id": event_id,
        "ce_source": "/tests/quality",
        "ce_type": "com.acme.order.created",
        "ce_time": "2024-05-01T12:00:00Z",
        "content-type": "application/json; charset=utf-8",
        "ce_dataschema": "https://example.com/schemas/order.json",
        "ce_partitionkey": "customer-1",
        "ce_traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    headers.update(overrides)
    pairs = [(k, v.encode()) for k, v in headers.items() if v is not None]
    return (b"customer-1", b'{"total": 12}', pairs)


def structured_event(event_id: str) -> Record:
    body = {
        "specversion": "1.0",
        "id": event_id,
        "source": "https://shop.example.com/orders",
        "type": "com.acme.order.paid",
        "time": "2024-05-01T12:00:01.5+02:00",
        "datacontenttype": "application/json",
        "dataschema": "urn:example:schemas:order",
        "partitionkey": "customer-2",
        "data": {"total": 7},
    }
    return (b"customer-2", json.dumps(body).encode(), [JSON_CT])


GOOD_RECORDS: list[Record] = [
    binary_event("g1"),
    structured_event("g2"),
    binary_event("g3", **{"content-type": 'text/plain;charset="utf-8"'}),
    structured_event("g4"),
    binary_event("g5", ce_dataschema=None, ce_time="2024-05-01T12:00:00.123456Z"),
]
#: Offset in the single-partition bad topic -> record; each breaks exactly one rule.
BAD_RECORDS: list[Record] = [
    binary_event("b0", ce_source="not a uri"),
    binary_event("b1", ce_type="org.other.created"),
    binary_event("b2", ce_time=None),
    binary_event("b3", ce_time=FUTURE),
    binary_event("b4", **{"content-type": "json"}),
    binary_event("b5", ce_dataschema="/schemas/order.json"),
    binary_event("b6", ce_abcdefghijklmnopqrstuvwxy="25 characters in its name"),
    binary_event("b7", ce_partitionkey=None),
    binary_event("dup"),
    binary_event("dup"),
    (b"gone", None, []),  # plain tombstones: rejects, 3 of 13 records
    (b"gone", None, []),
    (b"gone", None, []),
]
BAD_OFFSETS: dict[CheckName, list[int]] = {
    CheckName.SOURCE_URI_REFERENCE: [0],
    CheckName.TYPE_PATTERN: [1],
    CheckName.TIME_PRESENT: [2],
    CheckName.TIME_NOT_FUTURE: [3],
    CheckName.DATACONTENTTYPE_MEDIA_TYPE: [4],
    CheckName.DATASCHEMA_ABSOLUTE_URI: [5],
    CheckName.EXTENSION_NAMES: [6],
    CheckName.PARTITIONKEY_PRESENT: [7],
    CheckName.UNIQUE_SOURCE_ID: [8, 9],
    CheckName.REJECTS_RATE: [10, 11, 12],
}
#: Checks ingest enforces itself: they pass on ingested data, fail on a crafted table.
INGEST_ENFORCED = (CheckName.REQUIRED_NOT_NULL, CheckName.REQUIRED_NOT_EMPTY, CheckName.SPECVERSION)


@dataclass(frozen=True)
class CliRun:
    exit_code: int
    output: str
    rows: list[Row]


def _cli_check(spark: SparkSession, settings: Settings, *args: str) -> CliRun:
    """``eventlake check`` as a user runs it; rules and session size from the environment."""
    env = {
        "EVENTLAKE_QUALITY": json.dumps(QUALITY),
        "EVENTLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
    }
    result = CliRunner().invoke(
        app, ["check", "--warehouse", str(settings.warehouse), *args], env=env
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    run_id = result.output.split()[1].rstrip(":")
    rows = (
        spark.read.format("delta")
        .load(str(settings.table_path(DQ_RESULTS)))
        .where(F.col("run_id") == run_id)
        .collect()
    )
    return CliRun(result.exit_code, result.output, rows)


def _rows(run: CliRun, topic: str, check: CheckName) -> list[Row]:
    rows = [r for r in run.rows if r.topic == topic and r.check == check.value]
    assert rows, f"no {check.value} rows for {topic}"
    return rows


def _offsets(row: Row) -> list[int]:
    return [s.kafka_offset for s in row.unexpected_sample]


@pytest.fixture(scope="module")
def lake(
    broker: LocalBroker, spark: SparkSession, settings: Settings, tmp_path_factory: Any
) -> Settings:
    """A warehouse with the good and the bad topic ingested once."""
    # Earlier modules are done with their caches; a clean slate lets the last test see
    # whether the checks release theirs.
    spark.catalog.clearCache()
    lake = settings.model_copy(
        update={"warehouse": tmp_path_factory.mktemp("quality") / "warehouse"}
    )
    for topic, records in ((GOOD, GOOD_RECORDS), (BAD, BAD_RECORDS)):
        create_topic(lake, topic)
        produce_all(lake, topic, records)
    run_ingest(spark, lake, IngestRequest(topics=(GOOD, BAD)))
    return lake


@pytest.fixture(scope="module")
def first_run(spark: SparkSession, lake: Settings) -> CliRun:
    return _cli_check(spark, lake)


@pytest.fixture(scope="module")
def incremental_run(spark: SparkSession, lake: Settings, first_run: CliRun) -> CliRun:
    """Three more good-topic records, one repeating the (source, id) of g1, then a
    --topic run: it sees only the new slice."""
    produce_all(lake, GOOD, [binary_event("g6"), binary_event("g1"), structured_event("g7")])
    run_ingest(spark, lake, IngestRequest(topics=(GOOD, BAD)))
    return _cli_check(spark, lake, "--topic", GOOD)


@pytest.mark.parametrize("check", list(CheckName))
def test_check_passes_on_conforming_events(first_run: CliRun, check: CheckName) -> None:
    assert all(r.success for r in _rows(first_run, GOOD, check))


@pytest.mark.parametrize(("check", "offsets"), BAD_OFFSETS.items())
def test_check_fails_with_the_offending_records_as_sample(
    first_run: CliRun, check: CheckName, offsets: list[int]
) -> None:
    (row,) = _rows(first_run, BAD, check)
    assert not row.success
    assert row.unexpected_count == len(offsets)
    assert _offsets(row) == offsets
    assert {s.kafka_topic for s in row.unexpected_sample} == {BAD}


@pytest.mark.parametrize("check", INGEST_ENFORCED)
def test_rules_ingest_enforces_pass_on_ingested_bad_topic(
    first_run: CliRun, check: CheckName
) -> None:
    assert all(r.success for r in _rows(first_run, BAD, check))


def test_row_count_above_bound_fails_with_observed_count(first_run: CliRun) -> None:
    (row,) = _rows(first_run, BAD, CheckName.ROW_COUNT)
    assert (row.success, row.observed_value, row.severity) == (False, "10", "warning")


def test_rejects_rate_observed_value_states_rate_and_counts(first_run: CliRun) -> None:
    (row,) = _rows(first_run, BAD, CheckName.REJECTS_RATE)
    assert row.observed_value == "0.2308 (3 of 13 records rejected)"


def test_a_failed_checks_observed_value_shows_the_offending_values(first_run: CliRun) -> None:
    (row,) = _rows(first_run, BAD, CheckName.SOURCE_URI_REFERENCE)
    assert row.observed_value == "1 of 10 rows; e.g. 'not a uri'"


def test_a_passed_checks_observed_value_counts_the_rows(first_run: CliRun) -> None:
    (good,) = _rows(first_run, GOOD, CheckName.SOURCE_URI_REFERENCE)
    assert good.observed_value == "0 of 5 rows"


def test_failed_error_check_exits_1_and_summary_names_it(first_run: CliRun) -> None:
    assert first_run.exit_code == 1
    failed = [line for line in first_run.output.splitlines() if "FAILED" in line]
    assert any(BAD in line and "source_uri_reference" in line for line in failed)
    assert first_run.output.rstrip().endswith("result: FAILED")


def test_results_record_slice_and_versions(first_run: CliRun) -> None:
    row = first_run.rows[0]
    assert row.table == EVENTS and row.topic_filter is None
    assert row.slice.startswith("events full@v") and row.table_version >= 1


def test_data_docs_name_the_failed_checks(first_run: CliRun, lake: Settings) -> None:
    docs = lake.warehouse / DQ_DOCS
    run_id = first_run.rows[0].run_id
    pages = [p.read_text() for p in (docs / "validations").rglob("*.html") if run_id in p.parts]
    assert (docs / "index.html").is_file() and pages
    # One table row per expectation; a failed one carries GX's red cross.
    table_rows = [row for page in pages for row in page.split("<tr")]
    failed = {r.check for r in first_run.rows if not r.success}
    assert failed == {c.value for c in BAD_OFFSETS} | {CheckName.ROW_COUNT.value}
    for check in failed:
        assert any(f"{check} [" in row and "fa-times" in row for row in table_rows), check


def test_incremental_run_checks_only_new_rows(incremental_run: CliRun) -> None:
    (row,) = _rows(incremental_run, GOOD, CheckName.ROW_COUNT)
    assert row.observed_value == "3"
    assert row.slice.startswith("events v") and "topic " + GOOD in row.slice


def test_incremental_run_flags_duplicate_of_an_earlier_slice(incremental_run: CliRun) -> None:
    (row,) = _rows(incremental_run, GOOD, CheckName.UNIQUE_SOURCE_ID)
    assert not row.success
    assert _offsets(row) == [len(GOOD_RECORDS) + 1]  # the new copy only


def test_failed_warning_check_does_not_fail_the_run(incremental_run: CliRun) -> None:
    assert incremental_run.exit_code == 0
    assert incremental_run.output.rstrip().endswith("result: OK")


def test_topic_option_checks_only_that_topic(incremental_run: CliRun) -> None:
    assert {r.topic for r in incremental_run.rows} == {GOOD}
    assert {r.topic_filter for r in incremental_run.rows} == {GOOD}


def test_a_topic_never_landed_is_refused_before_spark_not_passed_on_zero_rows(
    lake: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_spark(*_: object, **__: object) -> None:
        raise AssertionError("the check started Spark for a topic it cannot check")

    monkeypatch.setattr("eventlake.spark.session.build_spark_session", no_spark)
    result = CliRunner().invoke(
        app, ["check", "--warehouse", str(lake.warehouse), "--topic", f"{GOOD}-misspelt"]
    )

    assert result.exit_code == 2, result.output
    assert f"No record of topic '{GOOD}-misspelt' has landed in events" in result.output


# --- a crafted table: what ingest would never write ----------------------------------


@pytest.fixture(scope="module")
def crafted(spark: SparkSession, settings: Settings, tmp_path_factory: Any) -> CheckReport:
    """An events table written directly: a null id, an empty source, specversion 0.3,
    an upper-case extension name; one conforming row."""
    lake = settings.model_copy(update={"warehouse": tmp_path_factory.mktemp("crafted")})
    base = {
        "id": "c",
        "source": "/crafted",
        "specversion": "1.0",
        "type": "t",
        "extensions": {},
        "content_mode": "binary",
        "kafka_topic": "crafted",
        "kafka_partition": 0,
        "ingested_at": datetime.now(UTC),
    }
    rows = [
        {**base, "id": "ok", "kafka_offset": 0},
        {**base, "id": None, "kafka_offset": 1},
        {**base, "id": "c2", "source": "", "kafka_offset": 2},
        {**base, "id": "c3", "specversion": "0.3", "kafka_offset": 3},
        {**base, "id": "c4", "extensions": {"Trace": "x"}, "kafka_offset": 4},
    ]
    schema = EVENTS_SCHEMA
    frame = spark.createDataFrame(
        [Row(**{f: r.get(f) for f in schema.names}) for r in rows], schema
    )
    frame.write.format("delta").save(str(lake.table_path(EVENTS)))
    return run_checks(spark, lake, CheckRequest(full=True), config=QualityConfig())


@pytest.mark.parametrize(
    ("check", "column", "offset"),
    [
        (CheckName.REQUIRED_NOT_NULL, "id", 1),
        (CheckName.REQUIRED_NOT_EMPTY, "source", 2),
        (CheckName.SPECVERSION, "specversion", 3),
        (CheckName.EXTENSION_NAMES, "invalid_extension_names", 4),
    ],
)
def test_crafted_table_fails_rules_ingest_enforces(
    crafted: CheckReport, check: CheckName, column: str, offset: int
) -> None:
    failed = [r for r in crafted.results if not r.success]
    (result,) = [r for r in failed if r.check is check]
    assert result.expectation.endswith(f"({column})")
    assert result.unexpected_sample == (("crafted", 0, offset),)


def test_crafted_table_run_exits_1(crafted: CheckReport) -> None:
    assert crafted.exit_code == 1


def test_crafted_table_without_rejects_table_records_rate_zero(crafted: CheckReport) -> None:
    (result,) = [r for r in crafted.results if r.check is CheckName.REJECTS_RATE]
    assert result.success and result.observed_value.startswith("0.0000")


def test_a_stop_signal_cancels_the_checks_spark_job_and_records_nothing(
    spark: SparkSession, settings: Settings, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = settings.model_copy(update={"warehouse": tmp_path})
    row = {"id": "a", "source": "/s", "specversion": "1.0", "type": "t", "extensions": {}}
    row |= {"kafka_topic": "stopped", "kafka_partition": 0, "kafka_offset": 0}
    spark.createDataFrame(
        [Row(**{f: row.get(f) for f in EVENTS_SCHEMA.names})], EVENTS_SCHEMA
    ).write.format("delta").save(str(lake.table_path(EVENTS)))
    handler = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(run_module, "measure_slice", partial(interrupted_spark_job, spark))
    report = run_checks(spark, lake, CheckRequest(full=True), config=QualityConfig())

    assert report.stopped_by == "SIGINT"
    assert report.exit_code == 0
    assert report.render().endswith("result: STOPPED")
    assert not lake.table_path(DQ_RESULTS).exists()
    assert signal.getsignal(signal.SIGINT) is handler


def test_check_runs_release_the_slice_they_cache(
    spark: SparkSession, first_run: CliRun, incremental_run: CliRun, crafted: CheckReport
) -> None:
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
