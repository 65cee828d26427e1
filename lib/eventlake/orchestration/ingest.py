"""The ingest DAG (``eventlake_ingest``): its options, its spark-submits (a scheduled
run's topics in one Spark application) and the topics it shows a task each for.

:class:`IngestParams` is the table of the DAG's options (JSON schema, default, job
flag; see :mod:`eventlake.orchestration.options`) and checks what a schema cannot.

Example:
    >>> params = IngestParams.from_params({"topics": ["orders"], "dry_run": False})
    >>> ingest_application_args(params)
    [['--topic', 'orders', '--starting-offsets', 'earliest', '--trigger', 'available-now']]
    >>> [kw["application_args"][:4] for kw in plan_ingest({"topics": ["a", "b"]}, settings)]
    [['--topic', 'a', '--topic', 'b']]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from airflow.sdk import Param

from eventlake.core.driver_work import DriverWork, ingest_driver_work
from eventlake.core.progress import progress_log
from eventlake.core.settings import Settings
from eventlake.core.topic_names import topic_name_schema
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.options import cli_args, dag_params, option, read_params, switch
from eventlake.orchestration.submit import submit_kwargs
from eventlake.orchestration.topics import (
    check_topic,
    parse_offsets_json,
    topic_offsets,
    topics_offsets,
)
from eventlake.status.checkpoints import streams_reading

_log = progress_log(__name__)

#: The label of an ingest spark-submit in the UI: its topics (every ``--topic``'s value).
TOPICS_LABEL: Final = (
    "{% set a = task.application_args %}{% set ns = namespace(t=[]) %}"
    "{% for i in range(a | length - 1) %}{% if a[i] == '--topic' %}"
    "{% set ns.t = ns.t + [a[i + 1]] %}{% endif %}{% endfor %}{{ ns.t | join(', ') }}"
)

# JSON-schema patterns of the offsets params; JSON per-partition offsets may span lines.
_STARTING_OFFSETS_PATTERN: Final = r"^(earliest|latest|\{[\s\S]*\})$"
_ENDING_OFFSETS_PATTERN: Final = r"^(latest|\{[\s\S]*\})$"


@dataclass(frozen=True)
class IngestParams:
    """The ingest DAG's params, checked: what one DAG run ingests and how.

    Example:
        >>> IngestParams.from_params({"topics": ["a", "b"], "ending_offsets": "latest"}).bounded
        True
    """

    # Each job reads one topic: application_args passes its own as --topic.
    topics: tuple[str, ...] = field(
        metadata=option(
            "Topics",
            "Kafka topics to ingest; one spark-submit per topic.",
            flag="--topic",
            type="array",
            items=topic_name_schema(),
            minItems=1,
            uniqueItems=True,
        )
    )
    starting_offsets: str = field(
        default="earliest",
        metadata=option(
            "Starting offsets",
            "'earliest', 'latest' or per-partition JSON "
            '({"topic": {"0": 42}}); used for partitions the tables hold nothing of '
            "yet (elsewhere a run starts where the tables stand).",
            flag="--starting-offsets",
            type="string",
            pattern=_STARTING_OFFSETS_PATTERN,
        ),
    )
    ending_offsets: str | None = field(
        default=None,
        metadata=option(
            "Ending offsets",
            "Empty for the usual incremental run; 'latest' or per-partition "
            "JSON for a bounded backfill/replay that adds only records not yet ingested "
            "(a partition the JSON does not name: up to its latest offset).",
            flag="--ending-offsets",
            type=["null", "string"],
            pattern=_ENDING_OFFSETS_PATTERN,
        ),
    )
    dry_run: bool = switch("Dry run", "Only log the spark-submit commands; submit nothing.")
    #: Re-read every topic from earliest to latest (adds only what is missing) and
    #: rebuild the state tables of state topics from their topics.
    full_refresh: bool = switch(
        "Full refresh",
        "Re-read each topic from earliest to latest (adds only records "
        "not yet in the tables) and rebuild the state tables of state topics.",
    )

    dedup: bool = switch(
        "Deduplicate",
        "Land an event whose (source, id) already landed (within the dedup horizon) or "
        "repeats in its batch in rejects, reason duplicate_event.",
        flag="--dedup",
    )

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
        unknown = sorted(set(parse_offsets_json(spec, label)) - set(self.topics))
        if unknown:
            raise OrchestrationError(f"{label} names topics this run does not read: {unknown}.")

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> IngestParams:
        """Build from a DAG run's params (missing keys take the defaults).

        Example:
            >>> IngestParams.from_params({"topics": ["orders"]}).starting_offsets
            'earliest'
        """
        return cls(**read_params(cls, params))

    @property
    def bounded(self) -> bool:
        """True for a bounded batch run (backfill/replay) up to ``ending_offsets``, and
        for a full refresh (earliest to latest)."""
        return self.ending_offsets is not None or self.full_refresh

    def scheduled_args(self, topics: tuple[str, ...]) -> list[str]:
        """Arguments of ``jobs/ingest_cloudevents.py`` for a scheduled run of ``topics``
        (none a state topic) in one Spark application: each topic lands on its own
        ledger marks, lease and counts (``ingest[<topic>]`` lines), and one Kafka does
        not have is refused alone.

        Example:
            >>> IngestParams(("a", "b")).scheduled_args(("a", "b"))[:4]
            ['--topic', 'a', '--topic', 'b']
        """
        starting = topics_offsets(self.starting_offsets, topics, default="earliest")
        args = cli_args(self, topics=topics, starting_offsets=starting, ending_offsets=None)
        return [*args, "--trigger", "available-now"]

    def application_args(self, topic: str, *, state: bool = False) -> list[str]:
        """Arguments of ``jobs/ingest_cloudevents.py`` (= ``eventlake ingest``) for one topic.

        The job's checkpoint is its default, per topic, so that a DAG run continues where
        ``eventlake ingest --topic <topic>`` (or the previous run) stopped. ``state``
        (a state topic) adds ``--state --auto-reconcile`` to streaming runs (a state table
        found at risk of missed tombstones is rebuilt, not only warned about); a bounded
        run cannot keep state (it would replay old records over newer ones), a full
        refresh rebuilds it with :func:`plan_reconcile` instead.

        Example:
            >>> IngestParams(("a",), ending_offsets="latest").application_args("a")
            ['--topic', 'a', '--starting-offsets', 'earliest', '--ending-offsets', 'latest']
            >>> IngestParams(("a",)).application_args("a", state=True)[-2:]
            ['--state', '--auto-reconcile']
        """
        ending = None
        if self.bounded:
            spec = "latest" if self.ending_offsets is None else self.ending_offsets
            ending = topic_offsets(spec, topic, default="latest")
        args = cli_args(
            self,
            topics=(topic,),
            starting_offsets=topic_offsets(self.starting_offsets, topic, default="earliest"),
            ending_offsets=ending,
        )
        if self.bounded:
            return args
        on_state = ["--state", "--auto-reconcile"] if state else []
        return [*args, "--trigger", "available-now", *on_state]


def ingest_params(default_topics: Sequence[str]) -> dict[str, Param]:
    """The ingest DAG's params: JSON-schema validated by Airflow before a run is created.

    Example:
        >>> list(ingest_params(["demo.orders"]))
        ['topics', 'starting_offsets', 'ending_offsets', 'full_refresh', 'dedup', 'dry_run']
    """
    return dag_params(IngestParams, topics=list(default_topics))


def ingest_application_args(
    params: IngestParams,
    state_topics: Sequence[str] = (),
    topics: Sequence[str] | None = None,
) -> list[list[str]]:
    """The argument lists of a run of ``topics`` (default: the params'); the ingest DAG
    maps one spark-submit over each. A scheduled run lands its topics in one Spark
    application, but a state topic each in its own (``--state --auto-reconcile``); a
    backfill or full refresh, one per topic (its offsets its own).

    Example:
        >>> [args[:4] for args in ingest_application_args(IngestParams(("a", "b")))]
        [['--topic', 'a', '--topic', 'b']]
        >>> refresh = IngestParams(("a", "b"), full_refresh=True)
        >>> [args[1] for args in ingest_application_args(refresh)]
        ['a', 'b']
    """
    run = tuple(params.topics if topics is None else topics)
    if params.bounded:
        return [params.application_args(topic) for topic in run]
    plain = tuple(t for t in run if t not in state_topics)
    together = [params.scheduled_args(plain)] if plain else []
    return together + [params.application_args(t, state=True) for t in run if t in state_topics]


def plan_ingest(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """Check the params; the spark-submits (args, conf, jars, env) of the run
    (:func:`ingest_application_args`).

    Each a :func:`~eventlake.orchestration.submit.submit_kwargs`, from the DAG run's
    params; a topic that a running stream reads is skipped, with a message saying so.

    The ingest DAG maps SparkSubmitOperator over this list (``expand_kwargs``). Raises
    :class:`OrchestrationError` on bad params, before anything is submitted.

    Example:
        >>> [kw["application_args"][:4] for kw in plan_ingest({"topics": ["a", "b"]}, settings)]
        [['--topic', 'a', '--topic', 'b']]
    """
    checked = IngestParams.from_params(params)
    return [
        submit_kwargs(settings, args, work=driver_work(args, settings))
        for args in ingest_application_args(
            checked, settings.state_topics, plan_topics(params, settings)
        )
    ]


def plan_topics(params: Mapping[str, Any], settings: Settings) -> list[str]:
    """The topics a run of the ingest DAG lands: the params' but those a running stream
    reads (each skipped with a message); the DAG has a task per topic, showing what its
    spark-submit did with it.

    Example:
        >>> plan_topics({"topics": ["a", "b"]}, settings)
        ['a', 'b']
    """
    checked = IngestParams.from_params(params)
    return [topic for topic in checked.topics if not stream_owner_notice(settings, topic)]


def driver_work(application_args: Sequence[str], settings: Settings) -> DriverWork:
    """What the driver of an ingest with these arguments does
    (:func:`eventlake.core.driver_work.ingest_driver_work`), as the job will see it: ``--dedup`` is
    also on when ``settings.dedup`` is (``EVENTLAKE_DEDUP``), as in ``eventlake ingest``.

    Example:
        >>> driver_work(["--topic", "a"], settings)
        <DriverWork.LANDING: 'landing'>
        >>> driver_work(["--topic", "a", "--state"], settings)
        <DriverWork.GENERAL: 'general'>
    """
    args = set(application_args)
    return ingest_driver_work(state="--state" in args, dedup="--dedup" in args or settings.dedup)


def stream_owner_notice(settings: Settings, topic: str, task: str = "ingest") -> str | None:
    """When a running stream reads ``topic``, the message saying so (and it is printed):
    a scheduled ingest of that topic, on its own checkpoint, would land its records a
    second time. None when no stream reads it.

    Example:
        >>> stream_owner_notice(settings, "demo.stream.clicks")
        "skipping ingest of topic 'demo.stream.clicks': the running stream ingest-... reads it ..."
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
        f"skipping {task} of topic {topic!r}: the running stream {holders} reads it and "
        "lands it; this run would only wait for it (the ledger keeps both exactly once). "
        "Stop the stream (SIGTERM) to schedule this topic again; `eventlake status` shows "
        "what has landed."
    )
    _log.info(notice)
    return notice


def plan_reconcile(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """On a full refresh, one reconcile per state topic; otherwise none (skipped).

    Each an ``eventlake reconcile --topic <topic>`` of a state topic of the run; with none,
    the DAG's mapped task is skipped. A topic a running stream reads is skipped too, with
    a message: the stream keeps its state table, and a reconcile would wait for the
    topic's lease between two of its batches (``eventlake reconcile`` by hand does that).

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
        if topic in settings.state_topics and not stream_owner_notice(settings, topic, "reconcile")
    ]
