"""Airflow for the DAG tests: a private AIRFLOW_HOME (tests/airflow_home.py) with its
metadata tables, and the worker environment the DAGs read.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# First, before any test module imports airflow: Airflow's private home.
from tests.airflow_home import _airflow_home  # noqa: F401

# isort: split
from eventlake.core.settings import Settings


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """Airflow's metadata tables, created once (what `airflow db migrate` does on a new DB)."""
    from airflow.utils import db

    db.initdb()


@pytest.fixture
def airflow_env(
    monkeypatch: pytest.MonkeyPatch, warehouse_settings: Settings, airflow_db: None
) -> Iterator[Settings]:
    """The worker environment the DAGs read: test broker, a fresh warehouse, a local
    master in spark_default, and spark-submit (from the pyspark wheel) on PATH.

    Each test has its own warehouse, so the assets (tables) of a DAG get a new URI
    under the same name. Airflow keeps the first URI of a name active and fails tasks
    whose outlets are inactive, so the test's assets are deactivated afterwards."""
    settings = warehouse_settings
    for name, value in {
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
        "EVENTLAKE_DRIVER_MEMORY": settings.driver_memory,
        "EVENTLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }.items():
        monkeypatch.setenv(name, value)
    yield settings
    from airflow.models.asset import AssetActive
    from airflow.utils.session import create_session

    with create_session() as session:
        session.query(AssetActive).delete()
