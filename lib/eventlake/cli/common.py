"""What every ``eventlake`` command shares: the app, the common options, settings, errors.

Example:
    >>> from eventlake.cli.common import app, fail
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from eventlake.settings import Settings, load_settings

app = typer.Typer(
    help="eventlake: land CloudEvents from Kafka in Delta Lake tables.",
    no_args_is_help=True,
    add_completion=False,
)

BootstrapOption = Annotated[
    str | None,
    typer.Option(help="Kafka bootstrap servers (default: EVENTLAKE_BOOTSTRAP_SERVERS)."),
]
WarehouseOption = Annotated[
    Path | None, typer.Option(help="Warehouse folder (default: EVENTLAKE_WAREHOUSE).")
]
#: ``--trigger`` of the streaming jobs (ingest, republish), declared once so that their
#: help cannot drift apart; each command gives the default ("available-now").
TriggerOption = Annotated[
    str,
    typer.Option(
        help="'available-now' (read what is there, then stop) or "
        "'processing-time=<interval>' (run until stopped)."
    ),
]


def job_settings(bootstrap_servers: str | None = None, warehouse: Path | None = None) -> Settings:
    """The settings with a command's ``--bootstrap-servers`` and ``--warehouse`` applied.

    Example:
        >>> job_settings(warehouse=Path("/tmp/lake")).warehouse
        PosixPath('/tmp/lake')
    """
    return load_settings(bootstrap_servers=bootstrap_servers, warehouse=warehouse)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: <message>`` in red on stderr and exit with ``code``.

    Example:
        >>> fail("no Delta tables", code=2)
    """
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)
