"""The commands that read and report: compaction-check, status, types, query.

Example:
    $ eventlake status --topic demo.orders
    $ eventlake query "SELECT type, count(*) FROM events GROUP BY type"
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from eventlake.cli.common import (
    BootstrapOption,
    WarehouseOption,
    app,
    fail,
    job_settings,
    refused,
    stopped_with_a_line,
    topic_option,
)
from eventlake.core.errors import REFUSED_EXIT_CODE

if TYPE_CHECKING:  # imported lazily at run time: Spark is slow to import
    from eventlake.core.locations import Location
    from eventlake.core.settings import Settings
    from eventlake.views.type_fields import TypeColumns


@app.command("compaction-check")
def compaction_check(
    topic: Annotated[list[str], topic_option("Topic to check; repeatable.")],
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Say whether a state table may have missed tombstones; exit 4 when one may have.

    SIGTERM or SIGINT stops it between or within topics: the topics printed were
    checked (a risk found is recorded with its state table), the others were not; the
    exit is 4 when one printed is at risk, 0 otherwise."""
    from eventlake.kafka.connection import check_connection
    from eventlake.kafka.topics import require_topics
    from eventlake.spark.session import build_spark_session
    from eventlake.state.compaction_risk import check_compaction

    settings = job_settings(bootstrap_servers, warehouse)
    with refused():
        # Refused in a sentence before Spark starts: no broker, no such topic.
        check_connection(settings)
        require_topics(settings, topic)
        spark = build_spark_session(settings, app_name="eventlake-compaction-check")
    reports = []
    try:
        with stopped_with_a_line(
            spark,
            "compaction-check",
            "the topics printed above were checked, the others not; run it again for them",
        ):
            for name in topic:
                reports.append(check_compaction(spark, settings, name))
                typer.echo(reports[-1].message)
    except typer.Exit:
        # A stop exits 0, unless a topic checked before it may have missed tombstones.
        if not any(r.at_risk for r in reports):
            raise
    if any(r.at_risk for r in reports):
        raise typer.Exit(4)


@app.command()
def status(
    topic: Annotated[
        list[str] | None,
        topic_option("Only the checkpoints reading this topic; repeatable."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Where each ingest and republish stands, per checkpoint: current offset (all
    before it is in the tables), log end offset and lag per partition; the last batch;
    whether a stream holds it. Also compaction risks of state tables.

    Starts no Spark. Exit 3 when Kafka did not answer (current offsets still shown).
    """
    from eventlake.status.report import warehouse_status

    settings = job_settings(bootstrap_servers, warehouse)
    report = warehouse_status(settings, topics=tuple(topic or ()))
    typer.echo(json.dumps(report.to_json(), indent=2) if as_json else report.render())
    if not report.checkpoints and not as_json:
        typer.echo(f"(warehouse {settings.warehouse}: EVENTLAKE_WAREHOUSE or --warehouse)")
    if report.kafka_error:
        raise typer.Exit(3)


def refuse_empty_warehouse(settings: Settings, missing: str = "Delta tables") -> NoReturn:
    """Refuse (exit 2) a command that reads tables the warehouse does not have yet.

    Example:
        >>> refuse_empty_warehouse(settings)  # error: no Delta tables under var/warehouse: ...
    """
    fail(
        f"no {missing} under {settings.warehouse}: run `eventlake ingest` first",
        code=REFUSED_EXIT_CODE,
    )


@app.command("types")
def types_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    warehouse: WarehouseOption = None,
) -> None:
    """List the event types in the events table: count, first and last event (Kafka
    time), the typed view, its columns and where they came from (the type's dataschema
    or its data), and when a type's shape changed (a field appeared, disappeared or
    changed kind). The columns found here are kept in the warehouse: `eventlake query`
    reads them instead of inferring them again."""
    from eventlake.core.text_table import text_table
    from eventlake.spark.session import build_spark_session
    from eventlake.typed.names import typed_lag, typed_tables
    from eventlake.views.event_types import event_types
    from eventlake.views.type_fields import fields_path, save_columns
    from eventlake.warehouse.names import EVENTS, is_delta_table

    settings = job_settings(warehouse=warehouse)
    path = settings.table_path(EVENTS)
    if not is_delta_table(path):
        refuse_empty_warehouse(settings, "events table")
    with refused():
        spark = build_spark_session(settings, app_name="eventlake-types")
    events = spark.read.format("delta").load(str(path))
    with stopped_with_a_line(spark, "types", "nothing was saved; run it again"):
        infos = event_types(
            spark,
            events,
            sample_hours=settings.type_sample_hours,
            fetch_dataschemas=settings.fetch_dataschemas,
        )
    save_columns(fields_path(settings.warehouse), {info.type: info.columns for info in infos})
    topics = [r["kafka_topic"] for r in events.select("kafka_topic").distinct().collect()]
    lag, tables = typed_lag(settings, topics), typed_tables(settings)
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        **info.to_json(),
                        "typed_table": str(tables[info.type]) if info.type in tables else None,
                        "typed_lag": lag.get(info.type),
                    }
                    for info in infos
                ],
                indent=2,
            )
        )
        return
    cells = [
        [
            info.type,
            str(info.count),
            str(shown["first_seen"]),
            str(shown["last_seen"]),
            info.view,
            _typed_cell(tables.get(info.type), lag.get(info.type)),
            ", ".join(f"{name} {kind}" for name, kind in info.fields.items()) or "-",
            _columns_from(info.columns),
        ]
        for info in infos
        for shown in [info.to_json()]
    ]
    header = ["type", "events", "first seen", "last seen", "view", "typed table (lag)"]
    header += ["columns", "columns from"]
    typer.echo("\n".join(text_table(header, cells)))
    for info in infos:
        if info.dataschema_unread is not None:
            typer.echo(
                f"{info.type}: dataschema {info.dataschema} not read "
                f"({info.dataschema_unread}); its columns are inferred from its data"
            )
        for change in info.changes():
            typer.echo(f"{info.type}: {change}")


def _typed_cell(path: Location | None, lag: int | None) -> str:
    """The ``typed table (lag)`` cell: its catalog-style name and how many offsets of
    events it may lack; ``-`` when the type has none yet."""
    if path is None:
        return "-"
    return f"typed_{path.name} ({lag or 0})"


def _columns_from(columns: TypeColumns) -> str:
    """The ``columns from`` cell: ``dataschema <uri>``, or ``data`` (with a mark when a
    dataschema was not read; the line below the table says why)."""
    if columns.from_dataschema:
        return f"dataschema {columns.dataschema}"
    return "data" if columns.unread is None else "data (dataschema not read)"


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="SQL over the tables events, rejects, ...")],
    output_format: Annotated[
        str, typer.Option("--format", help="'table' or 'json' (JSON lines).")
    ] = "table",
    limit: Annotated[int, typer.Option(min=1, help="Rows to print at most.")] = 50,
    warehouse: WarehouseOption = None,
) -> None:
    """Run SQL over the warehouse's Delta tables, registered by name."""
    from eventlake.spark.session import build_spark_session
    from eventlake.views.query import register_tables, run_query

    if output_format not in {"table", "json"}:
        fail("--format must be 'table' or 'json'", code=REFUSED_EXIT_CODE)
    settings = job_settings(warehouse=warehouse)
    with refused():
        spark = build_spark_session(settings, app_name="eventlake-query")
    names = register_tables(spark, settings)
    if not names:
        refuse_empty_warehouse(settings)
    with refused(), stopped_with_a_line(spark, "query", "it changed nothing"):
        text = run_query(spark, sql, output_format=output_format, limit=limit)
    typer.echo(text)


@app.command()
def views(
    warehouse: WarehouseOption = None,
) -> None:
    """Print the views `eventlake query` knows (the tables by name, events_unique, a
    typed view per event type) as SQL over the tables' paths: CREATE OR REPLACE
    TEMPORARY VIEW statements for a Spark session of your own, e.g. `eventlake views >
    views.sql` and then `spark-sql -i views.sql` with the Delta jars. The typed views'
    columns are those `eventlake types` or maintenance kept, inferred for newer types."""
    from eventlake.spark.session import build_spark_session
    from eventlake.views.query import view_statements, views_sql

    settings = job_settings(warehouse=warehouse)
    with refused():
        spark = build_spark_session(settings, app_name="eventlake-views")
    with stopped_with_a_line(spark, "views", "nothing was printed; run it again"):
        statements = view_statements(spark, settings)
    if not statements:
        refuse_empty_warehouse(settings)
    typer.echo(views_sql(statements))
