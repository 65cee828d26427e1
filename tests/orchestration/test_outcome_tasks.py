"""eventlake.orchestration.outcome_tasks: each topic's or route's task reads its outcome."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from jinja2.sandbox import SandboxedEnvironment

from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.ingest import TOPICS_LABEL
from eventlake.orchestration.outcome_tasks import RefusedAloneError, outcome_line

LANDED_A = {"a": {"outcome": "landed", "line": "ingest[a]: events=3 rejects=0"}}
REFUSED_B = {"b": {"outcome": "refused", "line": "ingest[b]: refused: Topic 'b' does not exist"}}


def test_a_landed_topics_task_gives_its_line_from_whichever_submit_had_it() -> None:
    assert outcome_line("a", [None, REFUSED_B, LANDED_A]) == "ingest[a]: events=3 rejects=0"


def test_a_refused_topics_task_fails_with_why() -> None:
    with pytest.raises(RefusedAloneError, match="Topic 'b' does not exist"):
        outcome_line("b", [{**LANDED_A, **REFUSED_B}])


def test_a_topic_no_submit_reported_fails_pointing_at_the_ingest_log() -> None:
    with pytest.raises(OrchestrationError, match="the ingest task wrote no outcome of 'c'"):
        outcome_line("c", [LANDED_A])


def test_an_ingest_submit_is_labelled_by_its_topics() -> None:
    task = SimpleNamespace(application_args=["--topic", "a", "--topic", "b", "--trigger", "x"])
    label = SandboxedEnvironment().from_string(TOPICS_LABEL).render(task=task)
    assert label == "a, b"
