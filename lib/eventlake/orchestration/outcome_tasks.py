"""A DAG's task per topic (ingest) or per route (republish): a scheduled run lands its
topics, or sends its routes, in one Spark application (one spark-submit), and each
one's task shows what that application did with it: its counts, or, failing alone, why
it was refused (a topic Kafka does not have). The spark-submit writes each one's
outcome to a file (:mod:`eventlake.runs.outcomes`, ``--outcomes-file``), which its task
returns.

Example, in the DAG::

    ingest = spark_submit_each(INGEST_JOB, submits, task_id="ingest", report_outcomes=True)
    outcome_tasks(plan_task(plan_topics, task_id="plan_topics"), ingest, task_id="topic")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from airflow.sdk import XComArg, get_current_context, task
from airflow.sdk.definitions.mappedoperator import MappedOperator

from eventlake.orchestration.errors import OrchestrationError
from eventlake.runs.outcomes import LANDED

#: The label of each task in the UI: the topic or route it shows.
OUTCOME_LABEL: Final = "{{ outcome_of }}"


class RefusedAloneError(OrchestrationError):
    """The run did the others but refused this topic or route; the message says why."""


def outcome_line(
    name: str, outcomes: Iterable[Mapping[str, Any] | None], *, submitted_by: str = "ingest"
) -> str:
    """``name``'s line from the outcomes its run's spark-submits returned (one mapping
    per submit, name -> ``{"outcome", "line"}``); raises :class:`RefusedAloneError` when
    it was refused, :class:`OrchestrationError` when no submit says (see the log of
    the task ``submitted_by``).

    Example:
        >>> outcome_line("a", [{"a": {"outcome": "landed", "line": "ingest[a]: events=3"}}])
        'ingest[a]: events=3'
    """
    found: dict[str, Mapping[str, Any]] = {}
    for submitted in outcomes:
        found.update(submitted or {})
    if name not in found:
        raise OrchestrationError(
            f"the {submitted_by} task wrote no outcome of {name!r}: its log says what happened"
        )
    outcome = found[name]
    if outcome["outcome"] != LANDED:
        raise RefusedAloneError(str(outcome["line"]))
    return str(outcome["line"])


def outcome_tasks(names: XComArg, submitted: MappedOperator, *, task_id: str) -> XComArg:
    """A task ``task_id`` per entry of ``names`` (a plan's topics or routes), after the
    ``submitted`` spark-submits (run with ``report_outcomes``), labelled by the name: it
    succeeds with the name's line, or fails (not retried: the same run would be refused
    again) with why it was refused. Call it inside the DAG.

    Example:
        >>> outcome_tasks(plan_task(plan_topics, task_id="plan_topics"), ingest, task_id="topic")
    """
    submitted_by = submitted.task_id

    @task(task_id=task_id, retries=0, map_index_template=OUTCOME_LABEL)
    def outcome(name: str, outcomes: list[Mapping[str, Any] | None]) -> str:
        """What this run's spark-submit did with the topic or route."""
        from airflow.sdk.exceptions import AirflowFailException

        get_current_context()["outcome_of"] = name  # type: ignore[typeddict-unknown-key]
        try:
            line = outcome_line(name, outcomes, submitted_by=submitted_by)
        except OrchestrationError as failure:
            raise AirflowFailException(str(failure)) from None
        print(line)
        return line

    # Airflow passes the values, not the XComArgs, when the task runs.
    mapped: XComArg = outcome.partial(outcomes=submitted.output).expand(name=names)
    return mapped
