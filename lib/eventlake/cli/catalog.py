"""``eventlake catalog``: the warehouse's tables by name in the metastore.

Example:
    $ EVENTLAKE_METASTORE_URI=thrift://127.0.0.1:9083 eventlake catalog
    name              | path                         |
    ------------------+------------------------------+---------------
    eventlake.events  | /work/var/warehouse/events   | registered now
"""

from __future__ import annotations

import typer

from eventlake.cli.common import (
    WarehouseOption,
    app,
    fail,
    job_settings,
    refused,
    stopped_with_a_line,
)
from eventlake.core.errors import REFUSED_EXIT_CODE
from eventlake.core.text_table import text_table


@app.command("catalog")
def catalog_command(warehouse: WarehouseOption = None) -> None:
    """Register the warehouse's tables that the metastore (EVENTLAKE_METASTORE_URI) does
    not name yet, as external Delta tables in schema eventlake (jobs register the tables
    they make; this catches up), and print every table's name and path."""
    from eventlake.spark.session import build_spark_session
    from eventlake.warehouse.catalog import catalog_name, register_warehouse
    from eventlake.warehouse.names import warehouse_tables

    settings = job_settings(warehouse=warehouse)
    if not settings.metastore_uri:
        fail(
            "No metastore is set: start one with `eventlake metastore start` and set "
            "EVENTLAKE_METASTORE_URI=thrift://127.0.0.1:9083 (or your metastore's URI).",
            code=REFUSED_EXIT_CODE,
        )
    tables = warehouse_tables(settings)
    if not tables:
        fail(f"no Delta tables under {settings.warehouse}: run `eventlake ingest` first")
    with refused():
        spark = build_spark_session(settings, app_name="eventlake-catalog")
    after_stop = "the names registered so far stay; run it again for the rest"
    with refused(), stopped_with_a_line(spark, "catalog", after_stop):
        added = set(register_warehouse(spark, settings))
    rows = [
        [catalog_name(table), str(path), "registered now" if catalog_name(table) in added else ""]
        for table, path in tables
    ]
    typer.echo("\n".join(text_table(["name", "path", ""], rows)))
