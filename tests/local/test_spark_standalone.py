"""eventlake.local.spark_standalone: the master's and workers' command lines, their
environment, and refusing taken ports before starting anything."""

from __future__ import annotations

import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from eventlake.local.processes import free_port
from eventlake.local.settings import LocalSettings, load_local_settings
from eventlake.local.spark_standalone import (
    MASTER_CLASS,
    WORKER_CLASS,
    SparkStandalone,
    SparkStandaloneError,
    daemon_environment,
    master_command,
    master_url,
    spark_home,
    worker_command,
    worker_ui_port,
)


@pytest.fixture
def local(tmp_path: Path) -> LocalSettings:
    return load_local_settings(
        cluster_dir=tmp_path / "cluster",
        spark_master_port=17177,
        spark_master_ui_port=17180,
        spark_worker_ui_port=17181,
        spark_worker_cores=1,
        spark_worker_memory="1536m",
    )


def test_spark_class_is_the_installed_pyspark_one() -> None:
    assert (spark_home() / "bin" / "spark-class").is_file()
    assert (spark_home() / "jars").is_dir()


def test_master_listens_on_the_loopback_on_its_ports(local: LocalSettings) -> None:
    command = master_command(local)
    assert command[0] == str(spark_home() / "bin" / "spark-class")
    assert command[1:] == [
        MASTER_CLASS,
        "--host",
        "127.0.0.1",
        "--port",
        "17177",
        "--webui-port",
        "17180",
    ]
    assert master_url(local) == "spark://127.0.0.1:17177"


def test_workers_get_consecutive_ui_ports_their_size_and_the_master(local: LocalSettings) -> None:
    command = worker_command(local, 2, Path("/w/2"))
    assert command[1] == WORKER_CLASS
    options = dict(zip(command[2:-1:2], command[3:-1:2], strict=True))
    assert options == {
        "--host": "127.0.0.1",
        "--cores": "1",
        "--memory": "1536m",
        "--webui-port": "17182",
        "--work-dir": "/w/2",
    }
    assert command[-1] == "spark://127.0.0.1:17177"
    assert [worker_ui_port(local, n) for n in (1, 2, 3)] == [17181, 17182, 17183]


def test_daemons_bind_the_loopback_without_the_rest_server() -> None:
    env = daemon_environment({"PATH": "/bin", "SPARK_SUBMIT_OPTS": "-Dx=1"})
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "-Dspark.master.rest.enabled=false" in env["SPARK_MASTER_OPTS"]
    assert "SPARK_SUBMIT_OPTS" not in env
    assert env["PATH"] == "/bin"


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_start_refuses_a_taken_port_and_starts_nothing(tmp_path: Path, taken_port: int) -> None:
    settings = load_local_settings(
        cluster_dir=tmp_path / "cluster",
        spark_master_port=free_port(),
        spark_master_ui_port=taken_port,
        spark_worker_ui_port=free_port(),
    )
    spark = SparkStandalone(settings)

    with pytest.raises(SparkStandaloneError, match=f"{taken_port}.*EVENTLAKE_SPARK_MASTER"):
        spark.start(timeout=5)

    assert spark.pids() == {}
    assert not (tmp_path / "cluster" / "spark" / "pids.json").exists()


def test_status_of_a_cluster_that_never_ran(local: LocalSettings) -> None:
    statuses = SparkStandalone(local).status()
    assert [s.name for s in statuses] == ["spark-master", "spark-worker-1", "spark-worker-2"]
    assert not any(s.running or s.pid for s in statuses)
    assert SparkStandalone(local).stop() is False


def test_the_daemons_read_their_secret_from_their_own_conf_dir(tmp_path: Path) -> None:
    env = daemon_environment(
        {"PATH": "/bin", "EVENTLAKE_SPARK_AUTH_SECRET": "for-drivers"}, conf_dir=tmp_path
    )

    assert env["SPARK_CONF_DIR"] == str(tmp_path)
    assert "EVENTLAKE_SPARK_AUTH_SECRET" not in env


def test_a_cluster_without_a_configured_secret_generates_a_private_one(
    local: LocalSettings,
) -> None:
    spark = SparkStandalone(local)

    first = spark.secret()

    assert first is not None and len(first.get_secret_value()) == 64
    assert stat.S_IMODE(spark.secret_file.stat().st_mode) == 0o600
    # Kept: drivers given it once keep working after a restart.
    assert SparkStandalone(local).secret() == first


def test_a_configured_secret_wins_and_none_is_used_with_authentication_off(
    local: LocalSettings,
) -> None:
    configured = local.model_copy(update={"spark_auth_secret": SecretStr("mine")})
    off = local.model_copy(update={"spark_authenticate": False})

    secret = SparkStandalone(configured).secret()

    assert secret is not None and secret.get_secret_value() == "mine"
    assert SparkStandalone(off).secret() is None
    assert not SparkStandalone(configured).secret_file.exists()
