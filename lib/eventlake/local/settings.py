"""Settings of the local platform: the job settings plus the local broker's and Airflow's.

:class:`LocalSettings` extends :class:`eventlake.core.settings.Settings` (the broker and the
demo also need the bootstrap servers, the warehouse, the Spark master...) with the
fields only the local platform reads. They keep their ``EVENTLAKE_<FIELD>`` names
(``EVENTLAKE_BROKER_PORT``, ``EVENTLAKE_AIRFLOW_PORT``, ...), so nothing changed for
users; the jobs' :class:`~eventlake.core.settings.Settings` ignores them.

Example:
    >>> from eventlake.local.settings import load_local_settings
    >>> load_local_settings(broker_port=19092).broker_port
    19092
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, PositiveInt, SecretStr

from eventlake.core.settings import Settings, build_settings, in_project


class LocalSettings(Settings):
    """Job settings plus the local broker's and Airflow's; see the module docstring."""

    kafka_jars_dir: Path = in_project(
        "infra/jars/kafka",
        description="Folder holding the Apache Kafka broker jars (make jars).",
    )
    broker_dir: Path = in_project(
        "var/broker",
        description="Data, logs and pid file of the local broker.",
    )
    s3_server_jars_dir: Path = in_project(
        "infra/jars/s3server",
        description="Folder holding the local S3 server's jars (s3proxy; make jars).",
    )
    s3_server_dir: Path = in_project(
        "var/s3server",
        description="Objects, log, pid and credentials (0600) of the local S3 server.",
    )
    s3_server_port: int = Field(default=9000, description="Port of the local S3 server.")
    s3_server_host: str = Field(
        default="127.0.0.1",
        description="Address the local S3 server listens on: 127.0.0.1 unless asked "
        "(docker-compose's object-store service asks for its container network).",
    )
    metastore_dir: Path = in_project(
        "var/metastore",
        description="Database (Derby), log, pid and configuration of the local Hive "
        "Metastore service (eventlake metastore start).",
    )
    metastore_port: int = Field(
        default=9083, description="Thrift port of the local Hive Metastore service."
    )
    trino_server_url: str = Field(
        default="https://repo1.maven.org/maven2/io/trino/trino-server/476/trino-server-476.tar.gz",
        description="Trino's server archive (make trino downloads it once, then unpacks its "
        "Delta Lake connector only).",
    )
    trino_server_dir: Path = in_project(
        "var/trino-server",
        description="The unpacked Trino server: lib/, bin/ and plugin/delta-lake (make trino).",
    )
    trino_dir: Path = in_project(
        "var/trino",
        description="Configuration, log and pid of the local Trino (eventlake trino start).",
    )
    trino_port: int = Field(default=8091, description="HTTP port of the local Trino.")
    trino_heap: str = Field(default="1G", description="Java heap of the local Trino.")
    trino_java_home: Path | None = Field(
        default=None,
        description="JDK of the local Trino (Java 24 or later); by default JAVA_HOME when it "
        "is one, else the newest such /usr/lib/jvm/*.",
    )
    metastore_host: str = Field(
        default="127.0.0.1",
        description="Address the local metastore listens on: 127.0.0.1 unless asked "
        "(docker-compose's metastore service asks for its container network).",
    )
    metastore_database_url: str | None = Field(
        default=None,
        description="JDBC URL of the local metastore's database, e.g. "
        "jdbc:postgresql://127.0.0.1:5433/metastore (the local cluster's). Unset: an "
        "embedded Derby in metastore_dir.",
    )
    metastore_database_user: str | None = Field(
        default=None, description="User of metastore_database_url."
    )
    metastore_database_password: SecretStr | None = Field(
        default=None,
        description="Password of metastore_database_user; only in the metastore's 0600 "
        "hive-site.xml, never on a command line.",
    )
    metastore_jars_dir: Path = in_project(
        "infra/jars/metastore",
        description="Folder of the local metastore's PostgreSQL JDBC driver (make jars).",
    )
    broker_port: int = Field(default=9092, description="Client port of the local broker.")
    controller_port: int = Field(default=9093, description="KRaft controller port.")
    broker_sasl_port: int | None = Field(
        default=None,
        description="When set, the local broker also listens with SASL_PLAINTEXT "
        "(SCRAM-SHA-512) on this port, for the user in kafka_options/kafka_password.",
    )
    airflow_home: Path = in_project(
        "var/airflow",
        description="AIRFLOW_HOME of the local Airflow that `make demo` starts.",
    )
    airflow_port: int = Field(default=8080, description="Port of the local Airflow UI/API.")
    broker_heap: str = Field(default="512m", description="Java heap of the local broker.")
    # The local cluster (eventlake cluster start): Spark standalone, PostgreSQL, Airflow.
    cluster_dir: Path = in_project(
        "var/cluster",
        description="Data, logs and pids of the local cluster (Spark standalone, "
        "PostgreSQL, its Airflow).",
    )
    spark_master_port: int = Field(
        default=7077, description="Port of the local Spark standalone master."
    )
    spark_master_ui_port: int = Field(
        default=8081, description="Web UI (and /json/ status) port of the local Spark master."
    )
    spark_workers: PositiveInt = Field(default=2, description="Spark workers of the local cluster.")
    spark_worker_ui_port: int = Field(
        default=8082,
        description="Web UI port of the first local Spark worker; worker n uses this + n - 1.",
    )
    spark_worker_cores: PositiveInt = Field(
        default=1, description="Cores each local worker offers."
    )
    spark_worker_memory: str = Field(
        default="2g", description="Memory each local worker offers to executors."
    )
    postgres_port: int = Field(
        default=5433, description="Port of the local cluster's PostgreSQL (Airflow's database)."
    )
    postgres_bin_dir: Path | None = Field(
        default=None,
        description="Folder of initdb/pg_ctl; by default the newest /usr/lib/postgresql/*/bin.",
    )
    cluster_airflow_port: int = Field(
        default=8088, description="Port of the local cluster's Airflow UI/API."
    )
    cluster_metastore_port: int = Field(
        default=9084,
        description="Thrift port of the local cluster's Hive Metastore (on its PostgreSQL).",
    )
    cluster_object_store: bool = Field(
        default=False,
        description="Run the local S3 server in the local cluster and keep its warehouse "
        "there (s3a://eventlake/warehouse unless EVENTLAKE_WAREHOUSE names an s3a:// "
        "location), so that drivers and executors reach it as on a multi-host cluster.",
    )


def load_local_settings(**overrides: Any) -> LocalSettings:
    """Local settings from the environment, with explicit overrides taking precedence.

    Example:
        >>> load_local_settings(airflow_port=18080).airflow_port
        18080
    """
    return build_settings(LocalSettings, overrides)
