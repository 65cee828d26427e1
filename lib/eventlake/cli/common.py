"""What every ``eventlake`` command shares: the app, the common options, settings, errors.

Example:
    >>> from eventlake.cli.common import app, fail
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def refused(*errors: type[Exception]) -> Iterator[None]:
    """Turn one of ``errors`` raised in the block into ``error: <message>`` and exit 2.

    The job commands list the errors that mean "refused" (bad arguments, a checkpoint of
    another run, no jars, no broker): those deserve a one-line reason, not a traceback.

    Example:
        >>> with refused(ValueError):
        ...     int("ten")  # prints "error: invalid literal ..." and exits 2
    """
    try:
        yield
    except errors as error:
        fail(str(error), code=2)
