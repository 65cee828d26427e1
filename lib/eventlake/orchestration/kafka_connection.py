"""Kafka settings and credentials from the Airflow connection ``kafka_default``.

The connection is the Airflow Kafka provider's type ``kafka``: its extra is the
client's config dict (``{"bootstrap.servers": ..., "security.protocol": ...,
"sasl.mechanism": ..., "sasl.username": ..., "sasl.password": ...}``), read here with the
provider's hook. When it is defined, Kafka comes from it: the bootstrap servers and the
client options replace ``EVENTLAKE_BOOTSTRAP_SERVERS`` and ``EVENTLAKE_KAFKA_OPTIONS``
(one cluster's address never meets another's security options), and its
``sasl.password`` replaces ``EVENTLAKE_KAFKA_PASSWORD`` (kept from the worker when the
connection holds none). Without it the worker's ``EVENTLAKE_*`` settings stay, as for
the CLI.

Where the password travels: a DAG's plan task (its output an XCom, kept in the
metadata DB and shown in the UI) gets everything but the password; the spark-submit
task reads the connection when it runs and hands the password to the spark-submit
process in its environment (``EVENTLAKE_KAFKA_PASSWORD``, see :func:`kafka_job_env`),
never in its command line or Spark conf; the job builds the Kafka JAAS line from it in
memory (:func:`eventlake.kafka.connector_options.spark_kafka_options`).

Example:
    >>> kafka = parse_kafka_config({"bootstrap.servers": "kafka:9094", "sasl.password": "pw"})
    >>> kafka.bootstrap_servers, kafka.options, kafka.password
    ('kafka:9094', {}, SecretStr('**********'))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import SecretStr

from eventlake.core.settings import Settings
from eventlake.orchestration.airflow_connection import find_connection
from eventlake.orchestration.errors import OrchestrationError

#: The Airflow Kafka provider's default connection, the one eventlake's DAGs read.
KAFKA_CONN_ID: Final = "kafka_default"
#: The provider's connection type (``conn_type``) of a Kafka connection.
KAFKA_CONN_TYPE: Final = "kafka"
#: The config key of the password: the only secret eventlake takes from the connection.
PASSWORD_KEY: Final = "sasl.password"
#: Options that are callables in a confluent-kafka client (given as dotted paths in the
#: connection): a Spark job in another process cannot run them.
_CALLBACK_KEYS: Final = frozenset(
    {"error_cb", "throttle_cb", "stats_cb", "log_cb", "oauth_cb", "on_commit"}
)


@dataclass(frozen=True)
class KafkaConnection:
    """The Kafka part of eventlake's settings, as a ``kafka`` connection gives it.

    Example:
        >>> KafkaConnection("kafka:9094", {"sasl.username": "app"}).password is None
        True
    """

    bootstrap_servers: str
    #: Client options without the password (Java client names, as in kafka_options).
    options: dict[str, str] = field(default_factory=dict)
    password: SecretStr | None = None


def parse_kafka_config(config: Mapping[str, Any], conn_id: str = KAFKA_CONN_ID) -> KafkaConnection:
    """The Kafka settings in a ``kafka`` connection's config dict (its extra).

    ``bootstrap.servers`` is required; ``sasl.password`` becomes the password; every
    other option passes on as in ``EVENTLAKE_KAFKA_OPTIONS``, numbers and booleans as
    the strings the clients read, librdkafka's ``sasl.mechanisms`` as the Java client's
    ``sasl.mechanism``. Raises :class:`OrchestrationError` naming ``conn_id`` for what
    a Spark job cannot be given (no bootstrap servers, a callback, a nested value).

    Example:
        >>> parse_kafka_config({"bootstrap.servers": "k:9094", "sasl.mechanisms": "PLAIN",
        ...                     "enable.idempotence": True}).options
        {'sasl.mechanism': 'PLAIN', 'enable.idempotence': 'true'}
    """
    servers = config.get("bootstrap.servers")
    if not isinstance(servers, str) or not servers.strip():
        raise OrchestrationError(
            f"Airflow connection {conn_id!r}: its extra needs "
            '"bootstrap.servers" (host:port[,host:port]).'
        )
    password = config.get(PASSWORD_KEY)
    if password is not None and not isinstance(password, str):
        raise OrchestrationError(f"Airflow connection {conn_id!r}: {PASSWORD_KEY} is not a string.")
    options: dict[str, str] = {}
    for key, value in config.items():
        if key in {"bootstrap.servers", PASSWORD_KEY}:
            continue
        if key in _CALLBACK_KEYS:
            raise OrchestrationError(
                f"Airflow connection {conn_id!r}: {key} is a client callback, which a "
                "Spark job cannot run; remove it (eventlake's jobs take SASL/SSL options)."
            )
        if isinstance(value, bool):  # before int: bool is an int
            text = "true" if value else "false"
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            raise OrchestrationError(
                f"Airflow connection {conn_id!r}: option {key} is {value!r}; Kafka client "
                "options are strings, numbers or booleans."
            )
        # librdkafka accepts both names; the Java client (Spark's) only the singular.
        options["sasl.mechanism" if key == "sasl.mechanisms" else key] = text
    return KafkaConnection(
        bootstrap_servers=servers.strip(),
        options=options,
        password=SecretStr(password) if password else None,
    )


def with_kafka_connection(settings: Settings, kafka: KafkaConnection | None) -> Settings:
    """``settings`` with the connection's Kafka fields in place (unchanged without one):
    bootstrap servers and options from it, its password when it has one.

    Example:
        >>> with_kafka_connection(load_settings(), KafkaConnection("k:9094")).bootstrap_servers
        'k:9094'
    """
    if kafka is None:
        return settings
    return settings.model_copy(
        update={
            "bootstrap_servers": kafka.bootstrap_servers,
            "kafka_options": dict(kafka.options),
            "kafka_password": kafka.password or settings.kafka_password,
        }
    )


def kafka_job_env(kafka: KafkaConnection) -> dict[str, str]:
    """The environment that gives a spark-submit (and the job's settings) the
    connection's Kafka settings, the password included: for the spark-submit process
    only, never for a plan, a log line or a command line.

    Example:
        >>> sorted(kafka_job_env(KafkaConnection("k:9094", password=SecretStr("pw"))))
        ['EVENTLAKE_BOOTSTRAP_SERVERS', 'EVENTLAKE_KAFKA_OPTIONS', 'EVENTLAKE_KAFKA_PASSWORD']
    """
    env = {
        "EVENTLAKE_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        # Also when empty: the worker's own options belong to another cluster.
        "EVENTLAKE_KAFKA_OPTIONS": json.dumps(kafka.options),
    }
    if kafka.password is not None:
        env["EVENTLAKE_KAFKA_PASSWORD"] = kafka.password.get_secret_value()
    return env


def read_kafka_connection(conn_id: str = KAFKA_CONN_ID) -> KafkaConnection | None:
    """The Kafka settings of the Airflow connection ``conn_id``, or None when it is not
    defined (in the metadata DB, an ``AIRFLOW_CONN_<ID>`` variable or a secrets backend).

    Read as the Kafka provider's hook reads it (its ``get_connection`` is Airflow's
    own); Airflow masks the connection's sensitive extra values (``sasl.password``) in
    task logs as it reads them. Raises :class:`OrchestrationError` when the connection
    is not of type ``kafka`` or its config cannot reach a Spark job.

    Example:
        >>> read_kafka_connection().bootstrap_servers  # AIRFLOW_CONN_KAFKA_DEFAULT set
        'kafka:9094'
    """
    connection = find_connection(
        conn_id,
        KAFKA_CONN_TYPE,
        "Kafka settings (the Kafka provider's type, its extra the client config dict)",
    )
    if connection is None:
        return None
    # The provider's hooks build their clients from this dict (KafkaBaseHook._build_config
    # adds callables for managed clouds, which no Spark job could use).
    return parse_kafka_config(connection.extra_dejson, conn_id)
