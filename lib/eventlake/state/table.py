"""A state table: its creation and the compaction risk recorded in its properties.

Example:
    >>> ensure_state_table(spark, settings, "demo.orders")"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession

from eventlake.core.settings import Settings
from eventlake.warehouse.names import COMPACTION_RISK_PROPERTY, delta_path_sql, state_path
from eventlake.warehouse.schemas import EVENTS_SCHEMA
from eventlake.warehouse.tables import ensure_table


def ensure_state_table(spark: SparkSession, settings: Settings, topic: str) -> str:
    """Create ``state/<topic>`` (events-table columns, Change Data Feed on) if missing;
    return its path."""
    path = str(state_path(settings, topic))
    ensure_table(spark, path, EVENTS_SCHEMA, change_data_feed=True)
    return path


def record_compaction_risk(spark: SparkSession, path: str, risk: dict[str, Any]) -> None:
    """Keep ``risk`` with the state table until a reconcile clears it."""
    text = json.dumps(risk, sort_keys=True).replace("'", "''")
    spark.sql(
        f"ALTER TABLE {delta_path_sql(path)} SET TBLPROPERTIES "
        f"('{COMPACTION_RISK_PROPERTY}' = '{text}')"
    )
