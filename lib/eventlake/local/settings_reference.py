"""The settings reference (docs/settings.md), generated from the settings' own field
descriptions so that it cannot drift from the code: ``make docs`` writes it, and a test
fails when the file differs from what this module generates.

Example:
    $ python -m eventlake.local.settings_reference > docs/settings.md
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from eventlake.core.locations import Location
from eventlake.core.object_store import ObjectStoreSettings
from eventlake.core.settings import PROJECT_ROOT, Settings
from eventlake.local.settings import LocalSettings

#: Where the generated reference lives in the checkout.
REFERENCE_PATH = PROJECT_ROOT / "docs" / "settings.md"

_INTRO = """# Settings

Generated from the settings' field descriptions by `make docs`
(`python -m eventlake.local.settings_reference`); a test fails when this file is stale.

Every setting is read from an environment variable, `EVENTLAKE_<NAME>` in capitals
(`warehouse` -> `EVENTLAKE_WAREHOUSE`); a CLI option, where a command has one, wins
over it. Lists and objects are JSON (`EVENTLAKE_STATE_TOPICS='["orders"]'`), but for the DAG's
comma-separated `EVENTLAKE_TOPICS`. A secret
has no default and is never shown: not in logs, command lines or UIs (see
[security](security.md)). `<checkout>` is the folder eventlake runs from. A value a
setting cannot take (not a number, out of range, JSON that does not parse) stops every
command before it starts, in one line naming the variable and why (exit 2), without
the value.
"""


def _default(field: FieldInfo) -> str:
    """The default as a reader would write it: secrets and empty values as "none",
    paths in the checkout relative to ``<checkout>``."""
    value: Any = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if value is None or value is PydanticUndefined or value in ([], {}, ""):
        return "none"
    if isinstance(value, SecretStr):
        return "none"
    if isinstance(value, Location) and value.is_local:
        value = value.local()
    if isinstance(value, Path):
        try:
            return f"`<checkout>/{value.relative_to(PROJECT_ROOT)}`"
        except ValueError:
            return f"`{value}`"
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, bool | int | float | str):
        return f"`{json.dumps(value) if isinstance(value, bool) else value}`"
    return f"`{json.dumps(value)}`"


def _kind(field: FieldInfo) -> str:
    text = str(field.annotation).replace("typing.", "").replace("pathlib.", "")
    text = text.replace("pydantic.types.", "").replace("eventlake.core.settings.", "")
    # A constrained number (PositiveInt, ...) reads as its number; its bound is in the text.
    text = re.sub(r"Annotated\[(\w+), [^\]]*\]", r"\1", text)
    text = re.sub(r"^Optional\[(.*)\]$", r"\1 | None", text)
    # A location is written as a folder (or, to come, an object-store URI).
    text = text.replace("eventlake.core.locations.Location", "Path")
    return text.replace("<class '", "").replace("'>", "")


def _table(model: type[Settings], names: list[str]) -> list[str]:
    lines = ["| environment variable | type | default | what it is |", "|---|---|---|---|"]
    for name in names:
        field = model.model_fields[name]
        description = " ".join((field.description or "").split()).replace("|", "\\|")
        lines.append(
            f"| `EVENTLAKE_{name.upper()}` | {_kind(field).replace('|', 'or')} | "
            f"{_default(field)} | {description} |"
        )
    return lines


def settings_reference() -> str:
    """The Markdown of docs/settings.md: the job settings, then the local platform's.

    Example:
        >>> settings_reference().splitlines()[0]
        '# Settings'
    """
    job = list(Settings.model_fields)
    # The object store's fields come first by inheritance; they read best after the warehouse.
    store = [name for name in job if name in ObjectStoreSettings.model_fields]
    rest = [name for name in job if name not in store]
    at = rest.index("warehouse") + 1
    job = [*rest[:at], *store, *rest[at:]]
    local = [name for name in LocalSettings.model_fields if name not in job]
    lines = [
        _INTRO,
        "## Job settings",
        "",
        "What every job, DAG and command reads.",
        "",
        *_table(Settings, job),
        "",
        "## The local platform",
        "",
        "The local broker, Airflow and cluster that `make demo`, `make test` and",
        "`eventlake cluster` start; not read by jobs.",
        "",
        *_table(LocalSettings, local),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(settings_reference(), end="")
