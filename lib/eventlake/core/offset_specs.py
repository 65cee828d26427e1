"""The offsets a run may be asked to start or end at, as Spark's Kafka source takes them
(``--starting-offsets``, ``--ending-offsets``, the DAGs' params): the one rule the
requests and the DAGs check them by. No pyspark: the DAGs import it.

Example:
    >>> run_offsets_problem("earliest", '{"orders": {"0": 42}}') is None
    True
"""

from __future__ import annotations

import json

#: Spark's per-partition offsets for "earliest" and "latest".
EARLIEST = -2
LATEST = -1


def offsets_problem(option: str, spec: str, *, ending: bool = False) -> str | None:
    """What is wrong with a ``--starting-offsets`` (or, with ``ending``,
    ``--ending-offsets``) value, or None when Spark's Kafka source takes it: 'earliest'
    (starting only) or 'latest', or JSON of topic -> partition -> offset, where -2 means
    earliest (starting only) and -1 latest.

    Example:
        >>> offsets_problem("--starting-offsets", "erliest")
        "--starting-offsets 'erliest' is not 'earliest', 'latest' or per-partition JSON ..."
    """
    words = ("latest",) if ending else ("earliest", "latest")
    if spec in words:
        return None
    lowest = LATEST if ending else EARLIEST
    why = offsets_json_problem(spec, lowest)
    if why is None:
        return None
    listed = ", ".join(repr(word) for word in words)
    example = '{"orders": {"0": 42, "1": -1}}'
    return (
        f"{option} {spec!r} is not {listed} or per-partition JSON such as {example} "
        f"(offsets, or {'-1 for latest' if ending else '-2 for earliest, -1 for latest'}): "
        f"{why}."
    )


def run_offsets_problem(starting: str, ending: str | None) -> str | None:
    """What is wrong with a run's ``--starting-offsets`` and ``--ending-offsets`` (None:
    an unbounded run), or None; see :func:`offsets_problem`.

    Example:
        >>> run_offsets_problem("earliest", "latest") is None
        True
    """
    return offsets_problem("--starting-offsets", starting) or (
        None if ending is None else offsets_problem("--ending-offsets", ending, ending=True)
    )


def offsets_json_problem(spec: str, lowest: int = EARLIEST) -> str | None:
    """What is wrong with per-partition offsets JSON (topic -> partition -> offset, no
    offset below ``lowest``), in a few words, or None.

    Example:
        >>> offsets_json_problem('{"a": {"x": 5}}')
        "partition 'x' of 'a' is not a number"
    """
    try:
        given = json.loads(spec)
    except ValueError:
        return "not JSON"
    if not isinstance(given, dict) or not given:
        return "not a JSON object of topics"
    for topic, partitions in given.items():
        if not isinstance(partitions, dict) or not partitions:
            return f"topic {topic!r} has no object of partitions"
        for partition, offset in partitions.items():
            if not partition.isdigit():
                return f"partition {partition!r} of {topic!r} is not a number"
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < lowest:
                return f"{offset!r}, for partition {partition} of {topic!r}, is not an offset"
    return None
