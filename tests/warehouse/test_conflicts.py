"""eventlake.warehouse.conflicts: a commit that lost a race, tried again with a pause."""

from __future__ import annotations

import time

import pytest

from eventlake.warehouse import conflicts
from eventlake.warehouse.conflicts import CONFLICT_ATTEMPTS, retry_conflicts


class Conflict(Exception):
    """Stands in for a Delta commit conflict."""


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses between attempts, in seconds, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    return slept


def test_a_lost_race_is_run_again_with_a_line_and_a_longer_pause_each_time(
    pauses: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    runs: list[int] = []

    def commit() -> str:
        runs.append(1)
        if len(runs) < 3:
            raise Conflict(f"lost {len(runs)}\nsecond line")
        return "committed"

    assert retry_conflicts(commit, what="state orders", retryable=(Conflict,)) == "committed"
    assert len(runs) == 3
    assert pauses == [1.0, 2.0]
    assert capsys.readouterr().out == (
        "state orders: lost a commit race to a concurrent writer (Conflict: lost 1); "
        "retrying, attempt 2 of 3\n"
        "state orders: lost a commit race to a concurrent writer (Conflict: lost 2); "
        "retrying, attempt 3 of 3\n"
    )


def test_the_last_attempts_conflict_reaches_the_caller_as_it_is(
    pauses: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    raised: list[Conflict] = []

    def commit() -> None:
        raised.append(Conflict(""))
        raise raised[-1]

    with pytest.raises(Conflict) as caught:
        retry_conflicts(commit, what="append", retryable=(Conflict,), backoff_seconds=0.5)
    assert caught.value is raised[-1]
    assert len(raised) == CONFLICT_ATTEMPTS == conflicts.CONFLICT_ATTEMPTS
    assert pauses == [0.5, 1.0]
    assert capsys.readouterr().out.splitlines()[0] == (
        "append: lost a commit race to a concurrent writer (Conflict: ); retrying, attempt 2 of 3"
    )


def test_another_error_is_not_retried(pauses: list[float]) -> None:
    runs: list[int] = []

    def commit() -> None:
        runs.append(1)
        raise KeyError("not a conflict")

    with pytest.raises(KeyError, match="not a conflict"):
        retry_conflicts(commit, what="append", retryable=(Conflict,), attempts=5)
    assert len(runs) == 1
    assert pauses == []


def test_the_decorated_function_is_tried_again_named_by_its_arguments(
    pauses: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    runs: list[str] = []

    @conflicts.conflicts_retried(
        what=lambda *_, note, **__: f"ingest: {note}", retryable=(Conflict,)
    )
    def land(records: str, *, note: str) -> str:
        runs.append(records)
        if len(runs) < 2:
            raise Conflict("lost")
        return f"landed {records}"

    assert land("r", note="batch 7") == "landed r"
    assert runs == ["r", "r"]
    assert capsys.readouterr().out.startswith(
        "ingest: batch 7: lost a commit race to a concurrent writer (Conflict: lost)"
    )
