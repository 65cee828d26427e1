"""Crash loop: ingest with the state table of a keyed, compacted topic (updates, ~10%
tombstones, ~1% invalid records), the driver's process group SIGKILLed at random points
and inside Delta commit windows, then run to completion. Afterwards the tables hold
exactly what was produced: events by id and by (partition, offset), no duplicates, the
state table equal to the latest record per key computed here in Python (tombstones
removing keys), and the rejects equal to the invalid records with their reasons.

How a kill lands inside a commit window, without any hook in the library: Delta writes
a transaction's data files straight into the table folder and makes them part of the
table only when the commit's JSON appears in ``_delta_log``. The test watches the
folder (``tests.fault_tools.CommitWindow``) and SIGKILLs the driver as soon as a
complete Parquet file (footer magic written) is there that no commit adds. With the
driver dead, it checks that those files are still not committed: the kill landed after
the batch's data files were written and before its commit. When the commit won the race
the kill counts as one at a random point and the next run tries again. Those orphan
files must never become part of the table.

Each runs on a local warehouse and on one on the S3 server (``s3a://``, the jobs'
commits through eventlake's conditional LogStore), where the watcher lists the table's
objects instead of its folder. The 100,000-event runs are marked ``faults``
(``make test-faults``), and so is the 6,000-event run on the local warehouse; the
6,000-event run on the S3 server, one kill in the events table's commit window, is part
of the default suite (tests/ingest/test_crash.py kills local runs there).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.local.broker import LocalBroker
from eventlake.storage.store import open_delta_table
from eventlake.warehouse.names import EVENTS, REJECTS, state_path
from tests.fault_tools import (
    CommitWindow,
    Corpus,
    Job,
    Kill,
    kill_at_random,
    kill_in_commit_window,
    produce_keyed_corpus,
)

#: Runs of a window kill that may lose the race to the commit before the test gives up.
WINDOW_ATTEMPTS = 4


@dataclass(frozen=True)
class Step:
    """One planned kill: ``events``/``state`` (that table's commit window) or
    ``random``, once ``after`` batches of the run are done."""

    where: str
    after: int


def _crash_loop(
    settings: Settings,
    topic: str,
    logs: Path,
    *,
    count: int,
    keys: int,
    batch: int,
    plan: list[Step],
    seed: int,
) -> str:
    """Produce, kill runs as planned, complete, check every table; return the figures."""
    corpus = produce_keyed_corpus(settings, topic, count=count, keys=keys, seed=seed)
    rng = random.Random(seed)
    tables = {"events": settings.table_path(EVENTS), "state": state_path(settings, topic)}
    kills: list[Kill] = []
    runs = 0
    for step in plan:
        for _attempt in range(WINDOW_ATTEMPTS):
            runs += 1
            job = Job.ingest(settings, topic, logs / f"run-{runs}", state=True, batch=batch)
            label = f"kill {len(kills) + 1} ({step.where})"
            if step.where == "random":
                kill = kill_at_random(job, rng, after_batches=step.after, label=label)
            else:
                window = CommitWindow(tables[step.where])
                kill = kill_in_commit_window(job, window, after_batches=step.after, label=label)
            kills.append(kill)
            if step.where == "random" or kill.in_window:
                break
        else:
            raise AssertionError(f"no kill inside the {step.where} commit window: {kills}")
    final = Job.ingest(settings, topic, logs / "final", state=True, batch=batch)
    assert final.wait(timeout=1800) == 0, final.output()[-4000:]

    for kill in kills:
        if kill.in_window:
            table = tables["state" if "(state)" in kill.label else "events"]
            assert not kill.orphans & CommitWindow(table).committed(), kill.describe()
    checked = _check_tables(settings, corpus)
    lines = [
        f"produced {count} records on {topic}: {dict(sorted(corpus.kinds().items()))}",
        *(k.describe() for k in kills),
        f"runs killed: {runs}, then one run to completion: {final.lines[-1]}",
        checked,
    ]
    return "\n".join(lines)


def _rows(location: Location, *columns: str) -> list[tuple[Any, ...]]:
    """The table's rows, those columns only, read with delta-rs (local or on S3)."""
    table = open_delta_table(location).to_pyarrow_table(columns=list(columns))
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def _check_tables(settings: Settings, corpus: Corpus) -> str:
    """events, rejects and state/<topic> equal to what the corpus says they must hold."""
    events = _rows(
        settings.table_path(EVENTS), "kafka_topic", "kafka_partition", "kafka_offset", "id"
    )
    assert {topic for topic, *_ in events} == {corpus.topic}
    expected_events = corpus.events()
    by_coordinates = {(partition, offset): id_ for _, partition, offset, id_ in events}
    ids = {id_ for *_, id_ in events}
    assert len(by_coordinates) == len(events), "an event was written twice"
    assert len(ids) == len(events), "an event id appears twice"
    assert by_coordinates == expected_events
    assert ids == set(expected_events.values())

    rejects = _rows(settings.table_path(REJECTS), "kafka_partition", "kafka_offset", "reason")
    reasons = {(partition, offset): reason for partition, offset, reason in rejects}
    assert len(reasons) == len(rejects), "a reject was written twice"
    assert reasons == corpus.rejects()
    assert not set(reasons) & set(by_coordinates), "a record in both events and rejects"

    state = _rows(
        state_path(settings, corpus.topic), "kafka_key", "id", "kafka_partition", "kafka_offset"
    )
    latest = {bytes(key): (id_, partition, offset) for key, id_, partition, offset in state}
    assert len(latest) == len(state), "a key appears twice in the state table"
    assert latest == corpus.state()
    return (
        f"rows found: events={len(events)} rejects={len(rejects)} state={len(state)} keys; "
        f"duplicates=0; records accounted for: {len(events) + len(rejects)} of "
        f"{len(corpus.records)}"
    )


@pytest.fixture(params=["local", "s3"])
def crash_settings(request: pytest.FixtureRequest, warehouse_settings: Settings) -> Settings:
    """A warehouse of the test's own: a local folder, or a prefix on the S3 server (the
    jobs reach it through the environment the ``s3_server`` fixture sets)."""
    if request.param == "local":
        return warehouse_settings
    warehouse = request.getfixturevalue("s3_warehouse")
    return warehouse_settings.model_copy(update={"warehouse": warehouse})


@pytest.mark.parametrize(
    "crash_settings", [pytest.param("local", marks=pytest.mark.faults), "s3"], indirect=True
)
def test_kill_in_commit_window_then_complete_gives_exact_tables(
    broker: LocalBroker,
    crash_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    figures = _crash_loop(
        crash_settings,
        topic_name,
        tmp_path / "logs",
        count=6_000,
        keys=600,
        batch=2_000,
        plan=[Step("events", after=1)],
        seed=6_000,
    )
    print(figures)


@pytest.mark.faults
def test_crash_loop_100k_three_kills_then_complete_gives_exact_tables(
    broker: LocalBroker,
    crash_settings: Settings,
    topic_name: str,
    tmp_path: Path,
) -> None:
    rng = random.Random(100_000)
    figures = _crash_loop(
        crash_settings,
        topic_name,
        tmp_path / "logs",
        count=100_000,
        keys=5_000,
        batch=10_000,
        plan=[
            Step("events", after=rng.randint(0, 1)),
            Step("random", after=rng.randint(1, 2)),
            Step("state", after=rng.randint(0, 1)),
        ],
        seed=100_000,
    )
    print(figures)
