"""Shared fixtures: one real Kafka broker and one SparkSession per test session.

The test broker listens on its own ports (127.0.0.1 only) and keeps its data in a
temporary folder, so it never collides with a broker started by `make demo`.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from eventlake.broker import LocalBroker
from eventlake.settings import Settings, load_settings
from eventlake.spark import build_spark_session

# Overridable so that two suites can run side by side on one machine.
# py4j logs "Closing down clientserver connection" from __del__ at interpreter exit,
# after pytest closed the streams; keep that noise out of CI logs.
logging.getLogger("py4j").setLevel(logging.WARNING)

TEST_BROKER_PORT = int(os.environ.get("EVENTLAKE_TEST_BROKER_PORT", "19092"))
TEST_CONTROLLER_PORT = TEST_BROKER_PORT + 1


@pytest.fixture(scope="session")
def base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("eventlake")


@pytest.fixture(scope="session")
def settings(base_dir: Path) -> Settings:
    return load_settings(
        bootstrap_servers=f"127.0.0.1:{TEST_BROKER_PORT}",
        broker_port=TEST_BROKER_PORT,
        controller_port=TEST_CONTROLLER_PORT,
        broker_dir=base_dir / "broker",
        warehouse=base_dir / "warehouse",
        shuffle_partitions=2,
        driver_memory="1g",
    )


@pytest.fixture(scope="session")
def broker(settings: Settings) -> Iterator[LocalBroker]:
    local = LocalBroker(settings)
    local.start(timeout=90)
    yield local
    local.stop()


@pytest.fixture(scope="session")
def spark(settings: Settings) -> Iterator[SparkSession]:
    session = build_spark_session(settings, app_name="eventlake-tests")
    yield session
    session.stop()


@pytest.fixture
def topic_name() -> str:
    """A fresh topic name per test, so tests never see each other's records."""
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def warehouse_settings(settings: Settings, tmp_path: Path) -> Settings:
    """The session settings with a warehouse of this test's own."""
    return settings.model_copy(update={"warehouse": tmp_path / "warehouse"})
