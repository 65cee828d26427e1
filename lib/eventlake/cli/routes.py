"""``eventlake republish-routes``: the configured routes in one Spark application.

Example:
    $ EVENTLAKE_REPUBLISH_ROUTES='[{"source": "raw", "target": "orders"}]' \\
        eventlake republish-routes
    republish raw -> orders: read=10 republished=10 rejected=0 batches=1 seconds=3.0
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eventlake.cli.common import (
    BootstrapOption,
    WarehouseOption,
    app,
    job_settings,
    refused,
    run_job,
)
from eventlake.core.errors import REFUSED_EXIT_CODE, EventlakeError


@app.command("republish-routes")
def republish_routes(
    route: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SOURCE>TARGET",
            help="A configured route to run, as source>target; repeat for several "
            "(default: every route of EVENTLAKE_REPUBLISH_ROUTES).",
        ),
    ] = None,
    outcomes_file: Annotated[
        Path | None,
        typer.Option(
            help="Write each route's outcome (republished, or refused and why) to this JSON "
            "file, as the republish DAG's per-route tasks read it; with it, a run that "
            "refused some of its routes and ran the others exits 0."
        ),
    ] = None,
    bootstrap_servers: BootstrapOption = None,
    warehouse: WarehouseOption = None,
) -> None:
    """Republish the configured routes (EVENTLAKE_REPUBLISH_ROUTES, the options of
    `eventlake republish` by name) one after another in one Spark application: what the
    republish DAG submits. Routes with nothing new are found before Spark starts.

    Prints a line per route. A route refused (a source topic Kafka does not have) is
    reported as that route's and the others run; exit 2 then, unless --outcomes-file.
    """
    from eventlake.core.settings import RepublishRoute
    from eventlake.republish.routes import RoutesRun, route_request, run_routes, selected_routes
    from eventlake.runs.outcomes import write_outcomes
    from eventlake.status.pending import nothing_to_send

    settings = job_settings(bootstrap_servers, warehouse)
    with refused():
        routes = selected_routes(settings.republish_routes, route or [])
    if not routes:
        typer.echo("republish: no route is configured (EVENTLAKE_REPUBLISH_ROUTES)")
        return

    def idle(chosen: RepublishRoute) -> bool:
        try:
            return nothing_to_send(settings, route_request(chosen))
        except EventlakeError:
            return False  # refused: the run says why, as that route's

    quiet = [r.name for r in routes if idle(r)]
    busy = [r for r in routes if r.name not in quiet]
    run = run_job(settings, "eventlake-republish", run_routes, busy) if busy else RoutesRun()
    run.idle = quiet
    for line in run.lines():
        typer.echo(line)
    if outcomes_file is not None:
        write_outcomes(outcomes_file, run.outcomes([r.name for r in routes]))
    elif run.refused:
        names = ", ".join(sorted(run.refused))
        others = "; the other routes ran" if run.summaries or run.idle else ""
        typer.echo(f"error: republish refused {names}{others}", err=True)
        raise typer.Exit(REFUSED_EXIT_CODE)
