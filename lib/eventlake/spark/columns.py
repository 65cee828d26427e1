"""Column expressions built once per Spark context and reused by every batch.

A pyspark ``Column`` is an unresolved expression, valid over any frame, but building
one is a few py4j calls. The plan of one ingest batch (the decoder's projections, the
counts per reason, the events' columns) is some 80 of them: at 1,000 events/s, 0.2 s of
a 0.5 s batch went to building the same columns again. Frames and observations stay
per batch; only the columns are shared.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence

from pyspark import SparkContext
from pyspark.sql import Column

#: Per live Spark context (a stopped one's columns go with it), the columns by key.
_BUILT: weakref.WeakKeyDictionary[SparkContext, dict[Hashable, tuple[Column, ...]]] = (
    weakref.WeakKeyDictionary()
)


def built_once(key: Hashable, build: Callable[[], Sequence[Column]]) -> tuple[Column, ...]:
    """The columns ``build`` makes, made once per Spark context for ``key``: a key names
    what ``build`` depends on, so equal keys must build equal columns.

    Example:
        >>> built_once(("events", EVENT_COLUMNS), lambda: [F.col(c) for c in EVENT_COLUMNS])
    """
    context = SparkContext._active_spark_context
    if context is None:
        return tuple(build())
    built = _BUILT.setdefault(context, {})
    if key not in built:
        built[key] = tuple(build())
    return built[key]
