"""One settings object for the whole project, read from the environment.

Every host, path and credential comes from here; nothing else in the code base holds
one. Each field can be overridden by an environment variable named
``EVENTLAKE_<FIELD>`` (``EVENTLAKE_BOOTSTRAP_SERVERS``, ``EVENTLAKE_WAREHOUSE``, ...).
Kafka client options (security protocol, SASL) pass through as a JSON object in
``EVENTLAKE_KAFKA_OPTIONS`` so that no credential ever appears in code or on a
command line.

The local platform's own fields (the local broker's and Airflow's ports and folders)
are not job settings: :class:`eventlake.local.settings.LocalSettings` adds them.

Example:
    >>> from eventlake.core.settings import load_settings
    >>> settings = load_settings()
    >>> settings.bootstrap_servers
    '127.0.0.1:9092'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from eventlake.core.errors import Refused
from eventlake.core.locations import Location, LocationSetting
from eventlake.core.object_store import ObjectStoreSettings
from eventlake.core.topic_names import check_topic_name

#: The repository root when eventlake runs from a checkout (lib/eventlake/settings.py).
PROJECT_ROOT = Path(__file__).resolve().parents[3]


def in_project(relative: str, *, description: str) -> Any:
    """A path setting whose default lies in the checkout (``PROJECT_ROOT / relative``).

    Example:
        >>> class Paths(BaseSettings):
        ...     jars_dir: Path = in_project("infra/jars", description="The jars.")
    """
    return Field(default=PROJECT_ROOT / relative, description=description)


#: The prefix of every setting's environment variable.
ENV_PREFIX = "EVENTLAKE_"

#: How a Kafka DAG is scheduled: its cron, the arrival of records on its topics, or both.
ScheduleMode = Literal["schedule", "events", "both"]


class RepublishRoute(BaseModel):
    """One re-key route of the republish DAG: ``eventlake republish`` options by name.

    Example:
        >>> RepublishRoute(source="orders.raw", target="orders").name
        'orders.raw>orders'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    target: str
    key_mapper: str = "partitionkey"
    on_missing: str = "keep-key"
    to_mode: str = "keep"
    cleanup_policy: str | None = None
    partitions: PositiveInt | None = None

    @property
    def name(self) -> str:
        """``source>target``: how the DAG's params and task map indexes name the route."""
        return f"{self.source}>{self.target}"


#: Settings whose variable is a comma-separated list rather than JSON.
COMMA_SEPARATED: Final = ("topics",)


class Settings(BaseSettings, ObjectStoreSettings):
    """Runtime configuration; see the module docstring for the environment names (the
    object store's fields: :class:`~eventlake.core.object_store.ObjectStoreSettings`)."""

    # A refused value is never echoed: it may be a secret (hide_input_in_errors).
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="ignore", hide_input_in_errors=True
    )

    bootstrap_servers: str = Field(
        default="127.0.0.1:9092", description="Kafka bootstrap servers, host:port[,host:port]."
    )
    warehouse: LocationSetting = Field(
        default=Location.of(PROJECT_ROOT / "var" / "warehouse"),
        description="Root folder of the Delta tables and streaming checkpoints.",
    )
    spark_master: str = Field(default="local[*]", description="Spark master URL.")
    metastore_uri: str | None = Field(
        default=None,
        description="Hive Metastore that names the tables, e.g. thrift://127.0.0.1:9083 "
        "(eventlake metastore start). Unset: no catalog; the tables are read by path.",
    )
    metastore_schema: str = Field(
        default="eventlake",
        pattern=r"^[a-z][a-z0-9_]*$",
        description="The metastore schema of this warehouse's tables (one per warehouse).",
    )
    driver_memory: str = Field(
        default="2g",
        description="Spark driver memory. `ingest --state` of 5M records in one batch peaks at "
        "~2.4 GB with 2g; 768m keeps it near 1.5 GB at 19-28% more time (docs/benchmarks.md).",
    )
    quality_driver_memory: str = Field(
        default="768m",
        description="Spark driver memory of the quality check: over 5M events 768m peaked "
        "at 1.3-1.4 GB against 1.7-2.1 GB with 2g, ~4% slower (docs/benchmarks.md).",
    )
    driver_java_options: str | None = Field(
        default=None,
        description="JVM options of the Spark driver (GC, JIT, young generation), added to "
        "spark.driver.extraJavaOptions; a value replaces the choice whole. Unset: chosen "
        "for the machine and the job (eventlake.spark.conf.driver_jvm_options).",
    )
    class_archive: Path | None = Field(
        default=PROJECT_ROOT / "var" / "jvm" / "spark-driver.jsa",
        description="The Spark driver's class archive (JVM class-data sharing, built by "
        "`eventlake class-archive` in make setup): drivers start seconds sooner while it "
        "matches this Java, pyspark and jars. Empty: none.",
    )
    shuffle_partitions: PositiveInt = Field(default=4, description="spark.sql.shuffle.partitions.")
    spark_ui_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Port of the Spark UI of a job's driver (0: any free port). Unset: jobs "
        "run without a UI (one less server per driver on a small machine).",
    )
    # Read only on a cluster (a spark:// master); a local master runs in the driver.
    executor_memory: str = Field(default="1g", description="spark.executor.memory (spark://).")
    executor_cores: PositiveInt = Field(default=1, description="spark.executor.cores (spark://).")
    cores_max: PositiveInt | None = Field(
        default=None,
        description="spark.cores.max on a spark:// master (unset: every free core).",
    )
    # A standalone cluster's RPC (the driver, master, workers and executors) is
    # authenticated and encrypted with one shared secret (eventlake.spark.auth).
    spark_authenticate: bool = Field(
        default=True,
        description="On a spark:// master, authenticate and encrypt Spark's RPC "
        "(spark.authenticate, spark.network.crypto.enabled) with spark_auth_secret. "
        "false only for a cluster that runs without authentication.",
    )
    spark_auth_secret: SecretStr | None = Field(
        default=None,
        description="The standalone cluster's shared secret (spark.authenticate.secret), "
        "required on a spark:// master: from the environment, or in Airflow the "
        "spark_default connection's password. Never on a command line or in the UI.",
    )
    jars_dir: Path = in_project(
        "infra/jars/spark",
        description="Folder holding the Kafka connector and Delta jars (make jars).",
    )
    log_config: Path = in_project(
        "infra/log4j2.properties",
        description="log4j2 configuration of Spark drivers (warnings and errors only).",
    )
    kafka_options: dict[str, str] = Field(
        default_factory=dict,
        description="Extra librdkafka/Java client options, e.g. security.protocol, sasl.*.",
    )
    kafka_password: SecretStr | None = Field(
        default=None, description="SASL password; kept out of logs and command lines."
    )
    topics: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["demo.orders"],
        description="Topics the ingest DAG lands (comma-separated, e.g. orders,payments; "
        "blanks around names ignored, a repeated name kept once).",
    )
    state_topics: list[str] = Field(
        default_factory=list,
        description="Compacted topics whose state/<topic> table ingest keeps current "
        '(JSON list, e.g. ["customers"]).',
    )
    republish_routes: list[RepublishRoute] = Field(
        default_factory=list,
        description="Re-key routes of the republish DAG (JSON list, e.g. "
        '[{"source": "orders.raw", "target": "orders", "key_mapper": "partitionkey", '
        '"cleanup_policy": "compact"}]).',
    )
    kafka_fetch_wait_ms: NonNegativeInt = Field(
        default=20,
        description="A Spark Kafka read's fetch.max.wait.ms. Kafka's default, 500 ms, made "
        "every small micro-batch and every read of a short range wait that long.",
    )
    kafka_producer_batch_bytes: PositiveInt = Field(
        default=262144,
        description="Republish's producer batch.size per partition. The Java default, "
        "16 KB, sent ~1 KB events 15 at a time: a copy of 1M of them spent twice the "
        "broker's CPU and 1.4 times the seconds (docs/benchmarks.md).",
    )
    kafka_producer_linger_ms: NonNegativeInt = Field(
        default=50,
        description="How long republish's Kafka producer waits to fill a batch (the Java "
        "client's linger.ms; a Spark task flushes at its end, so no micro-batch ends later "
        "for it). With the Java default, 0, a republish sent batches of a few records, as "
        "fast as it encoded them: 1M events took 1.2 times the seconds (docs/benchmarks.md).",
    )
    ingest_schedule: ScheduleMode = Field(
        default="schedule",
        description="When eventlake_ingest runs: 'schedule' (its cron, every 10 minutes), "
        "'events' (when records arrive on one of its topics, watched in Airflow's "
        "triggerer through the kafka_default connection), or 'both' (whichever comes "
        "first). See docs/airflow-events.md.",
    )
    republish_schedule: ScheduleMode = Field(
        default="schedule",
        description="When eventlake_republish runs, as ingest_schedule; its events are "
        "arrivals on the routes' source topics.",
    )
    arrival_poll_seconds: PositiveFloat = Field(
        default=5.0,
        description="Seconds between two looks of the triggerer at a watched topic's end "
        "offsets (events schedules); a burst within them is one event.",
    )
    max_offsets_per_trigger: PositiveInt | None = Field(
        default=None, description="Upper bound of records read per micro-batch."
    )
    state_interval_seconds: NonNegativeFloat = Field(
        default=0.0,
        description="Seconds between two state steps of a stream that keeps state tables "
        "(0: after every batch). The batches landed meanwhile wait and are applied in one "
        "step, read back from the events table; a stream that stops applies them first.",
    )
    progress_seconds: NonNegativeFloat = Field(
        default=30.0,
        description="Seconds between the progress lines of a streaming run (0: none).",
    )
    dedup: bool = Field(
        default=False,
        description="Ingest lands an event whose (source, id) is already in the events table "
        "within dedup_horizon_hours, or earlier in its batch, in rejects as duplicate_event.",
    )
    dedup_horizon_hours: PositiveFloat = Field(
        default=168.0,
        description="How far back (hours of Kafka time) --dedup looks for an earlier event.",
    )
    dedup_batch_records: PositiveInt = Field(
        default=2_000_000,
        description="Records one --dedup batch reads at most (a bounded run lands its range "
        "in batches of about this many, a stream reads at most this many per micro-batch): "
        "--dedup holds its batch's Kafka records on Spark's local disk, about their size.",
    )
    type_sample_hours: PositiveFloat = Field(
        default=1.0,
        description="Hours of each event type's newest data the typed views infer from.",
    )
    typed_tables: bool = Field(
        default=False,
        description="Ingest keeps a typed table per event type current (docs/tables.md).",
    )
    typed_interval_seconds: NonNegativeFloat = Field(
        default=60.0,
        description="Seconds between two typed-table steps of a stream (0: every batch).",
    )
    # The URI is taken from event data: fetching it would let any producer make the
    # query host send requests into its network (SSRF). file: dataschemas are read always.
    fetch_dataschemas: bool = Field(
        default=False,
        description="Typed views and tables read an event type's http(s) dataschema too "
        "(off: file: ones only; the others' columns are inferred from the data).",
    )
    # Validated by eventlake.quality.config.load_quality_config when a check starts.
    quality: dict[str, Any] = Field(
        default_factory=dict,
        description="Data-quality rules (JSON, see eventlake.quality.config.QualityConfig): "
        '{"defaults": {"max_rejects_rate": 0.01}, "topics": {"orders": {"keyed": true, '
        '"type_pattern": "^com[.]acme[.]", "severity": {"row_count": "error"}}}}.',
    )

    @field_validator(*COMMA_SEPARATED, mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("topics")
    @classmethod
    def _legal_topic_names(cls, names: list[str]) -> list[str]:
        if not names:
            raise ValueError("names no topic: give one or more, comma-separated")
        return [check_topic_name(name) for name in dict.fromkeys(names)]

    @field_validator("class_archive", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("spark_auth_secret")
    @classmethod
    def _secret_without_edge_spaces(cls, secret: SecretStr | None) -> SecretStr | None:
        # Spark trims the values of a properties file (the daemons' spark-defaults.conf):
        # a secret with edge spaces would differ between the driver and the cluster.
        if secret is not None:
            value = secret.get_secret_value()
            if not value or value != value.strip():
                raise ValueError(
                    "the Spark secret is empty or starts or ends with white space, which "
                    "Spark trims; generate one with: python -c "
                    "'import secrets; print(secrets.token_hex(32))'"
                )
        return secret

    @field_validator("warehouse")
    @classmethod
    def _absolute_warehouse(cls, warehouse: Location) -> Location:
        # Executors on a cluster run in their worker's work dir: a relative path would
        # name another folder there than in the driver.
        return warehouse.absolute()

    @property
    def checkpoints(self) -> Location:
        """Folder under the warehouse that holds streaming checkpoints."""
        return self.warehouse / "_checkpoints"

    def table_path(self, name: str) -> Location:
        """Location of a warehouse table, e.g. ``table_path("events")``."""
        return self.warehouse / name

    def as_environment(self) -> dict[str, str]:
        """Every setting that has a value as the ``EVENTLAKE_*`` variable that gives it back
        (lists and objects as JSON, ``topics`` comma-separated, secrets in clear): for the
        environment of a child process, never for a command line or a log.

        Example:
            >>> load_settings(topics="a,b").as_environment()["EVENTLAKE_TOPICS"]
            'a,b'
        """
        env: dict[str, str] = {}
        for name, value in self.model_dump(mode="json").items():
            field = getattr(self, name)
            if isinstance(field, SecretStr):
                value = field.get_secret_value()
            if value is None:
                continue
            if name in COMMA_SEPARATED:
                text = ",".join(value)
            else:
                text = value if isinstance(value, str) else json.dumps(value)
            env[f"EVENTLAKE_{name.upper()}"] = text
        return env

    def kafka_client_options(self) -> dict[str, Any]:
        """librdkafka options for confluent-kafka clients, credentials included."""
        options: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers}
        options.update(self.kafka_options)
        if self.kafka_password is not None:
            options["sasl.password"] = self.kafka_password.get_secret_value()
        return options


SettingsT = TypeVar("SettingsT", bound=Settings)


class InvalidSettingError(Refused, ValueError):
    """A setting whose value is refused: an ``EVENTLAKE_*`` variable, or an override
    (a command's option). The message names each and says why, never the value, which
    may be a secret."""


def build_settings(kind: type[SettingsT], overrides: Mapping[str, Any]) -> SettingsT:
    """``kind`` from the environment and ``overrides`` (None values left out); a value
    it cannot take is an :class:`InvalidSettingError` naming the variable, not
    pydantic's report.

    Example:
        >>> build_settings(Settings, {"shuffle_partitions": 0})
        Traceback (most recent call last):
        InvalidSettingError: setting shuffle_partitions: Input should be greater than ...
    """
    clean = {key: value for key, value in overrides.items() if value is not None}
    try:
        return kind(**clean)
    except ValidationError as error:
        raise InvalidSettingError(
            validation_problems(error, lambda loc: _setting_name(loc, clean))
        ) from None
    except SettingsError as error:
        # A JSON-valued variable (EVENTLAKE_KAFKA_OPTIONS, EVENTLAKE_QUALITY, ...) that
        # does not parse; pydantic-settings names the field and keeps the parser's error.
        found = re.search(r'field "([^"]+)"', str(error))
        name = f"{ENV_PREFIX}{found.group(1).upper()}" if found else "an EVENTLAKE_* variable"
        cause = error.__cause__
        why = f"not valid JSON ({cause})" if isinstance(cause, json.JSONDecodeError) else str(cause)
        raise InvalidSettingError(f"{name}: {why}") from None


def validation_problems(error: ValidationError, where: Callable[[tuple[Any, ...]], str]) -> str:
    """pydantic's refusal in one line: each refused place, named by ``where(loc)``, and
    why; never the value (it may be a secret), nor pydantic's links.

    Example:
        >>> validation_problems(error, lambda loc: "EVENTLAKE_QUALITY" + place(loc))
        'EVENTLAKE_QUALITY.defaults.max_rows: Input should be a valid integer ...'
    """
    return "; ".join(f"{where(tuple(detail['loc']))}: {detail['msg']}" for detail in error.errors())


def place(loc: Sequence[Any]) -> str:
    """A place inside a value as a suffix: ``[0].partitions`` for ``(0, "partitions")``.

    Example:
        >>> place(("defaults", "max_rows"))
        '.defaults.max_rows'
    """
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def _setting_name(loc: tuple[Any, ...], overrides: Mapping[str, Any]) -> str:
    """How a user set the value at ``loc``: an override by its field name, otherwise its
    environment variable; a part inside it as ``[0].partitions``."""
    field, *inside = loc
    name = f"setting {field}" if field in overrides else f"{ENV_PREFIX}{str(field).upper()}"
    return name + place(inside)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with explicit overrides taking precedence; a value
    they cannot take is an :class:`InvalidSettingError`.

    Example:
        >>> load_settings(bootstrap_servers="kafka:9092").bootstrap_servers
        'kafka:9092'
    """
    return build_settings(Settings, overrides)
