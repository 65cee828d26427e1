"""eventlake.views.query: the warehouse's Delta tables as views, and query results as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.clients import Record, produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import LocalSettings
from eventlake.views.query import (
    QueryError,
    query_error_text,
    register_tables,
    run_query,
    view_statements,
    views_sql,
    write_statement_problem,
)
from eventlake.warehouse.names import state_path
from eventlake.warehouse.schemas import EVENTS_SCHEMA
from eventlake.warehouse.tables import ensure_table
from tests.helpers import binary_headers, interrupted_spark_job


def _tables(spark: SparkSession, settings: LocalSettings) -> None:
    ensure_table(spark, str(settings.warehouse / "events"), EVENTS_SCHEMA)
    ensure_table(spark, str(state_path(settings, "orders.v1")), EVENTS_SCHEMA)
    row = {name: None for name in EVENTS_SCHEMA.fieldNames()}
    row |= {"id": "e-1", "type": "com.example.created", "data": b"x" * 80}
    spark.createDataFrame([row], EVENTS_SCHEMA).write.format("delta").mode("append").save(
        str(settings.warehouse / "events")
    )


def test_every_table_is_registered_state_tables_by_a_sql_name(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    _tables(spark, warehouse_settings)
    assert register_tables(spark, warehouse_settings) == [
        "events",
        "events_unique",
        "type_com_example_created",
        "state_orders_v1",
    ]
    assert spark.table("state_orders_v1").count() == 0


def test_a_result_renders_as_a_table_with_long_bytes_cut_and_nulls_named(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    _tables(spark, warehouse_settings)
    register_tables(spark, warehouse_settings)
    text = run_query(spark, "SELECT id, subject, data FROM events")
    header, _, line, count = text.splitlines()
    assert header.split(" | ")[0].strip() == "id"
    assert [cell.strip() for cell in line.split(" | ")] == ["e-1", "NULL", "x" * 57 + "..."]
    assert count == "(1 row)"


def test_json_output_is_one_object_per_row_up_to_the_limit(spark: SparkSession) -> None:
    text = run_query(spark, "SELECT id FROM range(5)", output_format="json", limit=3)
    assert [json.loads(line) for line in text.splitlines()] == [{"id": 0}, {"id": 1}, {"id": 2}]


def test_sql_spark_cannot_parse_is_a_query_error_showing_where(spark: SparkSession) -> None:
    with pytest.raises(QueryError) as raised:
        run_query(spark, "SELEC nonsense")

    assert str(raised.value).startswith("[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'")
    assert str(raised.value).endswith("SELEC nonsense\n^^^")


def test_an_unknown_table_is_a_query_error_without_the_plan(spark: SparkSession) -> None:
    with pytest.raises(QueryError, match=r"TABLE_OR_VIEW_NOT_FOUND.*`nope`") as raised:
        run_query(spark, "SELECT * FROM nope")

    assert "UnresolvedRelation" not in str(raised.value)


def test_an_unknown_table_is_told_the_tables_and_views_there(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    _tables(spark, warehouse_settings)
    register_tables(spark, warehouse_settings)

    with pytest.raises(QueryError) as raised:
        run_query(spark, "SELECT * FROM evnts")

    last = str(raised.value).splitlines()[-1]
    assert last.startswith("The tables and views here: events, events_unique, ")
    assert "state_orders_v1" in last


def test_an_analysis_errors_plan_is_cut_after_its_sqlstate_line() -> None:
    message = "[X] `c` not found. SQLSTATE: 42703; line 1 pos 7;\n'Project ['c]\n+- Range (0, 2)\n"

    assert query_error_text(message) == "[X] `c` not found. SQLSTATE: 42703; line 1 pos 7"


def test_the_views_script_gives_a_session_of_its_own_every_view(
    broker: LocalBroker, spark: SparkSession, warehouse_settings: Settings, topic_name: str
) -> None:
    create_topic(warehouse_settings, topic_name)
    odd = "it's\\odd"  # a quote and a backslash: escaped in the script's literals
    events = [("p1", "com.example.order.paid", {"amount": 12.5}), ("o1", odd, {"n": 3})]
    records: list[Record] = []
    for event_id, event_type, data in events:
        headers = binary_headers(event_id, type_=event_type)
        headers.append(("content-type", b"application/json"))
        records.append((event_id.encode(), json.dumps(data).encode(), headers))
    produce_all(warehouse_settings, topic_name, [*records, records[0]])  # p1 twice
    run_ingest(spark, warehouse_settings, IngestRequest(topics=(topic_name,)))

    script = views_sql(view_statements(spark, warehouse_settings))
    own = spark.newSession()  # no temporary views of this session
    for statement in script.split(";\n"):
        own.sql(statement.rstrip(";"))

    assert own.sql("SELECT amount FROM type_com_example_order_paid").collect() == [
        (Decimal("12.5"),),
        (Decimal("12.5"),),
    ]
    assert own.sql("SELECT n FROM type_it_s_odd").collect() == [(3,)]
    assert own.table("events_unique").count() == 2
    assert own.table("events").count() == 3


def test_eventlake_views_prints_one_statement_per_view(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    _tables(spark, warehouse_settings)

    result = CliRunner().invoke(app, ["views", "--warehouse", str(warehouse_settings.warehouse)])

    assert result.exit_code == 0, result.output
    created = [
        line.split("`")[1]
        for line in result.output.splitlines()
        if line.startswith("CREATE OR REPLACE TEMPORARY VIEW")
    ]
    assert created == ["events", "events_unique", "type_com_example_created", "state_orders_v1"]


def test_eventlake_views_stopped_by_a_signal_prints_a_line_and_no_statement(
    spark: SparkSession, warehouse_settings: LocalSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import eventlake.views.query as query_module
    from eventlake.cli import app

    _tables(spark, warehouse_settings)
    # SIGINT a second into the Spark job that would find the views.
    monkeypatch.setattr(
        query_module, "view_statements", lambda session, _settings: interrupted_spark_job(session)
    )

    result = CliRunner().invoke(app, ["views", "--warehouse", str(warehouse_settings.warehouse)])

    assert result.exit_code == 0, result.output
    assert "CREATE" not in result.output
    assert result.output.rstrip().endswith(
        "views: stopped by SIGINT; nothing was printed; run it again"
    )


def test_sql_that_fails_on_a_row_says_so_in_a_sentence_without_a_java_stack_trace(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    # Its own process: the JVM's log goes to the stderr it was started with.
    _tables(spark, warehouse_settings)
    sql = "SELECT raise_error(concat('no amount in ', id)) FROM events"
    command = [sys.executable, "-m", "eventlake.cli", "query", sql]
    env = {**os.environ, "EVENTLAKE_WAREHOUSE": str(warehouse_settings.warehouse)}

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)

    assert done.returncode == 2, done.stderr
    assert "error: [USER_RAISED_EXCEPTION] no amount in e-1" in done.stderr
    assert "\tat org.apache.spark" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "  (SELECT 1)",
        "-- the count\nselect count(*) FROM events",
        "/* c */ WITH a AS (SELECT 1 AS x) SELECT * FROM a",
        "DESCRIBE HISTORY events",
        "SHOW TABLES",
        "SELECT 'delete from events' AS text",
    ],
)
def test_statements_that_read_are_run(sql: str) -> None:
    assert write_statement_problem(sql) is None


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM events WHERE id = 'x'",
        "-- tidy up\ndelete from events",
        "WITH a AS (SELECT 1) INSERT INTO events SELECT * FROM a",
        "UPDATE events SET id = 'x'",
        "MERGE INTO events t USING events s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "DROP TABLE events",
        "OPTIMIZE events",
    ],
)
def test_statements_that_write_are_refused_with_what_to_use(sql: str) -> None:
    problem = write_statement_problem(sql)
    assert problem is not None
    assert "bypass the jobs' ledger" in problem


def test_a_delete_through_query_is_refused_and_changes_nothing(
    spark: SparkSession, warehouse_settings: LocalSettings
) -> None:
    _tables(spark, warehouse_settings)
    register_tables(spark, warehouse_settings)
    events = DeltaTable.forPath(spark, str(warehouse_settings.warehouse / "events"))
    before = events.history(1).collect()[0]["version"]

    with pytest.raises(QueryError, match="not DELETE"):
        run_query(spark, "DELETE FROM events")

    assert events.history(1).collect()[0]["version"] == before
    assert run_query(spark, "SELECT count(*) AS n FROM events").splitlines()[2].strip() == "1"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["query", "SELECT 1"], "no Delta tables under"),
        (["views"], "no Delta tables under"),
        (["types"], "no events table under"),
    ],
    ids=["query", "views", "types"],
)
def test_a_warehouse_without_tables_is_refused_with_exit_2_and_what_to_run(
    spark: SparkSession, tmp_path: Path, arguments: list[str], said: str
) -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    result = CliRunner().invoke(app, [*arguments, "--warehouse", str(tmp_path / "lake")])

    assert result.exit_code == 2, result.output
    assert f"{said} {tmp_path / 'lake'}: run `eventlake ingest` first" in result.output
