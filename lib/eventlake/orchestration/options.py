"""One description of each DAG option: the Airflow param and the job flag it becomes.

A DAG's checked params are a frozen dataclass (:class:`~eventlake.orchestration.quality.
QualityParams`, ...). Each field that the DAG's trigger form shows carries an
:class:`Option` in its metadata (made by :func:`option`; :func:`switch` and
:func:`selection` make the whole field of the two commonest kinds): the JSON schema
Airflow checks the run conf with before a run is created, and the flag of the job's
command line it becomes; the default is the field's. From that one table come

* the DAG's ``params`` (:func:`dag_params`);
* the reading of a run's params, type-checked by the schema's ``type``
  (:func:`read_params`); what a schema cannot say, each dataclass checks itself;
* the job's arguments (:func:`cli_args`).

Not here: the jobs' own declaration of their flags (:mod:`eventlake.cli`);
``tests/orchestration/test_options.py`` parses every planned argument list with it.

Example:
    >>> @dataclass(frozen=True)
    ... class Params:
    ...     full: bool = field(default=False, metadata=option("Full", "All rows.",
    ...                                                      type="boolean", flag="--full"))
    >>> cli_args(Params(**read_params(Params, {"full": True})))
    ['--full']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final

from airflow.sdk import Param

from eventlake.orchestration.errors import OrchestrationError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: The key of a field's :class:`Option` in the field's metadata.
OPTION_KEY: Final = "eventlake.orchestration.option"
#: The field every DAG's form ends with.
DRY_RUN: Final = "dry_run"


@dataclass(frozen=True)
class Option:
    """What a DAG option is besides its name and default.

    ``schema``: the JSON schema of the param (with its title and description).
    ``flag``: the job's flag; ``--on/--off`` for a switch that is always passed
    (the job's default may differ from the DAG's); ``None`` when the option steers the
    DAG, not the job.
    """

    schema: Mapping[str, Any]
    flag: str | None = None


def option(
    title: str, description: str, *, flag: str | None = None, **schema: Any
) -> dict[str, Option]:
    """Metadata of a dataclass field that is a DAG option.

    Example:
        >>> option("Dry run", "Submit nothing.", type="boolean")[OPTION_KEY].schema["type"]
        'boolean'
    """
    return {OPTION_KEY: Option({**schema, "title": title, "description": description}, flag)}


def switch(title: str, description: str, *, flag: str | None = None, default: bool = False) -> bool:
    """A dataclass field that is a true/false DAG option (off unless ``default``).

    Example:
        >>> @dataclass(frozen=True)
        ... class Params:
        ...     full: bool = switch("Full", "All rows.", flag="--full")
        >>> cli_args(Params(full=True))
        ['--full']
    """
    return field(default=default, metadata=option(title, description, flag=flag, type="boolean"))


def selection(
    title: str, description: str, *, items: Mapping[str, Any], flag: str | None = None
) -> tuple[str, ...]:
    """A dataclass field that is a DAG option naming what a run is narrowed to: a list of
    distinct strings matching ``items`` (a JSON schema); empty, the default, selects all.

    Example:
        >>> @dataclass(frozen=True)
        ... class Params:
        ...     topics: tuple[str, ...] = selection("Topics", "All.", items=topic_name_schema())
        >>> Params().topics
        ()
    """
    metadata = option(
        title, description, flag=flag, type="array", items=dict(items), uniqueItems=True
    )
    return field(default=(), metadata=metadata)


def options(cls: type[DataclassInstance]) -> Iterator[tuple[Field[Any], Option]]:
    """The fields of ``cls`` that are DAG options, with their option, in field order.

    Example:
        >>> [f.name for f, _ in options(QualityParams)]
        ['full', 'topic', 'dry_run']
    """
    for each in fields(cls):
        if OPTION_KEY in each.metadata:
            yield each, each.metadata[OPTION_KEY]


def dag_params(cls: type[DataclassInstance], **defaults: Any) -> dict[str, Param]:
    """The DAG's ``params``: one :class:`~airflow.sdk.Param` per option, with the field's
    default unless ``defaults`` gives one (an option without a default needs one).
    The form shows them in field order, and ends with the dry-run switch.

    Example:
        >>> list(dag_params(MaintenanceParams))
        ['retention_hours', 'allow_below_safety', 'auto_reconcile', 'topics', 'dry_run']
    """
    ordered = sorted(options(cls), key=lambda entry: entry[0].name == DRY_RUN)
    params: dict[str, Param] = {}
    for each, opt in ordered:
        default = defaults.get(each.name, each.default)
        if default is MISSING:
            raise TypeError(f"dag_params: option {each.name!r} of {cls.__name__} needs a default")
        # Run confs are JSON: a tuple default is shown and stored as a list.
        value = list(default) if isinstance(default, tuple) else default
        params[each.name] = Param(value, **opt.schema)
    return params


def read_params(cls: type[DataclassInstance], params: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ``cls`` read from a DAG run's params, checked against the type of
    their schema: keyword arguments of ``cls``. A missing key takes the field's default,
    and so does an empty list.

    Example:
        >>> read_params(MaintenanceParams, {"retention_hours": 0})["retention_hours"]
        0.0
        >>> read_params(QualityParams, {"full": "yes"})
        Traceback (most recent call last):
        ...
        eventlake.orchestration.errors.OrchestrationError: full must be true or false, ...
    """
    values: dict[str, Any] = {}
    for each, opt in options(cls):
        if each.default is MISSING:
            value = params.get(each.name)
        elif opt.schema["type"] == "array":
            value = params.get(each.name) or each.default
        else:
            value = params.get(each.name, each.default)
        values[each.name] = _checked(each.name, value, opt.schema["type"])
    return values


def _checked(name: str, value: Any, schema_type: str | list[str]) -> Any:
    """``value`` in its Python form, when it has the JSON-schema type; else raise."""
    kinds = [schema_type] if isinstance(schema_type, str) else schema_type
    if "null" in kinds and value is None:
        return None
    (kind,) = (each for each in kinds if each != "null")
    match kind:
        case "boolean" if isinstance(value, bool):
            return value
        case "number" if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        case "string" if isinstance(value, str):
            return value
        case "array" if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
    expected = {
        "boolean": "true or false",
        "number": "a number",
        "string": "a string or null" if "null" in kinds else "a string",
        "array": "a list of strings",
    }[kind]
    raise OrchestrationError(f"{name} must be {expected}, not {value!r}.")


def cli_args(params: DataclassInstance, **values: Any) -> list[str]:
    """The job's arguments for the options of ``params`` that have a flag, in field
    order; ``values`` replaces the value of some (one topic's part of them, say).

    A switch is passed when true (``--on/--off``: either way), a list as one flag per
    item, a number as ``%g``; ``None`` passes nothing.

    Example:
        >>> cli_args(MaintenanceParams(retention_hours=0, allow_below_safety=True))
        ['--retention-hours', '0', '--allow-below-safety', '--auto-reconcile']
        >>> cli_args(QualityParams(topic="a"), topic="b")
        ['--topic', 'b']
    """
    args: list[str] = []
    for each, opt in options(type(params)):
        if opt.flag is not None:
            args += _flag_args(opt.flag, values.get(each.name, getattr(params, each.name)))
    return args


def _flag_args(flag: str, value: Any) -> list[str]:
    match value:
        case None:
            return []
        case bool():
            on, _, off = flag.partition("/")
            return [on] if value else [off] if off else []
        case tuple() | list():
            return [part for item in value for part in (flag, str(item))]
        case int() | float():
            return [flag, f"{value:g}"]
        case _:
            return [flag, str(value)]


def flags(cls: type[DataclassInstance]) -> dict[str, str]:
    """Option name -> the job flag it becomes, for the options that have one.

    Example:
        >>> flags(QualityParams)
        {'full': '--full', 'topic': '--topic'}
    """
    return {each.name: opt.flag for each, opt in options(cls) if opt.flag is not None}
