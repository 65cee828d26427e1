"""The ingest DAG's task per topic: a scheduled run lands its topics in one Spark
application (one spark-submit), and each topic's task shows what that application did
with it: its counts, or, failing alone, why it was refused (a topic Kafka does not
have). The spark-submit writes each topic's outcome to a file
(:mod:`eventlake.runs.outcomes`, ``--outcomes-file``), which its task returns.

Example, in the DAG::

    ingest = spark_submit_each(INGEST_JOB, submits, task_id="ingest", report_outcomes=True)
    topic_tasks(plan_task(plan_topics, task_id="plan_topics"), ingest)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow.sdk import XComArg, get_current_context, task
from airflow.sdk.definitions.mappedoperator import MappedOperator

from eventlake.orchestration.errors import OrchestrationError
from eventlake.runs.outcomes import LANDED

#: The label of each topic's task in the UI.
TOPIC_LABEL = "{{ topic }}"


class TopicRefusedError(OrchestrationError):
    """The run landed its other topics but refused this one; the message says why."""


def outcome_line(topic: str, outcomes: Iterable[Mapping[str, Any] | None]) -> str:
    """``topic``'s line from the outcomes its run's spark-submits returned (one mapping
    per submit, topic -> ``{"outcome", "line"}``); raises :class:`TopicRefusedError` when
    it was refused, :class:`OrchestrationError` when no submit says (see its log).

    Example:
        >>> outcome_line("a", [{"a": {"outcome": "landed", "line": "ingest[a]: events=3"}}])
        'ingest[a]: events=3'
    """
    found: dict[str, Mapping[str, Any]] = {}
    for submitted in outcomes:
        found.update(submitted or {})
    if topic not in found:
        raise OrchestrationError(
            f"the ingest task wrote no outcome of topic {topic!r}: its log says what happened"
        )
    outcome = found[topic]
    if outcome["outcome"] != LANDED:
        raise TopicRefusedError(str(outcome["line"]))
    return str(outcome["line"])


def topic_tasks(topics: XComArg, ingest: MappedOperator) -> XComArg:
    """A task per topic of ``topics`` (the plan's), after the ``ingest`` spark-submits,
    labelled by its topic: it succeeds with the topic's line, or fails (not retried:
    the same run would be refused again) with why the topic was refused. Call it inside
    the DAG.

    Example:
        >>> topic_tasks(plan_task(plan_topics, task_id="plan_topics"), ingest)
    """

    @task(task_id="topic", retries=0, map_index_template=TOPIC_LABEL)
    def topic(topic: str, outcomes: list[Mapping[str, Any] | None]) -> str:
        """What this run's ingest did with the topic."""
        from airflow.sdk.exceptions import AirflowFailException

        get_current_context()["topic"] = topic  # type: ignore[typeddict-unknown-key]
        try:
            line = outcome_line(topic, outcomes)
        except OrchestrationError as failure:
            raise AirflowFailException(str(failure)) from None
        print(line)
        return line

    # Airflow passes the values, not the XComArgs, when the task runs.
    mapped: XComArg = topic.partial(outcomes=ingest.output).expand(topic=topics)
    return mapped
