"""The commands of the local platform (:mod:`eventlake.local`): the broker, the local
Airflow, the sample stream and the demo.

Their imports of :mod:`eventlake.local` stay inside the commands, so that the job
entry points, which import :mod:`eventlake.cli`, never load the local platform.

Example:
    $ eventlake broker start
    $ eventlake samples --topic demo.orders --count 500
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Protocol

import typer

from eventlake.cli.common import (
    BootstrapOption,
    app,
    fail,
    job_settings,
    refused,
    topic_option,
)
from eventlake.core.errors import EventlakeError

broker_app = typer.Typer(
    help="Run the local single-node Kafka broker (KRaft).", no_args_is_help=True
)
app.add_typer(broker_app, name="broker")
airflow_app = typer.Typer(help="The local Airflow that `make demo` starts.", no_args_is_help=True)
app.add_typer(airflow_app, name="airflow")
s3_server_app = typer.Typer(
    help="Run the local S3 server (s3proxy; the tests', the cluster's, `make demo-s3`'s).",
    no_args_is_help=True,
)
app.add_typer(s3_server_app, name="s3-server")
metastore_app = typer.Typer(
    help="Run the local Hive Metastore (the catalog Spark, spark-sql and Trino share).",
    no_args_is_help=True,
)
app.add_typer(metastore_app, name="metastore")
trino_app = typer.Typer(
    help="Run the local Trino (its Delta Lake catalog on the metastore; make trino first).",
    no_args_is_help=True,
)
app.add_typer(trino_app, name="trino")


class _Status(Protocol):
    @property
    def running(self) -> bool: ...

    def describe(self) -> str: ...


class _LocalServer(Protocol):
    """What a project-local server (the broker, the S3 server) offers its commands."""

    def pid(self) -> int | None: ...
    def start(self, timeout: float = ...) -> _Status: ...
    def stop(self) -> bool: ...
    def status(self) -> _Status: ...


def server_commands(group: typer.Typer, server: Callable[[], _LocalServer], what: str) -> None:
    """``start``, ``stop`` and ``status`` of a project-local server under ``group``.

    Example:
        >>> server_commands(broker_app, _broker, "broker")   # eventlake broker start ...
    """

    def start(timeout: float = 60.0) -> None:
        running = server()
        was_running = running.pid() is not None
        try:
            status = running.start(timeout=timeout)
        except EventlakeError as error:  # BrokerError, S3ServerError, MetastoreError
            fail(str(error))
        typer.echo(("already running: " if was_running else "started: ") + status.describe())

    # Objects, not strings (this module's annotations are): typer reads them when the
    # command runs, where ``what`` is out of reach.
    start.__annotations__["timeout"] = Annotated[
        float, typer.Option(help=f"Seconds to wait for the {what}.")
    ]
    group.command(
        "start", help=f"Start the {what} (no-op when it runs already); wait until it answers."
    )(start)

    @group.command("stop", help=f"Stop the {what} cleanly.")
    def stop() -> None:
        stopped = server().stop()
        typer.echo(f"{what} stopped" if stopped else f"{what} was not running")

    @group.command(
        "status", help=f"Say whether the {what} runs; exit code 0 when it does, 3 when it does not."
    )
    def status() -> None:
        status = server().status()
        typer.echo(status.describe())
        if not status.running:
            raise typer.Exit(3)


def _broker() -> _LocalServer:
    from eventlake.local.broker import LocalBroker
    from eventlake.local.settings import load_local_settings

    return LocalBroker(load_local_settings())


def _s3_server() -> _LocalServer:
    from eventlake.local.s3_server import LocalS3Server
    from eventlake.local.settings import load_local_settings

    return LocalS3Server(load_local_settings())


def _metastore() -> _LocalServer:
    from eventlake.local.metastore import LocalMetastore
    from eventlake.local.settings import load_local_settings

    return LocalMetastore(load_local_settings())


def _trino() -> _LocalServer:
    from eventlake.local.settings import load_local_settings
    from eventlake.local.trino import LocalTrino

    return LocalTrino(load_local_settings())


server_commands(broker_app, _broker, "broker")
server_commands(s3_server_app, _s3_server, "S3 server")
server_commands(metastore_app, _metastore, "metastore")
server_commands(trino_app, _trino, "trino")


@trino_app.command("query")
def trino_query(sql: Annotated[str, typer.Argument(help="One statement of Trino SQL.")]) -> None:
    """Run a statement on the local Trino (catalog delta: delta.eventlake.events); print
    the columns, then one tab-separated line a row."""
    from eventlake.local.settings import load_local_settings
    from eventlake.local.trino import LocalTrino, TrinoError

    try:
        result = LocalTrino(load_local_settings()).query(sql)
    except TrinoError as error:
        fail(str(error))
    typer.echo("\t".join(name for name, _ in result.columns))
    for row in result.rows:
        typer.echo("\t".join("NULL" if value is None else str(value) for value in row))


@app.command()
def samples(
    topic: Annotated[str, topic_option("Topic to produce to (created, compacted).")],
    count: Annotated[int, typer.Option(min=1, help="Records to produce.")] = 500,
    partitions: Annotated[int, typer.Option(min=1, help="Partitions of a new topic.")] = 3,
    seed: Annotated[
        int | None,
        typer.Option(help="Random seed: the same seed gives the same records (default: new ones)."),
    ] = None,
    bootstrap_servers: BootstrapOption = None,
) -> None:
    """Produce a realistic sample stream of CloudEvents (both modes, tombstones, bad records)."""
    from eventlake.kafka.connection import check_connection
    from eventlake.local.samples import produce_samples

    settings = job_settings(bootstrap_servers)
    with refused():
        check_connection(settings)
    produced = produce_samples(settings, topic=topic, count=count, partitions=partitions, seed=seed)
    typer.echo(
        json.dumps({"topic": produced.topic, "valid": produced.valid, "invalid": produced.invalid})
    )


@app.command()
def demo(
    count: Annotated[int, typer.Option(min=1, help="Sample records to produce.")] = 500,
    keep_ui: Annotated[
        bool,
        typer.Option("--keep-ui", help="Leave Airflow running at the end (stop: make stop)."),
    ] = False,
    object_store: Annotated[
        bool,
        typer.Option(
            "--object-store",
            help="Keep the warehouse on the local S3 server (started here; "
            "s3a://eventlake/demo-warehouse), the DAGs reaching it through Airflow's "
            "aws_default connection.",
        ),
    ] = False,
) -> None:
    """The whole platform locally: broker, sample stream, Airflow, the DAGs, queries.

    Triggers eventlake_ingest, eventlake_republish and eventlake_quality through
    Airflow's REST API, waits for each run, then prints queries of the Delta tables.
    """
    from eventlake.core.errors import EventlakeError
    from eventlake.local.demo import (
        BY_NAME_QUERY,
        QUERIES,
        next_steps,
        on_the_local_s3_server,
        run_demo,
    )
    from eventlake.local.settings import load_local_settings
    from eventlake.spark.session import build_spark_session
    from eventlake.views.query import register_tables, run_query
    from eventlake.warehouse.catalog import register_warehouse

    settings = load_local_settings()
    try:
        if object_store:
            settings = on_the_local_s3_server(settings, say=typer.echo)
        run = run_demo(settings, count=count, keep_ui=keep_ui, say=typer.echo)
    except EventlakeError as error:  # DemoError, LocalAirflowError, S3ServerError
        fail(str(error))
    settings = settings.model_copy(update={"metastore_uri": run.metastore_uri})
    spark = build_spark_session(settings, app_name="eventlake-demo-queries")
    register_tables(spark, settings)
    register_warehouse(spark, settings)  # tables of a warehouse landed before the metastore
    for title, sql in (*QUERIES, BY_NAME_QUERY):
        typer.echo(f"\n== {title}\n{run_query(spark, sql)}")
    typer.echo(f"\nTables: {settings.warehouse}")
    if object_store:
        typer.echo(
            "The commands below need the warehouse's settings in their environment: "
            f"EVENTLAKE_WAREHOUSE={settings.warehouse}, EVENTLAKE_S3_ENDPOINT="
            f"{settings.s3_endpoint}, EVENTLAKE_S3_PATH_STYLE=true, and the server's keys "
            f"({settings.s3_server_dir / 'credentials.json'}: identity and credential) as "
            "EVENTLAKE_S3_ACCESS_KEY_ID and EVENTLAKE_S3_SECRET_ACCESS_KEY."
        )
    for line in next_steps(run.url, keep_ui=keep_ui):
        typer.echo(line)


@airflow_app.command("stop")
def airflow_stop() -> None:
    """Stop the local Airflow left running by `eventlake demo --keep-ui`."""
    from eventlake.local.airflow import stop_local_airflow
    from eventlake.local.settings import load_local_settings

    stopped = stop_local_airflow(load_local_settings().airflow_home)
    typer.echo("airflow stopped" if stopped else "airflow was not running")


@app.command("class-archive")
def class_archive(
    force: Annotated[
        bool, typer.Option("--force", help="Build again even when the archive is current.")
    ] = False,
) -> None:
    """Build the Spark driver's class archive (make setup runs this): every eventlake job
    then starts seconds sooner. A no-op while the archive matches this Java, pyspark and
    jars; EVENTLAKE_CLASS_ARCHIVE names its file (empty: none)."""
    import time

    from eventlake.local.class_archive import ClassArchiveError, build_archive
    from eventlake.spark.conf import is_current

    settings = job_settings()
    if settings.class_archive is None:
        typer.echo("EVENTLAKE_CLASS_ARCHIVE is empty: Spark drivers run without a class archive")
        return
    if not force and is_current(settings):
        typer.echo(f"class archive current: {settings.class_archive}")
        return
    typer.echo("building the Spark driver's class archive (one small driver run, ~40 s)")
    started = time.monotonic()
    try:
        archive = build_archive(settings)
    except ClassArchiveError as error:
        fail(f"class archive not built: {error}")
    size_mb = archive.stat().st_size / 1e6
    typer.echo(
        f"built {archive} ({size_mb:.0f} MB) in {time.monotonic() - started:.0f} s: "
        "Spark drivers map it from now on"
    )
