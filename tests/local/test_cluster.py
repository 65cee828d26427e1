"""eventlake.local.cluster: its settings, its ports, refusing a taken one before anything
starts, and its status when nothing runs. (The cluster running: tests/cluster.)"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from eventlake.local.cluster import ClusterRefused, LocalCluster, cluster_settings
from eventlake.local.processes import free_port
from eventlake.local.settings import LocalSettings, load_local_settings


@pytest.fixture
def local(tmp_path: Path) -> LocalSettings:
    return load_local_settings(
        cluster_dir=tmp_path / "cluster",
        broker_dir=tmp_path / "broker",
        broker_port=free_port(),
        controller_port=free_port(),
        postgres_port=free_port(),
        spark_master_port=free_port(),
        spark_master_ui_port=free_port(),
        spark_worker_ui_port=free_port(),
        cluster_airflow_port=free_port(),
        cluster_metastore_port=free_port(),
    )


def test_jobs_on_the_cluster_are_planned_for_its_master(local: LocalSettings) -> None:
    settings = cluster_settings(local)
    assert settings.spark_master == f"spark://127.0.0.1:{local.spark_master_port}"
    assert LocalCluster(local).settings.spark_master == settings.spark_master


def test_the_clusters_jobs_register_their_tables_in_its_metastore_on_postgresql(
    local: LocalSettings,
) -> None:
    settings = cluster_settings(local)
    assert settings.metastore_uri == f"thrift://127.0.0.1:{local.cluster_metastore_port}"
    assert settings.metastore_port == local.cluster_metastore_port
    assert settings.metastore_dir == local.cluster_dir / "metastore"
    assert settings.metastore_database_url == (
        f"jdbc:postgresql://127.0.0.1:{local.postgres_port}/metastore"
    )
    assert settings.metastore_database_user == "metastore"
    assert settings.metastore_database_password is None  # read from its file at the start
    assert LocalCluster(local).metastore.uri == settings.metastore_uri


def test_every_fixed_port_comes_from_the_settings(local: LocalSettings) -> None:
    ports = LocalCluster(local).ports()
    assert ports == {
        "broker": [local.broker_port, local.controller_port],
        "postgres": [local.postgres_port],
        "metastore": [local.cluster_metastore_port],
        "spark": [
            local.spark_master_port,
            local.spark_master_ui_port,
            local.spark_worker_ui_port,
            local.spark_worker_ui_port + 1,
        ],
        "airflow": [local.cluster_airflow_port],
    }


def test_a_taken_port_refuses_the_start_before_anything_runs(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = int(sock.getsockname()[1])
        cluster = LocalCluster(
            load_local_settings(
                cluster_dir=tmp_path / "cluster",
                broker_dir=tmp_path / "broker",
                broker_port=free_port(),
                controller_port=free_port(),
                postgres_port=port,
                cluster_airflow_port=free_port(),
                cluster_metastore_port=free_port(),
                spark_master_port=free_port(),
                spark_master_ui_port=free_port(),
                spark_worker_ui_port=free_port(),
            )
        )
        said: list[str] = []
        with pytest.raises(ClusterRefused, match=f"{port} \\(postgres\\)"):
            cluster.start(say=said.append)
    assert said == []
    assert cluster.running_parts() == set()


def test_status_of_a_cluster_that_never_ran(local: LocalSettings) -> None:
    cluster = LocalCluster(local)
    statuses = cluster.status()
    assert [s.name for s in statuses] == [
        "broker",
        "postgres",
        "metastore",
        "spark-master",
        "spark-worker-1",
        "spark-worker-2",
        "airflow api-server",
        "airflow scheduler",
        "airflow dag-processor",
        "airflow triggerer",
    ]
    assert not any(s.pid or s.running for s in statuses)
    assert cluster.stop() == []
