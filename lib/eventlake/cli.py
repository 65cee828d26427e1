"""The ``eventlake`` command line: broker, ingest, status, query, samples, republish, check,
maintain, demo.

Every option falls back to the settings (``EVENTLAKE_*`` environment variables).

Example:
    $ eventlake broker start
    $ eventlake samples --topic demo.orders --count 500
    $ eventlake ingest --topic demo.orders
    $ eventlake query "SELECT type, count(*) FROM events GROUP BY type"
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from eventlake.settings import Settings, load_settings

app = typer.Typer(
    help="eventlake: land CloudEvents from Kafka in Delta Lake tables.",
    no_args_is_help=True,
    add_completion=False,
)
broker_app = typer.Typer(
    help="Run the local single-node Kafka broker (KRaft).", no_args_is_help=True
)
app.add_typer(broker_app, name="broker")
airflow_app = typer.Typer(help="The local Airflow that `make demo` starts.", no_args_is_help=True)
app.add_typer(airflow_app, name="airflow")

BootstrapOption = Annotated[
    str | None,
    typer.Option(help="Kafka bootstrap servers (default: EVENTLAKE_BOOTSTRAP_SERVERS)."),
]
WarehouseOption = Annotated[
    Path | None, typer.Option(help="Warehouse folder (default: EVENTLAKE_WAREHOUSE).")
]


def _settings(bootstrap_servers: str | None = None, warehouse: Path | None = None) -> Settings:
    return load_settings(bootstrap_servers=bootstrap_servers, warehouse=warehouse)


def _fail(message: str, code: int = 1) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


@broker_app.command("start")
def broker_start(
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the broker.")] = 60.0,
) -> None:
    """Start the broker (no-op when it runs already); wait until it answers."""
    from eventlake.local.broker import BrokerError, LocalBroker
    from eventlake.local.settings import load_local_settings

    broker = LocalBroker(load_local_settings())
    was_running = broker.pid() is not None
    try:
        status = broker.start(timeout=timeout)
    except BrokerError as error:
        _fail(str(error))
    typer.echo(("already running: " if was_running else "started: ") + status.describe())


@broker_app.command("stop")
def broker_stop() -> None:
    """Stop the broker cleanly."""
    from eventlake.local.broker import LocalBroker
    from eventlake.local.settings import load_local_settings

    stopped = LocalBroker(load_local_settings()).stop()
    typer.echo("broker stopped" if stopped else "broker was not running")


@broker_app.command("status")
def broker_status() -> None:
    """Say whether the broker runs; exit code 0 when it does, 3 when it does not."""
    from eventlake.local.broker import LocalBroker
    from eventlake.local.settings import load_local_settings

    status = LocalBroker(load_local_settings()).status()
    typer.echo(status.describe())
    if not status.running:
        raise typer.Exit(3)


@app.command()
def ingest(
    topic: Annotated[
        list[str] | None, typer.Option("--topic", help="Topic to read; repeat for several.")
    ] = None,
    topic_pattern: Annotated[
        str | None, typer.Option(help="Java regex of topics to subscribe to instead.")
    ] = None,
    trigger: Annotated[
        str,
        typer.Option(
            help="'available-now' (read what is there, then stop) or "
            "'processing-time=<interval>' (run until stopped)."
        ),
    ] = "available-now",
    starting_offsets: Annotated[
        str,
        typer.Option(
            help="'earliest', 'latest' or per-partition JSON "
            '({"topic":{"0":42}}); used when the checkpoint is new.'
        ),
    ] = "earliest",
    ending_offsets: Annotated[
        str | None,
        typer.Option(
            help="'latest' or per-partition JSON: makes a bounded batch run "
            "(backfill/replay) that adds only records not already in the tables."
        ),
    ] = None,
    checkpoint_name: Annotated[
        str | None, typer.Option(help="Checkpoint folder name under <warehouse>/_checkpoints.")
    ] = None,
    state: Annotated[
        bool, typer.Option("--state", help="Also keep state/<topic> (latest event per key).")
    ] = False,
    auto_reconcile: Annotated[
        bool,
        typer.Option(
            "--auto-reconcile",
            help="Reconcile a state table when tombstones may "
            "have been compacted away unseen (otherwise only warn).",
        ),
    ] = False,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Ingest CloudEvents (binary and structured mode) into the events and rejects tables.

    Prints one summary line at the end: records read, events, rejects by reason, batches.
    """
    from eventlake.checkpoint import CheckpointBusyError, CheckpointMismatchError
    from eventlake.ingest import IngestError, IngestRequest, run_ingest
    from eventlake.kafka import KafkaConnectionError
    from eventlake.spark import MissingJarsError, build_spark_session

    settings = _settings(bootstrap_servers, warehouse)
    try:
        request = IngestRequest(
            topics=tuple(topic or ()),
            topic_pattern=topic_pattern,
            trigger=trigger,
            starting_offsets=starting_offsets,
            ending_offsets=ending_offsets,
            checkpoint_name=checkpoint_name,
            state=state,
            auto_reconcile=auto_reconcile,
        )
        spark = build_spark_session(settings, app_name="eventlake-ingest")
        summary = run_ingest(spark, settings, request)
    except (
        IngestError,
        CheckpointMismatchError,
        CheckpointBusyError,
        MissingJarsError,
        KafkaConnectionError,
    ) as error:
        _fail(str(error), code=2)
    typer.echo(summary.line())


@app.command()
def reconcile(
    topic: Annotated[str, typer.Option(help="Compacted topic whose state table to rebuild.")],
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Make state/<topic> equal to the topic: read it in full, keep the latest record per
    key, upsert what differs and delete keys that no longer exist on the topic."""
    from eventlake.spark import build_spark_session
    from eventlake.state import reconcile_state

    settings = _settings(bootstrap_servers, warehouse)
    spark = build_spark_session(settings, app_name="eventlake-reconcile")
    typer.echo(reconcile_state(spark, settings, topic).line())


@app.command("compaction-check")
def compaction_check(
    topic: Annotated[list[str], typer.Option("--topic", help="Topic to check; repeatable.")],
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Say whether a state table may have missed tombstones; exit 4 when one may have."""
    from eventlake.compaction import check_compaction
    from eventlake.spark import build_spark_session

    settings = _settings(bootstrap_servers, warehouse)
    spark = build_spark_session(settings, app_name="eventlake-compaction-check")
    reports = [check_compaction(spark, settings, t) for t in topic]
    for report in reports:
        typer.echo(report.message)
    if any(r.at_risk for r in reports):
        raise typer.Exit(4)


@app.command()
def maintain(
    retention_hours: Annotated[
        float,
        typer.Option(help="VACUUM retention in hours (default: 168, Delta's safety default)."),
    ] = 168.0,
    allow_below_safety: Annotated[
        bool,
        typer.Option(
            help="Allow a retention below 168 hours (files that running streams or readers "
            "of recent versions need may be deleted)."
        ),
    ] = False,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic", help="State topic to check; repeatable (default: every state table)."
        ),
    ] = None,
    auto_reconcile: Annotated[
        bool,
        typer.Option(help="Rebuild a state table that may have missed tombstones."),
    ] = True,
    dry_run: Annotated[
        bool, typer.Option(help="Change nothing; say what VACUUM would delete.")
    ] = False,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Upkeep of the warehouse: the compaction check of every state table (reconciling
    those at risk), then Delta OPTIMIZE and VACUUM of every table. One line per step and
    a summary; exit 2 when the arguments are refused, 1 when the compaction check failed
    (the tables are still maintained)."""
    from eventlake.maintenance import MaintenanceError, MaintenanceRequest, run_maintenance
    from eventlake.spark import build_spark_session

    try:
        request = MaintenanceRequest(
            retention_hours=retention_hours,
            allow_below_safety=allow_below_safety,
            topics=tuple(topic or ()),
            auto_reconcile=auto_reconcile,
            dry_run=dry_run,
        )
    except MaintenanceError as error:
        _fail(str(error), code=2)
        return
    settings = _settings(bootstrap_servers, warehouse)
    spark = build_spark_session(settings, app_name="eventlake-maintenance")
    summary = run_maintenance(spark, settings, request, report=typer.echo)
    typer.echo(summary.line())
    if summary.sweep_failed:
        raise typer.Exit(1)


@app.command()
def status(
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", help="Only the checkpoints reading this topic; repeatable."),
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
    from eventlake.status import warehouse_status

    report = warehouse_status(_settings(bootstrap_servers, warehouse), topics=tuple(topic or ()))
    typer.echo(json.dumps(report.to_json(), indent=2) if as_json else report.render())
    if report.kafka_error:
        raise typer.Exit(3)


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="SQL over the tables events, rejects, ...")],
    output_format: Annotated[
        str, typer.Option("--format", help="'table' or 'json' (JSON lines).")
    ] = "table",
    limit: Annotated[int, typer.Option(help="Rows to print at most.")] = 50,
    warehouse: WarehouseOption = None,
) -> None:
    """Run SQL over the warehouse's Delta tables, registered by name."""
    from eventlake.query import register_tables, run_query
    from eventlake.spark import build_spark_session

    if output_format not in {"table", "json"}:
        _fail("--format must be 'table' or 'json'", code=2)
    settings = _settings(warehouse=warehouse)
    spark = build_spark_session(settings, app_name="eventlake-query")
    names = register_tables(spark, settings)
    if not names:
        _fail(f"no Delta tables under {settings.warehouse}: run `eventlake ingest` first")
    typer.echo(run_query(spark, sql, output_format=output_format, limit=limit))


@app.command()
def samples(
    topic: Annotated[str, typer.Option(help="Topic to produce to (created, compacted).")],
    count: Annotated[int, typer.Option(min=1, help="Records to produce.")] = 500,
    partitions: Annotated[int, typer.Option(min=1, help="Partitions of a new topic.")] = 3,
    seed: Annotated[int, typer.Option(help="Random seed of the stream.")] = 7,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Produce a realistic sample stream of CloudEvents (both modes, tombstones, bad records)."""
    from eventlake.local.samples import produce_samples

    settings = _settings(bootstrap_servers)
    produced = produce_samples(settings, topic=topic, count=count, partitions=partitions, seed=seed)
    typer.echo(
        json.dumps({"topic": produced.topic, "valid": produced.valid, "invalid": produced.invalid})
    )


@app.command()
def republish(
    source: Annotated[str, typer.Option(help="Topic to read.")],
    target: Annotated[str, typer.Option(help="Topic to write; created when missing.")],
    key_mapper: Annotated[
        str,
        typer.Option(
            help="'keep' (the record key as-is, any record), 'partitionkey' (the "
            "partitionkey extension), or 'attribute:<name>' (e.g. attribute:subject)."
        ),
    ] = "keep",
    on_missing: Annotated[
        str,
        typer.Option(
            help="Event without the key attribute: 'keep-key' (its old key), 'null-key', "
            "or 'reject' (to the rejects table)."
        ),
    ] = "keep-key",
    to_mode: Annotated[
        str,
        typer.Option(
            help="'keep' (value and headers byte for byte), 'binary' or 'structured' "
            "(JSON format; converts events exactly, copies those already in the mode)."
        ),
    ] = "keep",
    allow_tombstone_to_structured: Annotated[
        bool,
        typer.Option(
            "--allow-tombstone-to-structured",
            help="Convert binary events without data (tombstones) to structured records, "
            "which are updates, not deletes. Refused (rejected) by default.",
        ),
    ] = False,
    allow_no_data_to_binary: Annotated[
        bool,
        typer.Option(
            "--allow-no-data-to-binary",
            help="Convert structured events without data to binary records without value, "
            "which are tombstones. Refused (rejected) by default.",
        ),
    ] = False,
    insert_header: Annotated[
        list[str] | None,
        typer.Option(help="NAME=VALUE: append a header with a literal value; repeatable."),
    ] = None,
    drop_header: Annotated[
        list[str] | None,
        typer.Option(help="NAME: remove every header of that name; repeatable."),
    ] = None,
    attribute_header: Annotated[
        list[str] | None,
        typer.Option(help="ATTRIBUTE=HEADER: copy an event attribute into a header; repeatable."),
    ] = None,
    header_attribute: Annotated[
        list[str] | None,
        typer.Option(
            help="HEADER=EXTENSION: with --to-mode structured only, copy a header into an "
            "extension attribute the event does not have; repeatable."
        ),
    ] = None,
    trail_header: Annotated[
        str,
        typer.Option(help="Routing-trail header each hop appends to; '' for no trail."),
    ] = "eventlake-trail",
    trigger: Annotated[
        str,
        typer.Option(
            help="'available-now' (read what is there, then stop) or "
            "'processing-time=<interval>' (run until stopped)."
        ),
    ] = "available-now",
    starting_offsets: Annotated[
        str,
        typer.Option(
            help="'earliest', 'latest' or per-partition JSON; used when the checkpoint is new."
        ),
    ] = "earliest",
    ending_offsets: Annotated[
        str | None,
        typer.Option(help="'latest' or per-partition JSON: a bounded batch run, no checkpoint."),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option(min=1, help="Partitions of a new target (default: as many as the source)."),
    ] = None,
    cleanup_policy: Annotated[
        str | None,
        typer.Option(help="cleanup.policy of a new target: compact, delete or compact,delete."),
    ] = None,
    checkpoint_name: Annotated[
        str | None,
        typer.Option(
            help="Checkpoint folder under <warehouse>/_checkpoints "
            "(default: republish-<source>-<target>)."
        ),
    ] = None,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Re-key and republish a topic, e.g. keyed by entity into a compacted topic.

    The key mapper never changes the event; header transforms never touch ce_* or content-type.

    Keys land where the Java client's murmur2 partitioner puts them. Delivery: at least once.

    Records that cannot be republished go to the rejects table with a reason.

    Example: eventlake republish --source raw --target orders --key-mapper partitionkey
    """
    from eventlake.checkpoint import CheckpointBusyError, CheckpointMismatchError
    from eventlake.kafka import KafkaConnectionError
    from eventlake.republish import RepublishError, RepublishRequest, parse_pair, run_republish
    from eventlake.spark import MissingJarsError, build_spark_session

    settings = _settings(bootstrap_servers, warehouse)
    try:
        request = RepublishRequest(
            source=source,
            target=target,
            key_mapper=key_mapper,
            on_missing=on_missing,
            to_mode=to_mode,
            allow_tombstone_to_structured=allow_tombstone_to_structured,
            allow_no_data_to_binary=allow_no_data_to_binary,
            trigger=trigger,
            starting_offsets=starting_offsets,
            ending_offsets=ending_offsets,
            partitions=partitions,
            cleanup_policy=cleanup_policy,
            insert_headers=tuple(
                parse_pair(p, option="--insert-header") for p in insert_header or ()
            ),
            drop_headers=tuple(drop_header or ()),
            attribute_headers=tuple(
                parse_pair(p, option="--attribute-header") for p in attribute_header or ()
            ),
            header_attributes=tuple(
                parse_pair(p, option="--header-attribute") for p in header_attribute or ()
            ),
            trail_header=trail_header or None,
            checkpoint_name=checkpoint_name,
        )
        spark = build_spark_session(settings, app_name="eventlake-republish")
        summary = run_republish(spark, settings, request)
    except (
        RepublishError,
        CheckpointMismatchError,
        CheckpointBusyError,
        MissingJarsError,
        KafkaConnectionError,
    ) as error:
        _fail(str(error), code=2)
    typer.echo(summary.line())


@app.command()
def check(
    table: Annotated[
        str, typer.Option(help="Table to check (checks exist for events).")
    ] = "events",
    full: Annotated[
        bool,
        typer.Option("--full", help="Check the whole table, not only rows new since last check."),
    ] = False,
    topic: Annotated[str | None, typer.Option(help="Check only this topic.")] = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Run the data-quality checks (Great Expectations on Spark); rules: EVENTLAKE_QUALITY.

    Prints one line per expectation, appends them to <warehouse>/dq_results, rebuilds the
    Data Docs under <warehouse>/dq_docs. Exit code 1 when a check of severity error failed.
    """
    from eventlake.quality import CheckRequest, QualityError, run_checks
    from eventlake.spark import MissingJarsError, build_spark_session

    settings = _settings(warehouse=warehouse)
    try:
        request = CheckRequest(table=table, full=full, topic=topic)
        spark = build_spark_session(settings, app_name="eventlake-check")
        report = run_checks(spark, settings, request)
    except (QualityError, MissingJarsError) as error:
        _fail(str(error), code=2)
    typer.echo(report.render())
    if report.exit_code:
        raise typer.Exit(report.exit_code)


@app.command()
def demo(
    count: Annotated[int, typer.Option(min=1, help="Sample records to produce.")] = 500,
    keep_ui: Annotated[
        bool,
        typer.Option("--keep-ui", help="Leave Airflow running at the end (stop: make stop)."),
    ] = False,
) -> None:
    """The whole platform locally: broker, sample stream, Airflow, the DAGs, queries.

    Triggers eventlake_ingest, eventlake_republish and eventlake_quality through
    Airflow's REST API, waits for each run, then prints queries of the Delta tables.
    """
    from eventlake.local.airflow import LocalAirflowError
    from eventlake.local.demo import QUERIES, DemoError, run_demo
    from eventlake.local.settings import load_local_settings
    from eventlake.query import register_tables, run_query
    from eventlake.spark import build_spark_session

    settings = load_local_settings()
    try:
        run = run_demo(settings, count=count, keep_ui=keep_ui, say=typer.echo)
    except (DemoError, LocalAirflowError) as error:
        _fail(str(error))
    spark = build_spark_session(settings, app_name="eventlake-demo-queries")
    register_tables(spark, settings)
    for title, sql in QUERIES:
        typer.echo(f"\n== {title}\n{run_query(spark, sql)}")
    typer.echo(f'\nTables: {settings.warehouse} (eventlake query "SQL" to explore).')
    if keep_ui:
        typer.echo(
            f"Airflow UI: {run.url} (no login: local SimpleAuthManager, every user admin). "
            "Stop everything with: make stop"
        )
    else:
        typer.echo(
            "Airflow was stopped. `make demo-ui` runs the demo and leaves the UI up at "
            f"{run.url}. Stop the broker with: make stop"
        )


@airflow_app.command("stop")
def airflow_stop() -> None:
    """Stop the local Airflow left running by `eventlake demo --keep-ui`."""
    from eventlake.local.airflow import stop_local_airflow
    from eventlake.local.settings import load_local_settings

    stopped = stop_local_airflow(load_local_settings().airflow_home)
    typer.echo("airflow stopped" if stopped else "airflow was not running")


def main() -> None:
    """Entry point for ``python -m eventlake.cli`` and the jobs/ scripts."""
    app(sys.argv[1:])


if __name__ == "__main__":
    main()
