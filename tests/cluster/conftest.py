"""The cluster tier's cluster (``make test-cluster``): one :class:`LocalCluster` for the
tier, in a temporary folder, on free ports of 127.0.0.1 except the master's
(``EVENTLAKE_SPARK_MASTER_PORT``, 7077 unless set), and the figures the tier records.

Its warehouse is on the cluster's own S3 server (``cluster_object_store``): drivers and
executors write to object storage as on a multi-host cluster, the DAGs reach it through
the ``aws_default`` connection only, and this process (which reads the tables and runs
the local-mode comparison) through the server's ``EVENTLAKE_S3_*`` environment.

Its Airflow workers get the settings the DAG runs need: the sample topic as a state
topic and a re-key route of it, the demo's quality rules, and micro-batches of at most
:data:`MAX_OFFSETS_PER_TRIGGER` records (so that an ingest of the worker-kill topic is
several batches long).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

# First, before anything imports airflow (the tests plan jobs with eventlake.orchestration).
from tests.airflow_home import _airflow_home  # noqa: F401

# isort: split
from eventlake.local.cluster import LocalCluster
from eventlake.local.processes import free_port, port_in_use
from eventlake.local.settings import LocalSettings, load_local_settings
from tests.cluster.cluster_tools import write_figures

#: The sample topic: the comparison with a local-mode run.
SAMPLE_TOPIC: Final = "cluster.orders"
#: Its re-key route on the cluster and in the local run.
CLUSTER_TARGET: Final = "cluster.orders.by-entity"
LOCAL_TARGET: Final = "cluster.orders.by-entity.local"
#: The demo's rules: the sample stream holds ~5% invalid records on purpose.
QUALITY: Final = {"defaults": {"max_rejects_rate": 0.1}}
MAX_OFFSETS_PER_TRIGGER: Final = 5_000


def route(target: str) -> dict[str, str]:
    return {
        "source": SAMPLE_TOPIC,
        "target": target,
        "key_mapper": "partitionkey",
        "cleanup_policy": "compact",
    }


def _free_pair() -> int:
    """A port p such that p and p + 1 are free (the two workers' UIs)."""
    for _ in range(50):
        port = free_port()
        if port < 65535 and not port_in_use(port + 1):
            return port
    raise RuntimeError("no two consecutive free ports on 127.0.0.1")


@pytest.fixture(scope="module")
def cluster_settings() -> Iterator[LocalSettings]:
    # mkdtemp makes a 0700 folder; the postgres user (when we are root) must reach its own.
    folder = Path(tempfile.mkdtemp(prefix="eventlake-cluster-"))
    folder.chmod(0o755)
    broker_port = free_port()
    yield load_local_settings(
        cluster_dir=folder / "cluster",
        broker_dir=folder / "broker",
        broker_port=broker_port,
        controller_port=free_port(),
        bootstrap_servers=f"127.0.0.1:{broker_port}",
        cluster_object_store=True,
        s3_server_port=free_port(),
        s3_server_dir=folder / "s3server",
        postgres_port=free_port(),
        spark_master_ui_port=free_port(),
        spark_worker_ui_port=_free_pair(),
        cluster_airflow_port=free_port(),
        cluster_metastore_port=free_port(),
        driver_memory="1g",
        shuffle_partitions=2,
    )
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def figures() -> Iterator[dict[str, Any]]:
    """The tier's figures; written to results/cluster-run.json and printed at the end."""
    recorded: dict[str, Any] = {}
    started = time.monotonic()
    yield recorded
    recorded["tier_seconds"] = round(time.monotonic() - started, 1)
    print(f"\n== cluster run figures (results/cluster-run.json)\n{write_figures(recorded)}")


@pytest.fixture(scope="module")
def cluster(cluster_settings: LocalSettings, figures: dict[str, Any]) -> Iterator[LocalCluster]:
    """The running cluster; stopped (and checked stopped) after the tier."""
    airflow_env = {
        "EVENTLAKE_TOPICS": SAMPLE_TOPIC,
        "EVENTLAKE_STATE_TOPICS": json.dumps([SAMPLE_TOPIC]),
        "EVENTLAKE_REPUBLISH_ROUTES": json.dumps([route(CLUSTER_TARGET)]),
        "EVENTLAKE_QUALITY": json.dumps(QUALITY),
        "EVENTLAKE_MAX_OFFSETS_PER_TRIGGER": str(MAX_OFFSETS_PER_TRIGGER),
    }
    local = LocalCluster(cluster_settings, airflow_env=airflow_env)
    started = time.monotonic()
    try:
        local.start(timeout=300)
        # This process reads the warehouse (and starts the local-mode jobs) with the keys.
        os.environ.update(local.object_store.connection().environment())
        figures["cluster_start_seconds"] = round(time.monotonic() - started, 1)
        yield local
    finally:
        started = time.monotonic()
        local.stop()
        figures["cluster_stop_seconds"] = round(time.monotonic() - started, 1)
        assert local.running_parts() == set()
