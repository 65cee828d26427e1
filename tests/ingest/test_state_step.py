"""eventlake.ingest.state_step: a state step that another process's state change
overtook (fenced: it committed nothing) runs again from the state tables' new marks,
instead of stopping the run. The fence itself: tests/state/test_fence.py."""

from __future__ import annotations

from typing import Any

import pytest

from eventlake.core.settings import Settings
from eventlake.ingest import state_step
from eventlake.ingest.request import IngestRequest
from eventlake.state.apply import StateFencedError
from eventlake.warehouse.names import state_path


class _Backlog:
    """The part of a StateBacklog the step's retry touches."""

    def __init__(self) -> None:
        self.applied_times = 0

    def topics(self) -> list[str]:
        return ["orders"]

    def applied(self) -> None:
        self.applied_times += 1


class _Ledger:
    def __init__(self) -> None:
        self.forgotten: list[str] = []

    def forget(self, path: str) -> None:
        self.forgotten.append(path)


def test_a_fenced_state_step_is_run_again_from_the_new_marks(
    monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    outcomes: list[Any] = [StateFencedError("overtaken"), {"orders": "applied"}]

    def attempt(*_args: Any) -> Any:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(state_step, "_apply_once", attempt)
    backlog, ledger = _Backlog(), _Ledger()

    changes = state_step.apply_backlog(
        None,  # type: ignore[arg-type]
        settings,
        IngestRequest(topics=("orders",), state=True),
        ledger,  # type: ignore[arg-type]
        backlog,  # type: ignore[arg-type]
        "note",
    )

    assert changes == {"orders": "applied"}
    assert ledger.forgotten == [str(state_path(settings, "orders"))]
    assert backlog.applied_times == 1
