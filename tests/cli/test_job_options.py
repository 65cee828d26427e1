"""Each job option is declared once per layer and held equal here: every option of a job's
command (eventlake.cli.jobs) is a field of the job's request with the same default, and
every field of the request is an option of its command. (The DAGs' params are held to the
commands' flags in tests/orchestration/test_options.py.)"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

import pytest
import typer.main

from eventlake.cli import app
from eventlake.ingest.request import IngestRequest
from eventlake.maintenance.request import MaintenanceRequest
from eventlake.quality.request import CheckRequest
from eventlake.republish.request import RepublishRequest

COMMANDS: Any = typer.main.get_command(app)
#: Options every job has that choose where it runs, not what it does: settings.
WHERE: frozenset[str] = frozenset({"bootstrap_servers", "warehouse"})
#: Options that choose where a job reports what it did, not what it does.
REPORTS: frozenset[str] = frozenset({"outcomes_file"})

JOBS = [("ingest", IngestRequest), ("republish", RepublishRequest),
        ("maintain", MaintenanceRequest), ("check", CheckRequest)]  # fmt: skip


def _field_of(option: str, request: type) -> str | None:
    """The request field a command option fills: its name, or the plural of a
    repeatable option's (``--topic`` fills ``topics``)."""
    names = {each.name for each in fields(request)}
    for name in (option, f"{option}s"):
        if name in names:
            return name
    return None


def _plain(value: Any) -> Any:
    """One form for "nothing given": a repeatable option's None is a request's ()."""
    if value is None or value == ():
        return ()
    return tuple(value) if isinstance(value, list) else value


def _options(command: str) -> dict[str, Any]:
    return {
        str(param.name): param.default
        for param in COMMANDS.commands[command].params
        if param.name not in WHERE | REPORTS
    }


@pytest.mark.parametrize(("command", "request_type"), JOBS, ids=[job for job, _ in JOBS])
def test_every_option_of_the_command_is_a_request_field(command: str, request_type: type) -> None:
    missing = [name for name in _options(command) if _field_of(name, request_type) is None]
    assert not missing, f"eventlake {command} options with no {request_type.__name__} field"


@pytest.mark.parametrize(("command", "request_type"), JOBS, ids=[job for job, _ in JOBS])
def test_every_request_field_is_an_option_of_the_command(command: str, request_type: type) -> None:
    filled = {_field_of(name, request_type) for name in _options(command)}
    missing = [each.name for each in fields(request_type) if each.name not in filled]
    assert not missing, f"{request_type.__name__} fields eventlake {command} cannot set"


@pytest.mark.parametrize(("command", "request_type"), JOBS, ids=[job for job, _ in JOBS])
def test_an_option_and_its_field_default_alike(command: str, request_type: type) -> None:
    defaults = {each.name: each.default for each in fields(request_type)}
    differ = {
        name: (default, defaults[field])
        for name, default in _options(command).items()
        if (field := _field_of(name, request_type)) is not None
        and defaults[field] is not MISSING
        and _plain(default) != _plain(defaults[field])
    }
    assert not differ, f"eventlake {command}: option default vs {request_type.__name__}'s"
