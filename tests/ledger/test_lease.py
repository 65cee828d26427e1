"""eventlake.ledger.lease: writers of one topic take turns, each waiting up to a bound."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from eventlake.ledger.lease import LeaseTimeoutError, leased_topics, topic_leases


def test_a_held_lease_is_waited_for_then_refused_naming_its_holder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with topic_leases(tmp_path, ["orders"], job="ingest"):
        started = time.monotonic()
        with (
            pytest.raises(LeaseTimeoutError, match="being landed by ingest") as refused,
            topic_leases(tmp_path, ["orders"], job="reconcile", wait_seconds=0.5),
        ):
            pass
        waited = time.monotonic() - started

    assert "ingest (pid" in refused.value.holder
    assert waited >= 0.5
    said = capsys.readouterr().out.splitlines()
    assert [line for line in said if "waiting for topic" in line] == [
        f"reconcile: waiting for topic 'orders', held by {refused.value.holder}"
    ]


def test_the_second_holder_goes_on_once_the_first_lets_go(tmp_path: Path) -> None:
    order: list[str] = []
    first_in = threading.Event()

    def first() -> None:
        with topic_leases(tmp_path, ["orders"], job="ingest"):
            first_in.set()
            time.sleep(0.5)
            order.append("first done")

    holder = threading.Thread(target=first)
    holder.start()
    first_in.wait(10)
    with topic_leases(tmp_path, ["orders"], job="reconcile", wait_seconds=10) as other_before:
        order.append("second in")
    holder.join()

    assert order == ["first done", "second in"]
    assert other_before  # another holder held it last


def test_the_same_token_is_told_it_held_the_lease_last(tmp_path: Path) -> None:
    with topic_leases(tmp_path, ["orders"], job="ingest", token="t1"):
        pass
    with topic_leases(tmp_path, ["orders"], job="ingest", token="t1") as other_before:
        assert not other_before
    assert leased_topics(tmp_path) == ["orders"]
