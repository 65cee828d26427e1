"""The container deployment (docker-compose.yml, infra/Dockerfile) holds together.

The dev machines and CI have no Docker engine, so these tests go as far as Debian's
docker-compose 1.29 goes without one: the file validates against the Compose schema
and resolves (anchors merged, variables filled in) to the services eventlake needs.
A missing docker-compose binary is a failure, never a skip: `make setup` installs it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from eventlake.local.airflow import ALL_COMPONENTS
from eventlake.local.settings import load_local_settings
from eventlake.local.spark_standalone import (
    MASTER_CLASS,
    WORKER_CLASS,
    daemon_environment,
    master_command,
    worker_command,
)
from eventlake.orchestration.kafka_connection import KAFKA_CONN_ID
from eventlake.orchestration.object_store_connection import AWS_CONN_ID, AWS_CONN_TYPE
from eventlake.orchestration.submit import SPARK_CONN_ID
from eventlake.spark.conf import EVENTLAKE_JAR, HADOOP_JAR

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "infra" / "Dockerfile"
#: Debian's docker-compose 1.29 package; it validates a file without a Docker engine.
DOCKER_COMPOSE = Path("/usr/bin/docker-compose")

PROJECT_IMAGE = "eventlake:latest"
REQUIRED_SERVICES = {
    "kafka",
    "object-store",
    "spark-master",
    "spark-worker",
    "postgres",
    "metastore",
    "airflow-init",
    "airflow-api-server",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}


def _make_jar_fetches() -> list[str]:
    """The jar fetches of `make jars` (its ``$(MVN)`` lines, the variable expanded): the
    image's Maven build stage must run each of them."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    mvn = re.search(r"^MVN := (.+)$", makefile, re.M)
    assert mvn is not None, "the Makefile defines no MVN"
    return [
        f"{mvn.group(1).strip()} {line.strip()[len('$(MVN) ') :]}"
        for line in makefile.splitlines()
        if line.strip().startswith("$(MVN) ") and "copy-dependencies" in line
    ]


#: The jar fetches of `make jars`, run in the image's Maven build stage.
MAVEN_COMMANDS = _make_jar_fetches()


#: The secrets docker-compose.yml requires (no defaults), with test values.
REQUIRED_SECRETS = {
    "AIRFLOW_JWT_SECRET": "test-jwt-secret",
    "AIRFLOW_API_SECRET_KEY": "test-api-secret",
    "AIRFLOW_FERNET_KEY": "test-fernet-key",
    "AIRFLOW_DB_PASSWORD": "test-db-password",
    "EVENTLAKE_SPARK_AUTH_SECRET": "test-spark-secret",
    "EVENTLAKE_S3_ACCESS_KEY_ID": "test-s3-access-key",
    "EVENTLAKE_S3_SECRET_ACCESS_KEY": "test-s3-secret-key",
}
#: How docker-compose.yml starts the Spark daemons (the secret's conf, then spark-class).
SPARK_DAEMON = "/opt/eventlake/infra/spark-daemon.sh"


def _docker_compose_config(
    *args: str, secrets: dict[str, str] = REQUIRED_SECRETS
) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` on the project's file, from the repository root, with
    ``secrets`` in the environment (and no other EVENTLAKE_/AIRFLOW_ variable)."""
    if not os.access(DOCKER_COMPOSE, os.X_OK):
        pytest.fail(
            f"{DOCKER_COMPOSE} is missing: run `make setup` "
            "(it installs Debian's docker-compose package).",
            pytrace=False,
        )
    return subprocess.run(
        [
            str(DOCKER_COMPOSE),
            "--project-directory",
            str(ROOT),
            "-f",
            str(COMPOSE_FILE),
            "config",
            *args,
        ],
        cwd=ROOT,
        env={
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(
                    (
                        "AIRFLOW_",
                        "EVENTLAKE_UI_",
                        "EVENTLAKE_SPARK_AUTH",
                        "EVENTLAKE_S3_",
                        "EVENTLAKE_WAREHOUSE",
                    )
                )
            },
            **secrets,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@functools.cache
def _resolved_services() -> dict[str, dict[str, Any]]:
    """The services as docker-compose resolves them (anchors merged, variables filled)."""
    result = _docker_compose_config()
    if result.returncode != 0:
        pytest.fail(f"docker-compose config failed:\n{result.stderr}", pytrace=False)
    config = yaml.safe_load(result.stdout)
    services: dict[str, dict[str, Any]] = config["services"]
    return services


def _dockerfile_text() -> str:
    """The Dockerfile with line continuations joined and whitespace collapsed."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    return re.sub(r"\s+", " ", text.replace("\\\n", " "))


def test_compose_file_validates() -> None:
    result = _docker_compose_config("-q")

    assert result.returncode == 0, result.stderr


def test_compose_defines_every_eventlake_service() -> None:
    missing = REQUIRED_SERVICES - set(_resolved_services())

    assert not missing, f"services missing from docker-compose.yml: {sorted(missing)}"


def test_kafka_runs_the_official_apache_kafka_4_image() -> None:
    image = _resolved_services().get("kafka", {}).get("image", "")

    assert image.startswith("apache/kafka:4"), f"kafka runs {image!r}"


def test_spark_and_airflow_services_run_the_project_image() -> None:
    services = _resolved_services()
    project_services = [name for name in services if name.startswith(("spark-", "airflow-"))]

    wrong = {
        name: services[name].get("image")
        for name in project_services
        if services[name].get("image") != PROJECT_IMAGE
    }

    assert {"spark-master", "spark-worker", "airflow-scheduler"} <= set(project_services)
    assert not wrong, f"services not on {PROJECT_IMAGE}: {wrong}"


def test_dockerfile_exists() -> None:
    assert DOCKERFILE.is_file(), f"{DOCKERFILE} is missing"


@pytest.mark.parametrize(
    "command", MAVEN_COMMANDS, ids=["spark", "kafka", "s3a", "s3server", "metastore"]
)
def test_dockerfile_fetches_jars_with_maven(command: str) -> None:
    assert DOCKERFILE.is_file(), f"{DOCKERFILE} is missing"

    assert command in _dockerfile_text(), f"infra/Dockerfile does not run: {command}"


@pytest.mark.parametrize("prefix", [EVENTLAKE_JAR, HADOOP_JAR])
def test_dockerfile_puts_eventlakes_own_jars_among_sparks(prefix: str) -> None:
    # Both are required jars (eventlake.spark.conf.REQUIRED_JARS): a job refuses to start
    # without either. A copy names the jar itself, or keeps the built one's name.
    copies = re.findall(r"cp (\S+) infra/jars/spark/(\S*)", _dockerfile_text())
    names = [target or Path(source).name for source, target in copies]
    assert any(name.startswith(prefix) for name in names), names


def test_the_opt_in_stream_service_stops_gracefully_and_restarts() -> None:
    stream = _resolved_services()["stream"]

    assert stream.get("image") == PROJECT_IMAGE
    assert stream["command"][:2] == ["eventlake", "ingest"]
    assert any(arg.startswith("processing-time=") for arg in stream["command"])
    assert stream["stop_signal"] == "SIGTERM"
    assert stream["restart"] == "unless-stopped"
    assert stream["profiles"] == ["stream"]  # opt-in: not in a plain `up`


def _command(service: str) -> list[str]:
    command = _resolved_services()[service]["command"]
    return shlex.split(command) if isinstance(command, str) else list(command)


def _flags(command: list[str]) -> set[str]:
    return {arg for arg in command if arg.startswith("--")}


def test_the_spark_daemons_run_as_the_local_cluster_runs_them() -> None:
    """docker-compose's master and worker are the processes `make test-cluster` exercises:
    the same classes, flags and daemon settings (hosts and paths differ)."""
    settings = load_local_settings()
    services = _resolved_services()
    daemon_env = daemon_environment({})

    master, worker = _command("spark-master"), _command("spark-worker")

    assert master[:2] == [SPARK_DAEMON, MASTER_CLASS]
    assert _flags(master) == _flags(master_command(settings))
    assert worker[:2] == [SPARK_DAEMON, WORKER_CLASS]
    # Each container has its own host name and UI port; the worker's resources are given
    # as the local cluster gives them.
    assert {"--cores", "--memory", "--work-dir"} <= _flags(worker)
    assert _flags(worker) <= _flags(worker_command(settings, 1, Path("/w")))
    master_env = services["spark-master"]["environment"]
    assert master_env["SPARK_MASTER_OPTS"] == daemon_env["SPARK_MASTER_OPTS"]
    for name in ("spark-master", "spark-worker"):
        env = services[name]["environment"]
        assert env["SPARK_DAEMON_MEMORY"] == daemon_env["SPARK_DAEMON_MEMORY"]


def test_airflow_runs_the_local_clusters_components_and_connections() -> None:
    services = _resolved_services()
    scheduler_env = services["airflow-scheduler"]["environment"]

    for component in ALL_COMPONENTS:
        assert _command(f"airflow-{component}") == ["airflow", component]
    spark = json.loads(scheduler_env[f"AIRFLOW_CONN_{SPARK_CONN_ID.upper()}"])
    kafka = json.loads(scheduler_env[f"AIRFLOW_CONN_{KAFKA_CONN_ID.upper()}"])
    assert (spark["conn_type"], spark["host"], spark["port"]) == (
        "spark",
        "spark://spark-master",
        7077,
    )
    assert kafka["conn_type"] == "kafka"
    assert kafka["extra"]["bootstrap.servers"] == scheduler_env["EVENTLAKE_BOOTSTRAP_SERVERS"]
    assert scheduler_env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
    # The drivers (Airflow tasks) size the executors on the standalone cluster.
    assert {"EVENTLAKE_EXECUTOR_MEMORY", "EVENTLAKE_EXECUTOR_CORES"} <= set(scheduler_env)


def test_the_image_installs_the_postgres_drivers_from_the_project_pins() -> None:
    """psycopg2 and asyncpg come with the package (pyproject.toml), not a second pin."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]

    assert any(pin.startswith("psycopg2-binary==") for pin in pins)
    assert any(pin.startswith("asyncpg==") for pin in pins)
    assert "psycopg2-binary==" not in _dockerfile_text()


def test_compose_refuses_to_start_without_each_secret_and_names_it() -> None:
    for name in REQUIRED_SECRETS:
        missing = {k: v for k, v in REQUIRED_SECRETS.items() if k != name}

        result = _docker_compose_config("-q", secrets=missing)

        assert result.returncode != 0, f"docker-compose config accepted no {name}"
        assert f"set {name}, see .env.example" in result.stderr


def test_every_secret_the_compose_file_requires_is_documented_in_env_example() -> None:
    documented = set(re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", COMPOSE_FILE.read_text()))

    assert required == set(REQUIRED_SECRETS)
    assert required <= documented


def test_published_ports_bind_to_loopback_unless_told_otherwise() -> None:
    published = {name: service.get("ports", []) for name, service in _resolved_services().items()}

    bound = {
        name: [p if isinstance(p, str) else p.get("host_ip") for p in ports]
        for name, ports in published.items()
        if ports
    }
    assert bound, "no service publishes a port"
    for name, ports in bound.items():
        assert all(str(p).startswith("127.0.0.1") for p in ports), (name, ports)


def test_airflow_asks_for_a_login() -> None:
    environment = _resolved_services()["airflow-api-server"]["environment"]

    assert environment["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "false"
    assert environment["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin"


def test_drivers_and_daemons_share_the_spark_secret_from_the_environment() -> None:
    services = _resolved_services()
    secret = REQUIRED_SECRETS["EVENTLAKE_SPARK_AUTH_SECRET"]

    for name in ("spark-master", "spark-worker", "airflow-scheduler"):
        assert services[name]["environment"]["EVENTLAKE_SPARK_AUTH_SECRET"] == secret, name
    # Never on a command line: the daemons get it through the script's private conf.
    for name, service in services.items():
        assert secret not in json.dumps(service.get("command", "")), name
    assert "COPY infra/pom.xml infra/maven-settings.xml infra/spark-daemon.sh infra/" in (
        _dockerfile_text()
    )


def test_the_warehouse_is_on_the_object_store_and_no_volume_is_shared() -> None:
    services = _resolved_services()
    mounts: dict[str, list[str]] = {}
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            mounts.setdefault(source, []).append(name)

    assert {source: names for source, names in mounts.items() if len(names) > 1} == {}
    for name in ("spark-master", "spark-worker", "airflow-scheduler", "stream"):
        env = services[name]["environment"]
        assert env["EVENTLAKE_WAREHOUSE"] == "s3a://eventlake/warehouse", name
        assert env["EVENTLAKE_S3_ENDPOINT"] == "http://object-store:9000", name


def test_the_object_store_runs_the_local_s3_server_on_the_compose_network_only() -> None:
    store = _resolved_services()["object-store"]

    assert store.get("image") == PROJECT_IMAGE
    assert _command("object-store") == ["python", "-m", "eventlake.local.s3_container"]
    assert store["environment"]["EVENTLAKE_S3_SERVER_PORT"] in (9000, "9000")
    assert not store.get("ports"), "the object store must publish no port on the host"


def test_the_dags_get_the_object_store_as_the_aws_default_connection() -> None:
    env = _resolved_services()["airflow-scheduler"]["environment"]
    connection = json.loads(env[f"AIRFLOW_CONN_{AWS_CONN_ID.upper()}"])

    assert connection["conn_type"] == AWS_CONN_TYPE
    assert connection["extra"]["endpoint_url"] == env["EVENTLAKE_S3_ENDPOINT"]
    assert connection["password"] == REQUIRED_SECRETS["EVENTLAKE_S3_SECRET_ACCESS_KEY"]
    # The tasks take the keys from the connection, not from their environment.
    assert "EVENTLAKE_S3_SECRET_ACCESS_KEY" not in env


def test_the_metastore_keeps_its_catalog_on_postgres_and_the_jobs_register_in_it() -> None:
    services = _resolved_services()
    metastore = services["metastore"]
    env = metastore["environment"]

    assert metastore.get("image") == PROJECT_IMAGE
    assert _command("metastore") == ["python", "-m", "eventlake.local.metastore_container"]
    assert env["EVENTLAKE_METASTORE_DATABASE_URL"] == "jdbc:postgresql://postgres:5432/metastore"
    assert (
        env["EVENTLAKE_METASTORE_DATABASE_USER"]
        == services["postgres"]["environment"]["POSTGRES_USER"]
    )
    # The password from .env, in its environment only (never on its command line).
    password = REQUIRED_SECRETS["AIRFLOW_DB_PASSWORD"]
    assert env["EVENTLAKE_METASTORE_DATABASE_PASSWORD"] == password
    assert password not in json.dumps(metastore.get("command", ""))
    assert "EVENTLAKE_SPARK_AUTH_SECRET" not in env  # a secret it has no use for
    assert metastore["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert metastore["ports"] == ["127.0.0.1:9083:9083/tcp"]  # as docker-compose 1.29 gives it
    uri = f"thrift://metastore:{env['EVENTLAKE_METASTORE_PORT']}"
    for name in ("airflow-scheduler", "airflow-triggerer", "stream"):
        assert services[name]["environment"]["EVENTLAKE_METASTORE_URI"] == uri, name
        assert "metastore" in services[name]["depends_on"], name


def test_the_image_gives_the_metastore_its_driver_and_a_folder_of_its_own() -> None:
    text = _dockerfile_text()

    assert "EVENTLAKE_METASTORE_JARS_DIR=/opt/eventlake/infra/jars/metastore" in text
    assert "EVENTLAKE_METASTORE_DIR" not in text  # docker-compose.yml names it
    assert "/opt/metastore" in text
    assert _resolved_services()["metastore"]["environment"]["EVENTLAKE_METASTORE_DIR"] == (
        "/opt/metastore"
    )
