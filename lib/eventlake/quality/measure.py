"""The counts every check of a run needs, in one aggregate pass over the slice.

Great Expectations computes each suite's metrics with a Spark job per metric bundle and
more for row conditions and unexpected values; a run of many topics would scan the slice
once per topic on top. Here one ``groupBy(kafka_topic)`` aggregate counts, for every
topic at once, its rows, the nulls of each checked column and the offending rows of each
suite check (:attr:`eventlake.quality.model.SuiteCheck.unexpected`, the same
condition a failed check's sample uses). GX then judges each expectation from these
counts (:meth:`eventlake.quality.gx.Validator.record`), so it stays the engine of record
for the suites, the results and Data Docs.

Example:
    >>> measured = measure_slice(frame, {"orders": suite_checks(rules, latest_time=latest)})
    >>> measured["orders"].rows, measured["orders"].unexpected[0]
    (1000, 0)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from eventlake.quality.model import CheckCounts, SuiteCheck


@dataclass(frozen=True)
class TopicMeasures:
    """One topic's counts: rows, nulls per checked column, and per suite check (suite
    order) its offending rows (None: a table-level check)."""

    rows: int
    nulls: Mapping[str, int]
    unexpected: tuple[int | None, ...]

    def counts_of(self, index: int, column: str | None) -> CheckCounts:
        """The counts of suite check ``index``, whose expectation reads ``column``.

        Example:
            >>> TopicMeasures(3, {"id": 1}, (1,)).counts_of(0, "id")
            CheckCounts(rows=3, nulls=1, unexpected=1)
        """
        return CheckCounts(
            self.rows,
            None if column is None else self.nulls.get(column, 0),
            self.unexpected[index],
        )


def no_rows(checks: Sequence[SuiteCheck]) -> TopicMeasures:
    """The counts of a topic the slice has no row of.

    Example:
        >>> no_rows(suites).rows
        0
    """
    return TopicMeasures(0, {}, tuple(None if c.unexpected is None else 0 for c in checks))


def measure_slice(
    frame: DataFrame, suites: Mapping[str | None, Sequence[SuiteCheck]]
) -> dict[str, TopicMeasures]:
    """Count, per topic, what its suite's checks need: one Spark job, one pass over
    ``frame`` (its rows carry ``kafka_topic`` and the columns the checks read).
    ``suites[None]``, when given, is the suite of every topic ``suites`` does not name;
    without it only the named topics are counted. Every named topic is in the result
    (zeros when it has no rows), and every other topic the slice holds.

    Example:
        >>> measure_slice(frame, {None: default_suite, "orders": orders_suite})["orders"].rows
        1000
    """
    aggregates: dict[str, Column] = {"_rows": F.count(F.lit(1))}
    # The same condition in several topics' plans (the default rules) is counted once.
    condition_alias: dict[str, str] = {}
    null_alias: dict[str, str] = {}
    for checks in suites.values():
        for check in checks:
            if check.unexpected is not None:
                key = str(check.unexpected)
                if key not in condition_alias:
                    condition_alias[key] = f"_u{len(condition_alias)}"
                    aggregates[condition_alias[key]] = F.count_if(check.unexpected)
            column = check.column
            if column is not None and column not in null_alias:
                null_alias[column] = f"_n{len(null_alias)}"
                aggregates[null_alias[column]] = F.count_if(F.col(column).isNull())
    topic = F.col("kafka_topic")
    named = [t for t in suites if t is not None]
    counted = frame if None in suites else frame.where(topic.isin(named))
    rows = {
        row["kafka_topic"]: row
        for row in counted.groupBy(topic)
        .agg(*[value.alias(alias) for alias, value in aggregates.items()])
        .collect()
    }
    measured: dict[str, TopicMeasures] = {}
    for name in dict.fromkeys([*named, *rows]):
        row = rows.get(name)
        checks = suites[name] if name in suites else suites[None]

        def count(alias: str, row: Any = row) -> int:
            return 0 if row is None else int(row[alias])

        measured[name] = TopicMeasures(
            rows=count("_rows"),
            nulls={column: count(alias) for column, alias in null_alias.items()},
            unexpected=tuple(
                None if c.unexpected is None else count(condition_alias[str(c.unexpected)])
                for c in checks
            ),
        )
    return measured
