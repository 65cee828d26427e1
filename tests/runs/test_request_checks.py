"""eventlake.runs.request_checks: what every job's request is checked for."""

from __future__ import annotations

import pytest

from eventlake.runs.request_checks import request_problem

GOOD: dict = {"checkpoint_name": None, "trigger": "available-now", "offsets": ("earliest", None)}


def test_a_sound_request_has_no_problem() -> None:
    assert request_problem([("--topic", "orders")], **GOOD) is None


@pytest.mark.parametrize(
    ("topics", "changes", "problem"),
    [
        ([("--source", "bad!topic")], {}, "Invalid --source 'bad!topic'"),
        ([("--topic", "orders")], {"checkpoint_name": "../x"}, "--checkpoint-name: "),
        ([("--topic", "orders")], {"trigger": "every minute"}, "every minute"),
        ([("--topic", "orders")], {"offsets": ("garbage", None)}, "--starting-offsets 'garbage'"),
    ],
)
def test_each_kind_of_problem_is_named(
    topics: list[tuple[str, str]], changes: dict, problem: str
) -> None:
    found = request_problem(topics, **{**GOOD, **changes})
    assert found is not None and problem in found
