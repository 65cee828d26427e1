"""The quality check's value types, shared by planning, measuring and judging: a
suite check, the counts a measuring pass gives, and the GX metadata key that ties
an expectation to its suite check.

Example:
    >>> CheckCounts(rows=10, unexpected=0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from eventlake.quality.config import CheckName, Severity

if TYPE_CHECKING:  # types only: this module is imported by GX's side and Spark's alike
    from great_expectations.expectations.expectation import Expectation
    from pyspark.sql import Column


#: Meta key of an expectation's position in the suite (GX reorders results).
SUITE_INDEX: Final = "eventlake_plan_index"


@dataclass(frozen=True)
class CheckCounts:
    """What one expectation is judged on: the topic's rows, the nulls of its column (None:
    no column), its offending rows (None: a table-level check, judged on ``rows``) and, for
    a check of a column's largest value, that value."""

    rows: int
    nulls: int | None = None
    unexpected: int | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class SuiteCheck:
    """One expectation of a topic's suite and the Spark condition of its offending rows."""

    check: CheckName
    severity: Severity
    expectation: Expectation
    #: Rows breaking the rule (same semantics as the expectation), for the sample.
    unexpected: Column | None

    @property
    def column(self) -> str | None:
        """The column the expectation checks (None: a table-level check)."""
        column = self.expectation.configuration.kwargs.get("column")
        return None if column is None else str(column)
