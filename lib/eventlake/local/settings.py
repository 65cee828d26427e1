"""Settings of the local platform: the job settings plus the local broker's and Airflow's.

:class:`LocalSettings` extends :class:`eventlake.settings.Settings` (the broker and the
demo also need the bootstrap servers, the warehouse, the Spark master...) with the
fields only the local platform reads. They keep their ``EVENTLAKE_<FIELD>`` names
(``EVENTLAKE_BROKER_PORT``, ``EVENTLAKE_AIRFLOW_PORT``, ...), so nothing changed for
users; the jobs' :class:`~eventlake.settings.Settings` ignores them.

Example:
    >>> from eventlake.local.settings import load_local_settings
    >>> load_local_settings(broker_port=19092).broker_port
    19092
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from eventlake.settings import PROJECT_ROOT, Settings


class LocalSettings(Settings):
    """Job settings plus the local broker's and Airflow's; see the module docstring."""

    kafka_jars_dir: Path = Field(
        default=PROJECT_ROOT / "infra" / "jars" / "kafka",
        description="Folder holding the Apache Kafka broker jars (make jars).",
    )
    broker_dir: Path = Field(
        default=PROJECT_ROOT / "var" / "broker",
        description="Data, logs and pid file of the local broker.",
    )
    broker_port: int = Field(default=9092, description="Client port of the local broker.")
    controller_port: int = Field(default=9093, description="KRaft controller port.")
    broker_sasl_port: int | None = Field(
        default=None,
        description="When set, the local broker also listens with SASL_PLAINTEXT "
        "(SCRAM-SHA-512) on this port, for the user in kafka_options/kafka_password.",
    )
    airflow_home: Path = Field(
        default=PROJECT_ROOT / "var" / "airflow",
        description="AIRFLOW_HOME of the local Airflow that `make demo` starts.",
    )
    airflow_port: int = Field(default=8080, description="Port of the local Airflow UI/API.")
    broker_heap: str = Field(default="512m", description="Java heap of the local broker.")


def load_local_settings(**overrides: Any) -> LocalSettings:
    """Local settings from the environment, with explicit overrides taking precedence.

    Example:
        >>> load_local_settings(airflow_port=18080).airflow_port
        18080
    """
    clean = {key: value for key, value in overrides.items() if value is not None}
    return LocalSettings(**clean)
