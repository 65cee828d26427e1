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
    not name yet, as external Delta tables in schema EVENTLAKE_METASTORE_SCHEMA (jobs
    register the tables they make; this catches up), and print every table's name and
    path. Exit 1 when a name is registered for another path (another warehouse's table):
    give this warehouse a schema of its own."""
    from eventlake.spark.session import build_spark_session
    from eventlake.warehouse.catalog import (
        catalog_name,
        register_warehouse,
        registered_location,
        same_location,
    )
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
    rows, elsewhere = [], []
    with refused(), stopped_with_a_line(spark, "catalog", after_stop):
        added = set(register_warehouse(spark, settings))
        for table, path in tables:
            name = catalog_name(table, settings.metastore_schema)
            registered = registered_location(spark, name) or ""
            if name in added:
                note = "registered now"
            elif same_location(registered, str(path)):
                note = ""
            else:
                note = f"registered for {registered}"
                elsewhere.append(name)
            rows.append([name, str(path), note])
    typer.echo("\n".join(text_table(["name", "path", ""], rows)))
    if elsewhere:
        fail(
            f"{', '.join(elsewhere)} name another warehouse's tables in this metastore: set "
            "EVENTLAKE_METASTORE_SCHEMA to a schema of this warehouse's own (or drop those "
            "names: dropping an external table deletes no data)."
        )
