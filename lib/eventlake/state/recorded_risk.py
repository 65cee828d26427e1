"""The compaction risk recorded with a state table, read without Spark (the status page
and ``eventlake status`` import no pyspark; every state batch asks too).

Example:
    >>> recorded_compaction_risk(state_path(settings, "customers"))
    {'found_at': '2026-11-24T05:00:00+00:00', 'next_offsets': {'0': 12}, ...}
"""

from __future__ import annotations

import json
from typing import Any, cast

from eventlake.core.locations import LocationLike
from eventlake.warehouse.delta_log import delta_rs_table
from eventlake.warehouse.names import COMPACTION_RISK_PROPERTY


def recorded_compaction_risk(path: LocationLike) -> dict[str, Any] | None:
    """The compaction risk kept in the table's properties at ``path`` (None: none, or no
    table yet). delta-rs reads it from the log: Spark's ``DESCRIBE DETAIL`` took 0.8 s
    of a 3 s state batch.

    Example:
        >>> recorded_compaction_risk("/wh/state/customers") is None
        True
    """
    table = delta_rs_table(path)
    text = table.metadata().configuration.get(COMPACTION_RISK_PROPERTY) if table else None
    return cast(dict[str, Any], json.loads(text)) if text else None
