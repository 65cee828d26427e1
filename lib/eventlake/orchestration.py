"""What the Airflow DAGs need, kept out of the DAG files so it can be tested on its own.

* the configured topics (``EVENTLAKE_TOPICS``, comma-separated, default ``demo.orders``);
* the DAG params of the ingest DAG (JSON schema, validated by Airflow before a run
  starts) and :class:`IngestParams`, the same rules checked again in Python;
* one ``spark-submit`` per topic: application args, Spark conf, jars and environment
  for :class:`~airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator`,
  all derived from :mod:`eventlake.settings`; the master comes from the Airflow
  connection ``spark_default``, never from here;
* the Airflow assets the ingest job updates (the ``events`` and ``rejects`` tables).

Example:
    >>> from eventlake.settings import load_settings
    >>> params = IngestParams.from_params({"topics": ["orders"], "dry_run": False})
    >>> ingest_application_args(params)
    [['--topic', 'orders', '--starting-offsets', 'earliest', '--trigger', 'available-now']]
    >>> plan = plan_ingest({"topics": ["orders", "payments"]}, load_settings())
    >>> [sorted(submit) for submit in plan][0]
    ['application_args', 'conf', 'env_vars', 'jars']
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from airflow.sdk import Asset, Param

from eventlake.kafka import TOPIC_NAME_PATTERN, InvalidTopicNameError, check_topic_name
from eventlake.settings import RepublishRoute, Settings
from eventlake.spark import spark_conf, spark_jars
from eventlake.status import streams_reading
from eventlake.tables import EVENTS, REJECTS, state_path

#: Environment variable naming the topics the DAGs ingest, comma-separated.
TOPICS_ENV: Final = "EVENTLAKE_TOPICS"
DEFAULT_TOPICS: Final = ("demo.orders",)
#: Airflow connection that gives spark-submit its master (``local[*]``, ``spark://...``).
SPARK_CONN_ID: Final = "spark_default"
EVENTS_ASSET_NAME: Final = "eventlake.events"
REJECTS_ASSET_NAME: Final = "eventlake.rejects"

# JSON-schema patterns of the offsets params; JSON per-partition offsets may span lines.
_STARTING_OFFSETS_PATTERN: Final = r"^(earliest|latest|\{[\s\S]*\})$"
_ENDING_OFFSETS_PATTERN: Final = r"^(latest|\{[\s\S]*\})$"


class OrchestrationError(ValueError):
    """A DAG param or setting cannot be turned into a job run; the message says why."""


def check_topic(name: str) -> str:
    """Return ``name`` when it is a legal Kafka topic name, else raise.

    Example:
        >>> check_topic("demo.orders")
        'demo.orders'
        >>> check_topic("bad topic!")
        Traceback (most recent call last):
        ...
        eventlake.orchestration.OrchestrationError: Invalid Kafka topic name 'bad topic!': ...
    """
    try:
        return check_topic_name(name)
    except InvalidTopicNameError as error:
        raise OrchestrationError(str(error)) from None


def configured_topics(environ: Mapping[str, str] | None = None) -> list[str]:
    """The topics to ingest: ``EVENTLAKE_TOPICS`` (comma-separated), else ``demo.orders``.

    Blanks around names are ignored, duplicates dropped (first one kept); an empty list
    or an illegal name raises, so a bad setting shows as a DAG import error.

    Example:
        >>> configured_topics({"EVENTLAKE_TOPICS": "orders, payments,orders"})
        ['orders', 'payments']
        >>> configured_topics({})
        ['demo.orders']
    """
    env = os.environ if environ is None else environ
    raw = env.get(TOPICS_ENV)
    if raw is None:
        return list(DEFAULT_TOPICS)
    names = [part.strip() for part in raw.split(",") if part.strip()]
    if not names:
        raise OrchestrationError(f"{TOPICS_ENV} is set but names no topic: {raw!r}")
    return [check_topic(name) for name in dict.fromkeys(names)]


def _parse_offsets_json(spec: str, label: str) -> dict[str, dict[str, int]]:
    try:
        parsed = json.loads(spec)
    except json.JSONDecodeError as error:
        raise OrchestrationError(f"{label} is not valid JSON: {error}") from None
    if not isinstance(parsed, dict) or not all(
        isinstance(partitions, dict)
        and all(
            isinstance(partition, str)
            and partition.isdigit()
            and isinstance(offset, int)
            and not isinstance(offset, bool)
            for partition, offset in partitions.items()
        )
        for partitions in parsed.values()
    ):
        raise OrchestrationError(
            f'{label} must look like {{"topic": {{"0": 42, "1": 7}}}} '
            "(partition numbers as strings, offsets as integers)."
        )
    return parsed


def topic_offsets(spec: str, topic: str, *, default: str) -> str:
    """The part of an offsets spec that concerns one topic's job.

    ``earliest``/``latest`` apply to every topic as they are. Per-partition JSON is cut
    down to ``topic`` (Spark refuses offsets of topics a job does not read); a topic the
    JSON does not name gets ``default``.

    Example:
        >>> topic_offsets('{"a": {"0": 5}, "b": {"0": 9}}', "a", default="earliest")
        '{"a": {"0": 5}}'
        >>> topic_offsets('{"a": {"0": 5}}', "b", default="latest")
        'latest'
        >>> topic_offsets("latest", "b", default="earliest")
        'latest'
    """
    if not spec.lstrip().startswith("{"):
        return spec
    parsed = _parse_offsets_json(spec, "offsets")
    return json.dumps({topic: parsed[topic]}) if topic in parsed else default


@dataclass(frozen=True)
class IngestParams:
    """The ingest DAG's params, checked: what one DAG run ingests and how.

    Example:
        >>> IngestParams.from_params({"topics": ["a", "b"], "ending_offsets": "latest"}).bounded
        True
    """

    topics: tuple[str, ...]
    starting_offsets: str = "earliest"
    ending_offsets: str | None = None
    dry_run: bool = False
    #: Re-read every topic from earliest to latest (adds only what is missing) and
    #: rebuild the state tables of state topics from their topics.
    full_refresh: bool = False

    def __post_init__(self) -> None:
        if not self.topics:
            raise OrchestrationError("topics: give at least one topic.")
        if self.full_refresh and (
            self.ending_offsets is not None or self.starting_offsets != "earliest"
        ):
            raise OrchestrationError(
                "full_refresh reads every topic from earliest to latest: leave "
                "starting_offsets and ending_offsets at their defaults."
            )
        for topic in self.topics:
            check_topic(topic)
        if len(set(self.topics)) != len(self.topics):
            raise OrchestrationError(f"topics: names repeat in {list(self.topics)}.")
        self._check_offsets("starting_offsets", self.starting_offsets, ("earliest", "latest"))
        if self.ending_offsets is not None:
            self._check_offsets("ending_offsets", self.ending_offsets, ("latest",))

    def _check_offsets(self, label: str, spec: str, keywords: tuple[str, ...]) -> None:
        if spec in keywords:
            return
        if not spec.lstrip().startswith("{"):
            raise OrchestrationError(
                f"{label}: {spec!r} is neither one of {list(keywords)} nor per-partition JSON."
            )
        unknown = sorted(set(_parse_offsets_json(spec, label)) - set(self.topics))
        if unknown:
            raise OrchestrationError(f"{label} names topics this run does not read: {unknown}.")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> IngestParams:
        """Build from a DAG run's params (missing keys take the defaults).

        Example:
            >>> IngestParams.from_params({"topics": ["orders"]}).starting_offsets
            'earliest'
        """
        topics = params.get("topics")
        if not isinstance(topics, list | tuple) or not all(isinstance(t, str) for t in topics):
            raise OrchestrationError(f"topics must be a list of strings, not {topics!r}.")
        starting = params.get("starting_offsets", "earliest")
        ending = params.get("ending_offsets")
        dry_run = params.get("dry_run", False)
        full_refresh = params.get("full_refresh", False)
        if not isinstance(full_refresh, bool):
            raise OrchestrationError(f"full_refresh must be true or false, not {full_refresh!r}.")
        if not isinstance(starting, str):
            raise OrchestrationError(f"starting_offsets must be a string, not {starting!r}.")
        if ending is not None and not isinstance(ending, str):
            raise OrchestrationError(f"ending_offsets must be a string or null, not {ending!r}.")
        if not isinstance(dry_run, bool):
            raise OrchestrationError(f"dry_run must be true or false, not {dry_run!r}.")
        return cls(tuple(topics), starting, ending, dry_run, full_refresh)

    @property
    def bounded(self) -> bool:
        """True for a bounded batch run (backfill/replay) up to ``ending_offsets``, and
        for a full refresh (earliest to latest)."""
        return self.ending_offsets is not None or self.full_refresh

    def application_args(self, topic: str, *, state: bool = False) -> list[str]:
        """Arguments of ``jobs/ingest_cloudevents.py`` (= ``eventlake ingest``) for one topic.

        The job's checkpoint is its default, per topic, so that a DAG run continues where
        ``eventlake ingest --topic <topic>`` (or the previous run) stopped. ``state``
        (a state topic) adds ``--state --auto-reconcile`` to streaming runs (a state table
        found at risk of missed tombstones is rebuilt, not only warned about); a bounded
        run cannot keep
        state (it would replay old records over newer ones), a full refresh rebuilds
        it with :func:`plan_reconcile` instead.

        Example:
            >>> IngestParams(("a",), ending_offsets="latest").application_args("a")
            ['--topic', 'a', '--starting-offsets', 'earliest', '--ending-offsets', 'latest']
            >>> IngestParams(("a",)).application_args("a", state=True)[-2:]
            ['--state', '--auto-reconcile']
        """
        args = [
            "--topic",
            topic,
            "--starting-offsets",
            topic_offsets(self.starting_offsets, topic, default="earliest"),
        ]
        if not self.bounded:
            on_state = ["--state", "--auto-reconcile"] if state else []
            return [*args, "--trigger", "available-now", *on_state]
        ending = "latest" if self.ending_offsets is None else self.ending_offsets
        return [*args, "--ending-offsets", topic_offsets(ending, topic, default="latest")]


def ingest_application_args(
    params: IngestParams, state_topics: Sequence[str] = ()
) -> list[list[str]]:
    """One argument list per topic: the ingest DAG maps one spark-submit over each.

    Example:
        >>> [args[1] for args in ingest_application_args(IngestParams(("a", "b")))]
        ['a', 'b']
    """
    return [params.application_args(topic, state=topic in state_topics) for topic in params.topics]


def submit_conf(settings: Settings) -> dict[str, str]:
    """Spark conf for SparkSubmitOperator: :func:`eventlake.spark.spark_conf` without
    ``spark.jars`` (that goes to the operator's ``jars``, i.e. ``--jars``).

    Example:
        >>> submit_conf(load_settings())["spark.sql.extensions"]
        'io.delta.sql.DeltaSparkSessionExtension'
    """
    conf = spark_conf(settings)
    conf.pop("spark.jars", None)
    return conf


def submit_jars(settings: Settings) -> str:
    """The jars folder's jars, comma-separated, for the operator's ``jars`` argument.

    Raises :class:`eventlake.spark.MissingJarsError` when the folder is incomplete.

    Example:
        >>> Path(submit_jars(load_settings()).split(",")[0]).name
        'commons-pool2-2.12.1.jar'
    """
    return ",".join(str(jar) for jar in spark_jars(settings))


def job_env(settings: Settings) -> dict[str, str]:
    """Environment of the spark-submit process, on top of the worker's own: the job's
    settings that must match the DAG's (credentials are never passed this way).

    Example:
        >>> job_env(load_settings(bootstrap_servers="kafka:9092"))["EVENTLAKE_BOOTSTRAP_SERVERS"]
        'kafka:9092'
    """
    return {
        "EVENTLAKE_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "EVENTLAKE_WAREHOUSE": str(settings.warehouse),
    }


def submit_kwargs(settings: Settings, application_args: Sequence[str]) -> dict[str, Any]:
    """Keyword arguments of one SparkSubmitOperator run: ``application_args``, ``conf``,
    ``jars`` and ``env_vars``. Raises :class:`eventlake.spark.MissingJarsError` when the
    jars folder is incomplete.

    Example:
        >>> sorted(submit_kwargs(load_settings(), ["--topic", "a"]))
        ['application_args', 'conf', 'env_vars', 'jars']
    """
    return {
        "application_args": list(application_args),
        "conf": submit_conf(settings),
        "jars": submit_jars(settings),
        "env_vars": job_env(settings),
    }


def plan_ingest(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """One :func:`submit_kwargs` per topic of a DAG run, from the run's params; a topic
    that a running stream reads is skipped, with a message saying so.

    The ingest DAG maps SparkSubmitOperator over this list (``expand_kwargs``). Raises
    :class:`OrchestrationError` on bad params, before anything is submitted.

    Example:
        >>> [kw["application_args"][:2] for kw in plan_ingest({"topics": ["a", "b"]}, settings)]
        [['--topic', 'a'], ['--topic', 'b']]
    """
    checked = IngestParams.from_params(params)
    return [
        submit_kwargs(settings, args)
        for args in ingest_application_args(checked, settings.state_topics)
        if not stream_owner_notice(settings, args[1])
    ]


def stream_owner_notice(settings: Settings, topic: str) -> str | None:
    """When a running stream reads ``topic``, the message saying so (and it is printed):
    a scheduled ingest of that topic, on its own checkpoint, would land its records a
    second time. None when no stream reads it.

    Example:
        >>> stream_owner_notice(settings, "demo.stream.clicks")
        "skipping topic 'demo.stream.clicks': the stream ingest-pattern_demo... reads it ..."
    """
    streams = streams_reading(settings, topic)
    if not streams:
        return None
    holders = "; ".join(
        f"{s.name} (pid {(s.holder or {}).get('pid', '?')} on "
        f"{(s.holder or {}).get('host', '?')}, since {(s.holder or {}).get('since', '?')})"
        for s in streams
    )
    notice = (
        f"skipping topic {topic!r}: the running stream {holders} reads it, and a scheduled "
        "ingest would land its records a second time. Stop the stream (SIGTERM) to schedule "
        "this topic again; `eventlake status` shows what each stream has written."
    )
    print(notice, flush=True)
    return notice


def plan_reconcile(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """The state rebuilds of a full refresh: one ``eventlake reconcile --topic <topic>``
    per state topic of the run; an empty list otherwise (the DAG's task is skipped).

    Example:
        >>> plan_reconcile({"topics": ["a"], "full_refresh": True}, settings)
        []
    """
    checked = IngestParams.from_params(params)
    if not checked.full_refresh:
        return []
    return [
        submit_kwargs(settings, ["--topic", topic])
        for topic in checked.topics
        if topic in settings.state_topics
    ]


def spark_submit_args(
    application: str | Path, submit: Mapping[str, Any], *, master: str | None = None
) -> list[str]:
    """The spark-submit command line of one :func:`submit_kwargs` entry, for logs and
    dry runs (the operator builds the same one). ``master`` is left out unless given:
    in a DAG it comes from the ``spark_default`` connection.

    Example:
        >>> submit = {"application_args": ["--topic", "a"], "conf": {"k": "v"}, "jars": "x.jar"}
        >>> " ".join(spark_submit_args("job.py", submit, master="local[2]"))
        'spark-submit --master local[2] --conf k=v --jars x.jar job.py --topic a'
    """
    command = ["spark-submit"]
    if master is not None:
        command += ["--master", master]
    for key, value in submit.get("conf", {}).items():
        command += ["--conf", f"{key}={value}"]
    if submit.get("jars"):
        command += ["--jars", submit["jars"]]
    return [*command, str(application), *submit.get("application_args", [])]


def dry_run_report(application: str | Path, plan: Sequence[Mapping[str, Any]]) -> list[str]:
    """Shell-quoted command lines of a plan, with the environment they would get.

    Example:
        >>> plan = [{"application_args": ["--topic", "a"], "env_vars": {"A": "1"}}]
        >>> dry_run_report("job.py", plan)
        ['A=1 spark-submit job.py --topic a']
    """
    lines = []
    for submit in plan:
        env_vars = submit.get("env_vars", {})
        env = [f"{key}={shlex.quote(str(value))}" for key, value in env_vars.items()]
        lines.append(" ".join([*env, shlex.join(spark_submit_args(application, submit))]))
    return lines


def ingest_params(default_topics: Sequence[str]) -> dict[str, Param]:
    """The ingest DAG's params: JSON-schema validated by Airflow before a run is created.

    Example:
        >>> sorted(ingest_params(["demo.orders"]))
        ['dry_run', 'ending_offsets', 'starting_offsets', 'topics']
    """
    return {
        "topics": Param(
            list(default_topics),
            type="array",
            items={"type": "string", "pattern": TOPIC_NAME_PATTERN, "not": {"enum": [".", ".."]}},
            minItems=1,
            uniqueItems=True,
            title="Topics",
            description="Kafka topics to ingest; one spark-submit per topic.",
        ),
        "starting_offsets": Param(
            "earliest",
            type="string",
            pattern=_STARTING_OFFSETS_PATTERN,
            title="Starting offsets",
            description="'earliest', 'latest' or per-partition JSON "
            '({"topic": {"0": 42}}); used when a topic\'s checkpoint is new.',
        ),
        "ending_offsets": Param(
            None,
            type=["null", "string"],
            pattern=_ENDING_OFFSETS_PATTERN,
            title="Ending offsets",
            description="Empty for the usual incremental run; 'latest' or per-partition "
            "JSON for a bounded backfill/replay that adds only records not yet ingested.",
        ),
        "full_refresh": Param(
            False,
            type="boolean",
            title="Full refresh",
            description="Re-read each topic from earliest to latest (adds only records "
            "not yet in the tables) and rebuild the state tables of state topics.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Only log the spark-submit commands; submit nothing.",
        ),
    }


def _table_asset(settings: Settings, table: str, name: str) -> Asset:
    uri = Path(settings.table_path(table)).resolve().as_uri()
    return Asset(name=name, uri=uri)


def events_asset(settings: Settings) -> Asset:
    """The ``events`` Delta table as an Airflow asset (``file://`` URI of its folder).

    Example:
        >>> events_asset(load_settings(warehouse="/warehouse")).uri
        'file:///warehouse/events'
    """
    return _table_asset(settings, EVENTS, EVENTS_ASSET_NAME)


def rejects_asset(settings: Settings) -> Asset:
    """The ``rejects`` Delta table as an Airflow asset.

    Example:
        >>> rejects_asset(load_settings(warehouse="/warehouse")).name
        'eventlake.rejects'
    """
    return _table_asset(settings, REJECTS, REJECTS_ASSET_NAME)


def state_asset(settings: Settings, topic: str) -> Asset:
    """The ``state/<topic>`` Delta table as an Airflow asset.

    Example:
        >>> state_asset(load_settings(warehouse="/warehouse"), "customers").uri
        'file:///warehouse/state/customers'
    """
    uri = state_path(settings, topic).resolve().as_uri()
    return Asset(name=f"eventlake.state.{topic}", uri=uri)


def ingest_outlets(settings: Settings) -> list[Asset]:
    """What an ingest run updates: events, rejects and the state table of each state topic.

    Example:
        >>> [a.name for a in ingest_outlets(load_settings(state_topics=["c"]))]
        ['eventlake.events', 'eventlake.rejects', 'eventlake.state.c']
    """
    return [
        events_asset(settings),
        rejects_asset(settings),
        *(state_asset(settings, topic) for topic in settings.state_topics),
    ]


# --- The maintenance DAG (eventlake_maintenance) -------------------------------------

#: Default VACUUM retention of the maintenance DAG: Delta's safety default (7 days).
MAINTENANCE_RETENTION_HOURS: Final = 168.0


@dataclass(frozen=True)
class MaintenanceParams:
    """The maintenance DAG's params, checked, including what a JSON schema cannot: a
    retention below 168 hours needs ``allow_below_safety``.

    Example:
        >>> MaintenanceParams.from_params({"retention_hours": 0, "allow_below_safety": True})
        MaintenanceParams(retention_hours=0.0, allow_below_safety=True, auto_reconcile=True, ...)
        >>> MaintenanceParams.from_params({"retention_hours": 24})
        Traceback (most recent call last):
        ...
        eventlake.orchestration.OrchestrationError: retention_hours=24 is below Delta's ...
    """

    retention_hours: float = MAINTENANCE_RETENTION_HOURS
    allow_below_safety: bool = False
    auto_reconcile: bool = True
    dry_run: bool = False
    #: State topics to check; empty: every state table in the warehouse.
    topics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from eventlake.maintenance import MaintenanceError, check_retention

        for topic in self.topics:
            check_topic(topic)
        try:
            check_retention(self.retention_hours, self.allow_below_safety)
        except MaintenanceError as error:
            raise OrchestrationError(str(error)) from None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> MaintenanceParams:
        """Build from a DAG run's params (missing keys take the defaults).

        Example:
            >>> MaintenanceParams.from_params({}).retention_hours
            168.0
        """
        retention = params.get("retention_hours", MAINTENANCE_RETENTION_HOURS)
        if isinstance(retention, bool) or not isinstance(retention, int | float):
            raise OrchestrationError(f"retention_hours must be a number, not {retention!r}.")
        flags: dict[str, bool] = {}
        for name, default in (
            ("allow_below_safety", False),
            ("auto_reconcile", True),
            ("dry_run", False),
        ):
            value = params.get(name, default)
            if not isinstance(value, bool):
                raise OrchestrationError(f"{name} must be true or false, not {value!r}.")
            flags[name] = value
        topics = params.get("topics") or []
        if not isinstance(topics, list | tuple) or not all(isinstance(t, str) for t in topics):
            raise OrchestrationError(f"topics must be a list of strings, not {topics!r}.")
        return cls(
            retention_hours=float(retention),
            allow_below_safety=flags["allow_below_safety"],
            auto_reconcile=flags["auto_reconcile"],
            dry_run=flags["dry_run"],
            topics=tuple(topics),
        )

    def application_args(self) -> list[str]:
        """Arguments of ``jobs/maintain.py`` (``eventlake maintain``).

        Example:
            >>> MaintenanceParams(retention_hours=0, allow_below_safety=True).application_args()
            ['--retention-hours', '0', '--allow-below-safety', '--auto-reconcile']
        """
        args = ["--retention-hours", f"{self.retention_hours:g}"]
        if self.allow_below_safety:
            args.append("--allow-below-safety")
        args.append("--auto-reconcile" if self.auto_reconcile else "--no-auto-reconcile")
        if self.dry_run:
            args.append("--dry-run")
        for topic in self.topics:
            args += ["--topic", topic]
        return args


def plan_maintenance(params: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """The :func:`submit_kwargs` of the maintenance job, from a DAG run's params.

    Raises :class:`OrchestrationError` on bad params (a retention below 168 hours without
    ``allow_below_safety`` among them), before anything is submitted.

    Example:
        >>> plan_maintenance({"dry_run": True}, settings)["application_args"]
        ['--retention-hours', '168', '--auto-reconcile', '--dry-run']
    """
    checked = MaintenanceParams.from_params(params)
    return submit_kwargs(settings, checked.application_args())


def maintenance_params() -> dict[str, Param]:
    """The maintenance DAG's params: JSON-schema validated by Airflow before a run is
    created; the cross-check of ``retention_hours`` and ``allow_below_safety`` is the
    DAG's first task (:func:`plan_maintenance`).

    Example:
        >>> sorted(maintenance_params())
        ['allow_below_safety', 'auto_reconcile', 'dry_run', 'retention_hours', 'topics']
    """
    return {
        "retention_hours": Param(
            MAINTENANCE_RETENTION_HOURS,
            type="number",
            minimum=0,
            title="VACUUM retention (hours)",
            description="Files no table version of the last N hours needs are deleted. "
            "Below 168 (Delta's safety default) only with allow_below_safety.",
        ),
        "allow_below_safety": Param(
            False,
            type="boolean",
            title="Allow a retention below 168 hours",
            description="VACUUM may then delete files that running streams or readers of "
            "recent versions still need.",
        ),
        "auto_reconcile": Param(
            True,
            type="boolean",
            title="Auto-reconcile",
            description="Rebuild a state table from its topic when tombstones may have been "
            "compacted away unseen (otherwise only warn).",
        ),
        "topics": Param(
            [],
            type="array",
            items={"type": "string", "pattern": TOPIC_NAME_PATTERN, "not": {"enum": [".", ".."]}},
            uniqueItems=True,
            title="State topics",
            description="Compacted topics to check for missed tombstones; empty: every "
            "state table in the warehouse.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Change nothing: report what VACUUM would delete and which state "
            "tables are at risk.",
        ),
    }


# --- The quality DAG (eventlake_quality) ---------------------------------------------


@dataclass(frozen=True)
class QualityParams:
    """The quality DAG's params, checked.

    Example:
        >>> QualityParams.from_params({"full": True}).application_args()
        ['--table', 'events', '--full']
    """

    full: bool = False
    #: Check only this topic's events; None: every topic.
    topic: str | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.topic is not None:
            check_topic(self.topic)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> QualityParams:
        """Build from a DAG run's params (missing keys take the defaults).

        Example:
            >>> QualityParams.from_params({"topic": "orders"}).topic
            'orders'
        """
        flags: dict[str, bool] = {}
        for name in ("full", "dry_run"):
            value = params.get(name, False)
            if not isinstance(value, bool):
                raise OrchestrationError(f"{name} must be true or false, not {value!r}.")
            flags[name] = value
        topic = params.get("topic") or None
        if topic is not None and not isinstance(topic, str):
            raise OrchestrationError(f"topic must be a string or null, not {topic!r}.")
        return cls(full=flags["full"], topic=topic, dry_run=flags["dry_run"])

    def application_args(self) -> list[str]:
        """Arguments of ``jobs/check_quality.py`` (= ``eventlake check``).

        Example:
            >>> QualityParams(topic="orders").application_args()
            ['--table', 'events', '--topic', 'orders']
        """
        args = ["--table", EVENTS]
        if self.full:
            args.append("--full")
        if self.topic is not None:
            args += ["--topic", self.topic]
        return args


def plan_quality(params: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """The :func:`submit_kwargs` of the quality job, from a DAG run's params.

    Example:
        >>> plan_quality({"full": True}, settings)["application_args"]
        ['--table', 'events', '--full']
    """
    return submit_kwargs(settings, QualityParams.from_params(params).application_args())


def quality_params() -> dict[str, Param]:
    """The quality DAG's params (JSON-schema validated before a run is created).

    Example:
        >>> sorted(quality_params())
        ['dry_run', 'full', 'topic']
    """
    return {
        "full": Param(
            False,
            type="boolean",
            title="Full quality run",
            description="Check the whole events table, not only the rows added since the "
            "last check.",
        ),
        "topic": Param(
            None,
            type=["null", "string"],
            pattern=TOPIC_NAME_PATTERN,
            title="Topic",
            description="Check only this topic's events; empty: every topic.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Only log the spark-submit command; check nothing.",
        ),
    }


# --- The republish DAG (eventlake_republish) -----------------------------------------


def route_application_args(route: RepublishRoute) -> list[str]:
    """Arguments of ``jobs/rekey_republish.py`` (= ``eventlake republish``) for a route.

    Example:
        >>> route_application_args(RepublishRoute(source="raw", target="orders"))
        ['--source', 'raw', '--target', 'orders', '--key-mapper', 'partitionkey', \
'--on-missing', 'keep-key', '--to-mode', 'keep']
    """
    args = [
        "--source",
        route.source,
        "--target",
        route.target,
        "--key-mapper",
        route.key_mapper,
        "--on-missing",
        route.on_missing,
        "--to-mode",
        route.to_mode,
    ]
    if route.cleanup_policy is not None:
        args += ["--cleanup-policy", route.cleanup_policy]
    if route.partitions is not None:
        args += ["--partitions", str(route.partitions)]
    return args


@dataclass(frozen=True)
class RepublishParams:
    """The republish DAG's params, checked against the configured routes.

    Example:
        >>> routes = [RepublishRoute(source="raw", target="orders")]
        >>> RepublishParams.from_params({"routes": []}, routes).selected(routes)[0].name
        'raw>orders'
    """

    #: Route names (``source>target``) to run; empty: every configured route.
    routes: tuple[str, ...] = ()
    dry_run: bool = False

    @classmethod
    def from_params(
        cls, params: Mapping[str, Any], configured: Sequence[RepublishRoute]
    ) -> RepublishParams:
        """Build from a DAG run's params; a route that is not configured is refused.

        Example:
            >>> RepublishParams.from_params({"routes": ["x>y"]}, [])
            Traceback (most recent call last):
            ...
            eventlake.orchestration.OrchestrationError: routes: ['x>y'] are not configured ...
        """
        names = params.get("routes") or []
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise OrchestrationError(f"routes must be a list of strings, not {names!r}.")
        dry_run = params.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise OrchestrationError(f"dry_run must be true or false, not {dry_run!r}.")
        known = {route.name for route in configured}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise OrchestrationError(
                f"routes: {unknown} are not configured (EVENTLAKE_REPUBLISH_ROUTES has "
                f"{sorted(known)})."
            )
        return cls(routes=tuple(names), dry_run=dry_run)

    def selected(self, configured: Sequence[RepublishRoute]) -> list[RepublishRoute]:
        """The routes this run republishes, in configuration order."""
        return [r for r in configured if not self.routes or r.name in self.routes]


def plan_republish(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """One :func:`submit_kwargs` per route of a DAG run (none when no route is set up).

    Example:
        >>> plan_republish({}, settings)
        []
    """
    checked = RepublishParams.from_params(params, settings.republish_routes)
    return [
        submit_kwargs(settings, route_application_args(route))
        for route in checked.selected(settings.republish_routes)
    ]


def republish_params() -> dict[str, Param]:
    """The republish DAG's params (JSON-schema validated before a run is created).

    Example:
        >>> sorted(republish_params())
        ['dry_run', 'routes']
    """
    return {
        "routes": Param(
            [],
            type="array",
            items={"type": "string", "pattern": r"^[A-Za-z0-9._-]+>[A-Za-z0-9._-]+$"},
            uniqueItems=True,
            title="Routes",
            description="Routes to run, as source>target; empty: every route configured "
            "in EVENTLAKE_REPUBLISH_ROUTES.",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Only log the spark-submit commands; republish nothing.",
        ),
    }
