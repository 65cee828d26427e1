"""The ``eventlake`` command line: broker, ingest, status, query, samples, republish, check,
maintain, demo, cluster.

Every option falls back to the settings (``EVENTLAKE_*`` environment variables).
The commands live by concern: ``jobs`` (ingest, reconcile, maintain, republish,
check), ``routes`` (republish-routes), ``reports`` (compaction-check, status, query),
``local`` (broker, airflow, samples, demo) and ``cluster`` (the local cluster);
importing them here registers them on :data:`app`, and ``common`` holds what they
share.

Not here: what the commands do. Each parses its options, builds the library's request
and calls the library (:mod:`eventlake.ingest`, :mod:`eventlake.republish`, ...); the
DAGs' side of the same options is :mod:`eventlake.orchestration`.

Example:
    $ eventlake broker start
    $ eventlake samples --topic demo.orders --count 500
    $ eventlake ingest --topic demo.orders
    $ eventlake query "SELECT type, count(*) FROM events GROUP BY type"
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Final

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

from eventlake.cli import catalog, cluster, jobs, local, reports, routes
from eventlake.cli.common import app, leave_without_collecting, prose
from eventlake.core.errors import REFUSED_EXIT_CODE, Refused
from eventlake.core.progress import lines_on_stdout
from eventlake.core.settings import InvalidSettingError
from eventlake.runs.stop_signals import stop_while_starting

__all__ = ["app", "catalog", "cluster", "command", "jobs", "local", "main", "reports", "routes"]

#: The order ``eventlake --help`` lists the commands in, whichever module holds them
#: (the groups, cluster, broker and airflow, come after them).
COMMAND_ORDER: Final = (
    "ingest",
    "reconcile",
    "compaction-check",
    "maintain",
    "status",
    "types",
    "query",
    "views",
    "catalog",
    "samples",
    "republish",
    "republish-routes",
    "check",
    "demo",
    "class-archive",
)

#: The commands that stop cleanly on SIGTERM or SIGINT (README: "a job stops cleanly"),
#: from their start on (:func:`eventlake.runs.stop_signals.stop_while_starting`).
STOPPABLE_COMMANDS: Final = frozenset(
    {"ingest", "republish", "republish-routes", "check", "reconcile", "maintain"}
    | {"compaction-check", "query", "types", "views", "catalog"}
)


def _command_name(info: CommandInfo) -> str:
    if info.name:
        return info.name
    return get_command_name(info.callback.__name__) if info.callback else ""


def _position(info: CommandInfo) -> int:
    name = _command_name(info)
    return COMMAND_ORDER.index(name) if name in COMMAND_ORDER else len(COMMAND_ORDER)


app.registered_commands.sort(key=_position)


def _help_as_prose(commands: typer.Typer) -> None:
    """Every command's and group's help of ``commands`` as :func:`prose`: typer shows a
    docstring's line breaks as they are."""
    # Unset helps are typer's placeholders, not strings: left as they are.
    if isinstance(commands.info.help, str):
        commands.info.help = prose(commands.info.help)
    for info in commands.registered_commands:
        docstring = inspect.getdoc(info.callback) if info.callback else None
        given = info.help if isinstance(info.help, str) else docstring
        info.help = prose(given)
    for group in commands.registered_groups:
        if isinstance(group.help, str):
            group.help = prose(group.help)
        if group.typer_instance is not None:
            _help_as_prose(group.typer_instance)


_help_as_prose(app)


def main(arguments: Sequence[str] | None = None) -> None:
    """Entry point of the ``eventlake`` command, ``python -m eventlake.cli`` and the
    jobs/ scripts (``arguments``: the command's, ``sys.argv``'s by default). A setting
    the environment gives a value it cannot take is refused in one line (exit 2),
    whichever command read it.

    Example:
        $ EVENTLAKE_SHUFFLE_PARTITIONS=0 eventlake status
        error: EVENTLAKE_SHUFFLE_PARTITIONS: Input should be greater than or equal to 1 ...
    """
    lines_on_stdout()
    try:
        app(list(sys.argv[1:] if arguments is None else arguments))
    except InvalidSettingError as error:
        # Outside the command's context: typer.Exit (fail) would not be caught here.
        typer.echo(
            f"error: {error}. See docs/settings.md for every EVENTLAKE_* variable.", err=True
        )
        sys.exit(REFUSED_EXIT_CODE)
    except Refused as error:
        # Refused where a command did not expect it (a warehouse on a store eventlake
        # does not write yet, met by a report): its sentence, not a traceback.
        typer.echo(f"error: {error}", err=True)
        sys.exit(REFUSED_EXIT_CODE)


def command(arguments: Sequence[str] | None = None) -> None:
    """:func:`main` as a process's entry point (the ``eventlake`` script, ``python -m
    eventlake.cli``, the jobs/ scripts): the same, then the process exits without
    collecting its objects (:func:`eventlake.cli.common.leave_without_collecting`).

    Example:
        $ eventlake check --topic orders     # ends ~1 s sooner than main() would
    """
    given = list(sys.argv[1:] if arguments is None else arguments)
    if given and given[0] in STOPPABLE_COMMANDS:
        # From the process's first moment: a stop while the command starts (imports,
        # checks, the Spark session's start) ends it with a line, not a traceback.
        stop_while_starting(given[0])
    try:
        main(given)
    finally:
        leave_without_collecting()
