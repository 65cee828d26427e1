"""Each topic's outcome of a run, as a JSON file the run writes when asked
(``--outcomes-file``): the Airflow task of each topic reads it, so that a run of several
topics in one Spark application shows in the UI per topic.

A topic either landed (its line says what) or was refused (its line says why); the
others of the run landed all the same.

Example:
    >>> write_outcomes(path, {"orders": TopicOutcome(LANDED, "ingest[orders]: events=3")})
    >>> read_outcomes(path)["orders"].landed
    True
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: What a topic's outcome can be.
LANDED: Final = "landed"
REFUSED: Final = "refused"


@dataclass(frozen=True)
class TopicOutcome:
    """One topic's outcome (:data:`LANDED` or :data:`REFUSED`) and its line for a person."""

    outcome: str
    line: str

    @property
    def landed(self) -> bool:
        return self.outcome == LANDED


def write_outcomes(path: Path, outcomes: dict[str, TopicOutcome]) -> None:
    """Write ``outcomes`` (topic -> outcome) to ``path`` as JSON, whole or not at all (a
    reader never sees half a file).

    Example:
        >>> write_outcomes(Path("/tmp/outcomes.json"), {"a": TopicOutcome(REFUSED, "...")})
    """
    text = json.dumps(
        {topic: {"outcome": o.outcome, "line": o.line} for topic, o in sorted(outcomes.items())}
    )
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def read_outcomes(path: Path) -> dict[str, TopicOutcome]:
    """The outcomes at ``path``; none when the run wrote none (it was refused whole, or
    did not get that far).

    Example:
        >>> read_outcomes(Path("/tmp/absent.json"))
        {}
    """
    if not path.exists() or not path.read_text().strip():
        return {}
    found = json.loads(path.read_text())
    return {topic: TopicOutcome(o["outcome"], o["line"]) for topic, o in found.items()}
