"""What an ingest is asked to do (:class:`IngestRequest`, the ``eventlake ingest``
options), what it did (:class:`IngestSummary`), and the Kafka source options it reads
with.

Example:
    >>> request = IngestRequest(topics=("orders",), trigger="processing-time=1 second")
    >>> kafka_reader_options(settings, request)["subscribe"]
    'orders'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from eventlake.core.driver_work import DriverWork, ingest_driver_work
from eventlake.core.errors import Refused
from eventlake.core.settings import Settings
from eventlake.kafka.connector_options import kafka_source_options
from eventlake.ledger.checkpoint import default_checkpoint_name
from eventlake.runs.outcomes import LANDED, REFUSED, TopicOutcome
from eventlake.runs.request_checks import request_problem
from eventlake.runs.summary import RunSummary
from eventlake.runs.triggers import AVAILABLE_NOW
from eventlake.state.records import StateChange


class IngestError(Refused, RuntimeError):
    """An ingest run cannot start; the message says what to change."""


@dataclass(frozen=True)
class IngestRequest:
    """What to ingest and how; mirrors the ``eventlake ingest`` options."""

    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    trigger: str = AVAILABLE_NOW
    starting_offsets: str = "earliest"
    ending_offsets: str | None = None
    checkpoint_name: str | None = None
    #: Keep ``state/<topic>`` current for every topic of the run (see eventlake.state).
    state: bool = False
    #: Rebuild a state table with reconcile when the compaction check finds it at risk.
    auto_reconcile: bool = False
    #: Land repeated (source, id) events as duplicate_event rejects (eventlake.views.duplicates).
    dedup: bool = False

    def __post_init__(self) -> None:
        if bool(self.topics) == bool(self.topic_pattern):
            raise IngestError("Give either one or more --topic, or one --topic-pattern.")
        problem = request_problem(
            (("--topic", topic) for topic in self.topics),
            checkpoint_name=self.checkpoint_name,
            trigger=self.trigger,
            offsets=(self.starting_offsets, self.ending_offsets),
        )
        if problem:
            raise IngestError(problem)
        if self.state and self.bounded:
            raise IngestError(
                "--state needs a streaming run: a bounded replay of older offsets would move "
                "state tables back in time. Use `eventlake reconcile --topic T` to rebuild state."
            )

    @property
    def bounded(self) -> bool:
        return self.ending_offsets is not None

    @property
    def driver_work(self) -> DriverWork:
        """What this ingest's driver does (:func:`eventlake.core.driver_work.ingest_driver_work`): a
        landing unless it keeps a state table or a dedup window.

        Example:
            >>> IngestRequest(("a",)).driver_work, IngestRequest(("a",), dedup=True).driver_work
            (<DriverWork.LANDING: 'landing'>, <DriverWork.GENERAL: 'general'>)
        """
        return ingest_driver_work(state=self.state, dedup=self.dedup)

    @property
    def source_description(self) -> str:
        if self.topic_pattern:
            return f"pattern:{self.topic_pattern}"
        return "topics:" + ",".join(sorted(self.topics))

    def default_checkpoint_name(self) -> str:
        return default_checkpoint_name("ingest", self.source_description)

    @property
    def keeps_checkpoint(self) -> bool:
        """Whether the run's checkpoint outlives it. A run of several named topics to the
        end of what Kafka has (available-now) on its default checkpoint keeps none: that
        checkpoint is its topic set's, and the scheduled runs of the topics due, a set
        that changes from run to run, would leave one per set. Its next run starts where
        the ledger stands, as on any new checkpoint.

        Example:
            >>> IngestRequest(("a", "b")).keeps_checkpoint, IngestRequest(("a",)).keeps_checkpoint
            (False, True)
        """
        several = len(self.topics) > 1
        return not (several and self.trigger == AVAILABLE_NOW and self.checkpoint_name is None)


@dataclass
class IngestSummary(RunSummary):
    """Counts of one run, printed as one line at the end (the shared counts:
    :class:`eventlake.runs.summary.RunSummary`)."""

    accepted_label: ClassVar[str] = "events"
    rejected_label: ClassVar[str] = "rejects"

    state_upserted: int = 0
    state_deleted: int = 0
    state_skipped_no_key: int = 0
    state_topics: set[str] = field(default_factory=set)
    #: Events landed with JSON data that did not parse: ``data_json`` null, ``data`` kept.
    data_json_invalid: int = 0
    warnings: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    #: Per topic of a run of several: its records landed, [events, rejects].
    by_topic: dict[str, list[int]] = field(default_factory=dict)
    #: Per topic of a run of several that it did not land: why (the others landed).
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return self.accepted

    def add_topics(self, landed: dict[str, tuple[int, int]]) -> None:
        """Count one batch's records per topic, (events, rejects)."""
        for topic, (events, rejects) in landed.items():
            counts = self.by_topic.setdefault(topic, [0, 0])
            counts[0] += events
            counts[1] += rejects

    def outcomes(self, topics: tuple[str, ...]) -> dict[str, TopicOutcome]:
        """Each of the run's ``topics``' outcome (:mod:`eventlake.runs.outcomes`): refused
        with its reason, else landed with its counts (a run of one: the summary line).

        Example:
            >>> summary.outcomes(("orders",))["orders"].line
            'ingest: read=120 events=117 rejects=3 batches=1 seconds=4.2'
        """
        if len(topics) == 1 and not self.refused:
            return {topics[0]: TopicOutcome(LANDED, self.line())}
        return {
            t: TopicOutcome(REFUSED if t in self.refused else LANDED, self.topic_line(t))
            for t in topics
        }

    def topic_line(self, topic: str) -> str:
        """What the run did with ``topic``: its counts, or why it refused it.

        Example:
            >>> summary.topic_line("orders")
            'ingest[orders]: events=117 rejects=3'
        """
        if topic in self.refused:
            return f"ingest[{topic}]: refused: {self.refused[topic]}"
        if topic not in self.by_topic:
            return f"ingest[{topic}]: nothing new"
        events, rejects = self.by_topic[topic]
        return f"ingest[{topic}]: events={events} rejects={rejects}"

    def topic_lines(self) -> list[str]:
        """A line per topic of a run of several (none for one topic: the summary line is
        its), in name order (:meth:`topic_line`).

        Example:
            >>> summary.topic_lines()
            ['ingest[orders]: events=117 rejects=3', "ingest[typo]: refused: Topic 'typo' ..."]
        """
        topics = sorted({*self.by_topic, *self.refused})
        return [self.topic_line(t) for t in topics] if len(topics) > 1 else []

    def add_state(self, changes: dict[str, StateChange]) -> None:
        for topic, change in changes.items():
            self.state_topics.add(topic)
            self.state_upserted += change.upserted
            self.state_deleted += change.deleted
            self.state_skipped_no_key += change.skipped_no_key

    def line(self) -> str:
        state = (
            f" state(upserted={self.state_upserted} deleted={self.state_deleted} "
            f"no_key={self.state_skipped_no_key})"
            if self.state_topics
            else ""
        )
        invalid = f" data_json_invalid={self.data_json_invalid}" if self.data_json_invalid else ""
        return self._line("ingest", after_reasons=invalid + state)


def kafka_reader_options(settings: Settings, request: IngestRequest) -> dict[str, str]:
    """Options of Spark's Kafka source for this request."""
    subscription = (
        {"subscribePattern": request.topic_pattern}
        if request.topic_pattern
        else {"subscribe": ",".join(request.topics)}
    )
    return kafka_source_options(
        settings,
        subscription,
        starting_offsets=request.starting_offsets,
        ending_offsets=request.ending_offsets,
    )
