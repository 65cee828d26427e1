"""``eventlake cluster start|stop|status``: the local cluster (:mod:`eventlake.local.cluster`):
the broker, PostgreSQL, a Spark standalone master and workers, and Airflow on them.

Like the other commands of the local platform, the imports of :mod:`eventlake.local`
stay inside the commands.

Example:
    $ eventlake cluster start
    $ eventlake cluster status
    $ eventlake cluster stop
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from eventlake.cli.common import app, fail
from eventlake.core.errors import REFUSED_EXIT_CODE
from eventlake.core.text_table import text_table

if TYPE_CHECKING:
    from eventlake.local.processes import ComponentStatus

cluster_app = typer.Typer(
    help="The local cluster on 127.0.0.1: Kafka broker, PostgreSQL, a Spark standalone "
    "master and workers, and Airflow (api-server, scheduler, dag-processor, triggerer) "
    "running the DAGs on them. Ports and folders: EVENTLAKE_* settings (cluster_dir, "
    "spark_master_port, postgres_port, cluster_airflow_port, ...).",
    no_args_is_help=True,
)
app.add_typer(cluster_app, name="cluster")

#: Exit code of ``status`` when a process of the cluster is down (as ``broker status``).
NOT_RUNNING = 3


def state_of(status: ComponentStatus) -> str:
    """``running``, ``not answering`` (alive, silent) or ``stopped``.

    Example:
        >>> state_of(ComponentStatus("postgres", None, "127.0.0.1:5433", False))
        'stopped'
    """
    if status.pid is None:
        return "stopped"
    return "running" if status.answering else "not answering"


def status_lines(statuses: Sequence[ComponentStatus]) -> list[str]:
    """The status table: component, state, pid, address, detail.

    Example:
        >>> status_lines([ComponentStatus("postgres", 42, "127.0.0.1:5433", True)])[2]
        'postgres  | running | 42  | 127.0.0.1:5433 | '
    """
    rows = [[s.name, state_of(s), str(s.pid or "-"), s.address, s.detail] for s in statuses]
    return text_table(["component", "state", "pid", "address", "detail"], rows)


@cluster_app.command("start")
def cluster_start(
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for each part to answer.")
    ] = 240.0,
) -> None:
    """Start every part of the cluster that is not running, and wait until it answers.

    Exit 2 when a port is taken (nothing is started), 1 when a part fails to start
    (what this command started is stopped again; the message names the log).
    """
    from eventlake.local.cluster import ClusterError, ClusterRefused, LocalCluster
    from eventlake.local.settings import load_local_settings

    cluster = LocalCluster(load_local_settings())
    try:
        cluster.start(timeout=timeout, say=typer.echo)
    except ClusterRefused as error:
        fail(str(error), code=REFUSED_EXIT_CODE)
    except ClusterError as error:
        fail(f"{error}\nLogs: {cluster.logs}", code=1)
    typer.echo("\n".join(status_lines(cluster.status())))
    typer.echo(
        f"Airflow: http://127.0.0.1:{cluster.airflow_port} (no login); Spark master: "
        f"{cluster.spark.url} (UI {cluster.spark.master_ui}). Stop: eventlake cluster stop"
    )
    if cluster.spark.secret() is not None:
        typer.echo(
            "Spark RPC is authenticated and encrypted. A job you submit yourself needs the "
            f"secret: EVENTLAKE_SPARK_AUTH_SECRET=$(cat {cluster.spark.secret_file}) "
            "(or your own EVENTLAKE_SPARK_AUTH_SECRET, when set at start)."
        )


@cluster_app.command("stop")
def cluster_stop() -> None:
    """Stop every part of the cluster (Airflow first, the broker last): SIGTERM, then
    SIGKILL what has not ended after 30 s."""
    from eventlake.local.cluster import LocalCluster
    from eventlake.local.settings import load_local_settings

    stopped = LocalCluster(load_local_settings()).stop()
    typer.echo(f"stopped: {', '.join(stopped)}" if stopped else "the cluster was not running")


@cluster_app.command("status")
def cluster_status(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Say what runs: each process, whether it answers on its port, the workers the
    master lists alive. Exit 0 when everything runs, 3 otherwise."""
    from eventlake.local.cluster import LocalCluster
    from eventlake.local.settings import load_local_settings

    statuses = LocalCluster(load_local_settings()).status()
    if as_json:
        for s in statuses:
            typer.echo(
                json.dumps(
                    {
                        "component": s.name,
                        "state": state_of(s),
                        "pid": s.pid,
                        "address": s.address,
                        "detail": s.detail,
                    }
                )
            )
    else:
        typer.echo("\n".join(status_lines(statuses)))
    if not all(s.running for s in statuses):
        raise typer.Exit(NOT_RUNNING)
