"""eventlake.orchestration.options: one table of each DAG's options, and the jobs' own
command line (eventlake.cli) holding the flags the table maps the options to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import typer.main

from eventlake.cli import app
from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.ingest import IngestParams
from eventlake.orchestration.maintenance import MaintenanceParams
from eventlake.orchestration.options import (
    cli_args,
    dag_params,
    flags,
    option,
    read_params,
    selection,
    switch,
)
from eventlake.orchestration.quality import QualityParams

COMMANDS: Any = typer.main.get_command(app)


@dataclass(frozen=True)
class Sample:
    """Every kind of option the tables use."""

    names: tuple[str, ...] = field(
        default=("x",), metadata=option("Names", "-", flag="--name", type="array")
    )
    count: float = field(default=1.0, metadata=option("Count", "-", flag="--count", type="number"))
    label: str | None = field(
        default=None, metadata=option("Label", "-", flag="--label", type=["null", "string"])
    )
    dry_run: bool = field(default=False, metadata=option("Dry run", "-", type="boolean"))
    keep: bool = field(
        default=True, metadata=option("Keep", "-", flag="--keep/--no-keep", type="boolean")
    )
    loud: bool = field(default=False, metadata=option("Loud", "-", flag="--loud", type="boolean"))
    #: Not an option: no metadata.
    internal: int = 0


def test_dag_params_follow_the_fields_and_end_with_dry_run() -> None:
    params = dag_params(Sample)

    assert list(params) == ["names", "count", "label", "keep", "loud", "dry_run"]
    assert params["names"].value == ["x"]
    assert dict(params["count"].schema) == {"type": "number", "title": "Count"}
    assert params["count"].description == "-"


@dataclass(frozen=True)
class Short:
    """Sample's switches and a selection, written with the shorthands."""

    keep: bool = switch("Keep", "-", flag="--keep/--no-keep", default=True)
    loud: bool = switch("Loud", "-", flag="--loud")
    only: tuple[str, ...] = selection("Only", "-", items={"type": "string"}, flag="--only")


def test_switch_and_selection_are_the_options_written_out() -> None:
    params = dag_params(Short)

    assert params["keep"].dump() == dag_params(Sample)["keep"].dump()
    assert params["loud"].dump() == dag_params(Sample)["loud"].dump()
    assert params["only"].value == []
    assert dict(params["only"].schema) == {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
        "title": "Only",
    }
    assert cli_args(Short(**read_params(Short, {"loud": True, "only": ["a", "b"]}))) == [
        "--keep", "--loud", "--only", "a", "--only", "b",
    ]  # fmt: skip


def test_dag_params_take_given_defaults_and_need_one_for_every_option() -> None:
    assert dag_params(IngestParams, topics=["a"])["topics"].value == ["a"]
    with pytest.raises(TypeError, match="topics"):
        dag_params(IngestParams)


def test_read_params_fill_in_defaults_and_convert_to_python() -> None:
    assert read_params(Sample, {"count": 3, "names": ["a", "b"]}) == {
        "names": ("a", "b"),
        "count": 3.0,
        "label": None,
        "dry_run": False,
        "keep": True,
        "loud": False,
    }


@pytest.mark.parametrize("empty", [None, []])
def test_an_empty_list_takes_the_default(empty: object) -> None:
    assert read_params(Sample, {"names": empty})["names"] == ("x",)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"keep": "yes"}, "keep must be true or false, not 'yes'."),
        ({"loud": None}, "loud must be true or false, not None."),
        ({"count": True}, "count must be a number, not True."),
        ({"count": "1"}, "count must be a number, not '1'."),
        ({"label": 3}, "label must be a string or null, not 3."),
        ({"names": "ab"}, "names must be a list of strings, not 'ab'."),
        ({"names": [1]}, "names must be a list of strings, not [1]."),
    ],
)
def test_read_params_refuse_values_of_another_type(params: dict[str, Any], message: str) -> None:
    with pytest.raises(OrchestrationError) as refused:
        read_params(Sample, params)
    assert str(refused.value) == message


def test_cli_args_follow_the_fields_and_skip_options_without_flag() -> None:
    assert cli_args(Sample(names=("a", "b"), count=0.5, label="l", dry_run=True, loud=True)) == [
        "--name", "a", "--name", "b", "--count", "0.5", "--label", "l", "--keep", "--loud",
    ]  # fmt: skip
    assert cli_args(Sample(keep=False)) == ["--name", "x", "--count", "1", "--no-keep"]
    assert cli_args(Sample(), names=(), count=2) == ["--count", "2", "--keep"]


# --- the jobs' command line --------------------------------------------------------


def _parse(command: str, args: list[str]) -> dict[str, Any]:
    """The values the job's command would run with (nothing runs)."""
    context = COMMANDS.commands[command].make_context(command, list(args))
    return dict(context.params)


def _destination(command: str, flag: str) -> str:
    on = flag.partition("/")[0]
    for param in COMMANDS.commands[command].params:
        if on in param.opts or on in param.secondary_opts:
            return str(param.name)
    raise AssertionError(f"eventlake {command} has no option {on}")


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list | tuple) else value


def _plain_list(value: Any) -> Any:
    # A repeatable option given no value parses as None once it has a callback (Typer
    # converts () to None before calling it); the command reads both as "none given".
    return () if value is None else _plain(value)


def _application_args(params: Any) -> list[str]:
    if isinstance(params, IngestParams):
        return params.application_args(params.topics[0])
    result: list[str] = params.application_args()
    return result


@pytest.mark.parametrize(
    ("command", "params"),
    [
        ("ingest", IngestParams(("a",), starting_offsets="latest", ending_offsets="latest")),
        ("ingest", IngestParams(("a",), starting_offsets='{"a": {"0": 3}}')),
        (
            "maintain",
            MaintenanceParams(
                retention_hours=0.5,
                allow_below_safety=True,
                auto_reconcile=False,
                dry_run=True,
                topics=("a", "b"),
            ),
        ),
        ("maintain", MaintenanceParams()),
        ("check", QualityParams(full=True, topic="a")),
        ("check", QualityParams()),
    ],
    ids=["ingest-bounded", "ingest", "maintain", "maintain-defaults", "check", "check-defaults"],
)
def test_each_flag_gives_the_job_its_options_value(command: str, params: Any) -> None:
    parsed = _parse(command, _application_args(params))

    for name, flag in flags(type(params)).items():
        expected = getattr(params, name)
        given = parsed[_destination(command, flag)]
        if isinstance(expected, tuple):
            given = _plain_list(given)
        assert _plain(given) == _plain(expected), name


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("ingest", IngestParams(("a",)).application_args("a", state=True)),
        ("ingest", IngestParams(("a",), full_refresh=True).application_args("a")),
        ("reconcile", ["--topic", "a"]),
        ("republish-routes", ["--route", "r>t", "--route", "r>u"]),
    ],
    ids=["ingest-state", "ingest-full-refresh", "reconcile", "republish-routes"],
)
def test_planned_arguments_parse_with_the_jobs_command(command: str, args: list[str]) -> None:
    assert _parse(command, args)
