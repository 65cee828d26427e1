"""The warehouse's object store from the Airflow connection ``aws_default``.

The connection has the Amazon provider's type ``aws`` and its fields (the provider need
not be installed: eventlake reads the connection through Airflow's own hook): the login
is the access key id, the password the secret access key, and its extra may hold
``region_name``, ``endpoint_url`` (an S3-compatible server; also as
``service_config.s3.endpoint_url``) and ``config_kwargs.s3.addressing_style`` (``path``
for path-style addressing). When it is defined, it replaces the worker's
``EVENTLAKE_S3_*`` settings whole (one store's endpoint never meets another's keys);
without it they stay, as for the CLI.

Where the keys travel, as the Kafka password does
(:mod:`eventlake.orchestration.kafka_connection`): a plan task (its output an XCom)
gets the endpoint, region and addressing but never the keys; the spark-submit task
reads the connection when it runs and hands the keys to the spark-submit process in
its environment (:meth:`ObjectStoreSettings.environment`), never its command line or
Spark conf; the job sets them through py4j (:mod:`eventlake.spark.s3a`).

Example:
    >>> store = parse_aws_connection("AKIA", "secret", {"endpoint_url": "http://s3:9000"})
    >>> store.s3_endpoint, store.s3_access_key_id
    ('http://s3:9000', SecretStr('**********'))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import SecretStr

from eventlake.core.object_store import AWS_CONN_ID, AWS_CONN_TYPE, ObjectStoreSettings
from eventlake.core.settings import Settings
from eventlake.orchestration.airflow_connection import find_connection
from eventlake.orchestration.errors import OrchestrationError

__all__ = ["AWS_CONN_ID", "AWS_CONN_TYPE", "parse_aws_connection", "read_object_store_connection"]
#: The settings fields the connection gives (all of them, when it is defined).
FIELDS: Final = tuple(ObjectStoreSettings.model_fields)


def _text(extra: Mapping[str, Any], conn_id: str, *path: str) -> str | None:
    """The string at ``path`` in the extra (None when absent); refused when not a string."""
    value: Any = extra
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if value is None:
        return None
    if not isinstance(value, str):
        raise OrchestrationError(
            f"Airflow connection {conn_id!r}: {'.'.join(path)} in its extra is {value!r}, "
            "not a string."
        )
    return value.strip() or None


def parse_aws_connection(
    login: str | None,
    password: str | None,
    extra: Mapping[str, Any],
    conn_id: str = AWS_CONN_ID,
) -> ObjectStoreSettings:
    """The object store's settings in an ``aws`` connection's fields. Raises
    :class:`OrchestrationError` naming ``conn_id`` for half a key pair or an
    addressing style other than ``path``, ``virtual`` or ``auto``.

    Example:
        >>> parse_aws_connection(None, None, {"region_name": "eu-west-1",
        ...     "config_kwargs": {"s3": {"addressing_style": "path"}}}).s3_path_style
        True
    """
    if bool(login) != bool(password):
        raise OrchestrationError(
            f"Airflow connection {conn_id!r} has half a key pair: give both the login "
            "(access key id) and the password (secret access key), or neither (the "
            "worker's AWS environment applies then)."
        )
    style = _text(extra, conn_id, "config_kwargs", "s3", "addressing_style") or "auto"
    if style not in {"path", "virtual", "auto"}:
        raise OrchestrationError(
            f"Airflow connection {conn_id!r}: addressing_style {style!r} is not path, "
            "virtual or auto."
        )
    endpoint = _text(extra, conn_id, "endpoint_url") or _text(
        extra, conn_id, "service_config", "s3", "endpoint_url"
    )
    region = _text(extra, conn_id, "region_name")
    return ObjectStoreSettings(
        s3_endpoint=endpoint,
        **({"s3_region": region} if region else {}),
        s3_path_style=style == "path",
        s3_access_key_id=SecretStr(login) if login else None,
        s3_secret_access_key=SecretStr(password) if password else None,
    )


def read_object_store_connection(conn_id: str = AWS_CONN_ID) -> ObjectStoreSettings | None:
    """The object store's settings of the Airflow connection ``conn_id``, or None when
    it is not defined (in the metadata DB, an ``AIRFLOW_CONN_<ID>`` variable or a
    secrets backend). Raises :class:`OrchestrationError` when it is not of type ``aws``.

    Example:
        >>> read_object_store_connection().s3_endpoint  # AIRFLOW_CONN_AWS_DEFAULT set
        'http://object-store:9000'
    """
    connection = find_connection(
        conn_id,
        AWS_CONN_TYPE,
        "the object store (the Amazon provider's type: login and password the keys, its "
        "extra the endpoint)",
    )
    if connection is None:
        return None
    return parse_aws_connection(
        connection.login, connection.password, connection.extra_dejson, conn_id
    )


def with_object_store_connection(settings: Settings, store: ObjectStoreSettings | None) -> Settings:
    """``settings`` with the connection's object store in place (unchanged without one).

    Example:
        >>> with_object_store_connection(load_settings(),
        ...     ObjectStoreSettings(s3_region="eu-west-1")).s3_region
        'eu-west-1'
    """
    if store is None:
        return settings
    return settings.model_copy(update={name: getattr(store, name) for name in FIELDS})
