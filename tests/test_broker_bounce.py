"""Broker bounce: a broker of the test's own (own ports, own folder; the session broker
is untouched) is stopped cleanly and restarted, and killed with SIGKILL and restarted,
while an ingest and a republish run as subprocesses.

Each job either carries on or exits with code 2 and a clear error saying that Kafka
became unreachable (or the connection was lost), what to check, and that a rerun of
the same command resumes from the checkpoint; never with a bare stack trace. A rerun
then completes and nothing is lost or duplicated: the events table holds exactly the
produced events (by id and by (partition, offset)), the rejects table exactly the
invalid records with their reasons, and the republished target topic every source
record, found by the source partition and offset in its routing-trail header, under
the source record's key. Republish delivers at least once by design: duplicates in
the target are counted and reported, not forbidden.

The default run bounces the broker twice (a clean stop, then SIGKILL) around 3,000
records. The ``faults`` run (``make test-faults``) does the same with 20,000 records
and longer outages, then keeps the broker down until both jobs give up, and asserts
their error text.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from eventlake.core.errors import TRY_AGAIN_EXIT_CODE
from eventlake.core.settings import Settings
from eventlake.ingest import IngestRequest
from eventlake.kafka.connection import connection_lost_error
from eventlake.kafka.connector_options import spark_kafka_options
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import LocalSettings
from eventlake.republish import RepublishRequest, trail_entries
from eventlake.warehouse.names import EVENTS, REJECTS
from tests.fault_tools import Corpus, Job, committed_batches, produce_keyed_corpus, wait_for

#: Ports of this test's broker: beside the session broker's, never the same.
OWN_PORT = int(os.environ.get("EVENTLAKE_TEST_BROKER_PORT", "19092")) + 100
#: Seconds a job may take to carry on or give up after a bounce (it gives up after
#: about three minutes of an unreachable cluster).
JOB_TIMEOUT = 1200


@dataclass(frozen=True)
class Bounce:
    """One outage: ``stop`` (clean shutdown) or ``kill`` (SIGKILL) the broker, keep it
    down ``down`` seconds (None: until both jobs have exited), then start it again."""

    how: str
    down: float | None


@dataclass
class Bounced:
    """What one outage did to the jobs running through it."""

    bounce: Bounce
    produced: int
    running_at_bounce: dict[str, bool]
    exit_codes: dict[str, int]
    errors: dict[str, str]

    def describe(self) -> str:
        down = "until both jobs exited" if self.bounce.down is None else f"{self.bounce.down}s"
        outcomes = ", ".join(
            f"{job} {'carried on' if code == 0 else f'exited {code}'}"
            + ("" if self.running_at_bounce[job] else " (had finished before the outage)")
            for job, code in self.exit_codes.items()
        )
        return f"{self.bounce.how} broker, down {down}, {self.produced} new records: {outcomes}"


@pytest.fixture
def own(settings: LocalSettings, tmp_path: Path) -> Iterator[tuple[LocalBroker, Settings]]:
    """A broker of this test's own and the settings of clients on it."""
    client = settings.model_copy(
        update={
            "broker_port": OWN_PORT,
            "controller_port": OWN_PORT + 1,
            "broker_sasl_port": None,
            "broker_dir": tmp_path / "broker",
            "bootstrap_servers": f"127.0.0.1:{OWN_PORT}",
            "warehouse": tmp_path / "warehouse",
        }
    )
    broker = LocalBroker(client)
    broker.start(timeout=120)
    try:
        yield broker, client
    finally:
        broker.stop()


def _assert_clear_error(job: str, code: int, stderr: str) -> None:
    """A job that gave up says why and what to do, through the CLI's error path: a lost
    broker is a refusal a later run may get past (exit 75, retried by the DAGs)."""
    assert code == TRY_AGAIN_EXIT_CODE, (
        f"{job} exited {code}, not through a handled error:\n{stderr[-3000:]}"
    )
    message = next(line for line in stderr.splitlines() if line.startswith("error: "))
    assert "The run stopped because" in message, message
    assert "Kafka became unreachable" in message or "lost the connection to Kafka" in message
    assert f"127.0.0.1:{OWN_PORT}" in message, message
    assert "rerun the same command" in message, message


def _through_outage(
    broker: LocalBroker,
    ingest_settings: Settings,
    republish_settings: Settings,
    source: str,
    target: str,
    logs: Path,
    bounce: Bounce,
    batches: tuple[int, int],
) -> tuple[dict[str, int], dict[str, str], dict[str, bool]]:
    """Start both jobs (``batches``: records per micro-batch of ingest and republish),
    bounce the broker once each has committed a batch, wait for them to carry on or
    give up. Returns their exit codes, the stderr of those that failed, and which
    still ran when the broker went away."""
    names = {
        "ingest": (ingest_settings, IngestRequest(topics=(source,)).default_checkpoint_name()),
        "republish": (
            republish_settings,
            RepublishRequest(source=source, target=target).default_checkpoint_name(),
        ),
    }
    before = {job: committed_batches(s, name) for job, (s, name) in names.items()}

    def progressed(job: str) -> bool:
        settings, name = names[job]
        return committed_batches(settings, name) > before[job] or not jobs[job].running()

    # Republish is the quicker job: it starts once ingest has a batch committed, so
    # that both are still at work when the broker goes away.
    jobs = {
        "ingest": Job.ingest(
            ingest_settings, source, logs / "ingest", state=False, batch=batches[0]
        )
    }
    wait_for(lambda: progressed("ingest"), JOB_TIMEOUT, "a committed batch of ingest")
    jobs["republish"] = Job.republish(
        republish_settings, source, target, logs / "republish", batch=batches[1]
    )
    wait_for(lambda: progressed("republish"), JOB_TIMEOUT, "a committed batch of republish")
    running = {job: j.running() for job, j in jobs.items()}
    if bounce.how == "kill":
        broker.kill()
    else:
        broker.stop()
    if bounce.down is None:
        for process in jobs.values():
            process.wait(timeout=JOB_TIMEOUT)
    else:
        time.sleep(bounce.down)
    broker.start(timeout=120)
    codes = {job: j.wait(timeout=JOB_TIMEOUT) for job, j in jobs.items()}
    errors = {job: jobs[job].stderr() for job, code in codes.items() if code != 0}
    for job, text in errors.items():
        _assert_clear_error(job, codes[job], text)
    if bounce.down is None:
        assert errors, "no job gave up while the broker stayed down"
    return codes, errors, running


def _bounce_run(
    spark: SparkSession,
    broker: LocalBroker,
    client: Settings,
    logs: Path,
    *,
    bounces: list[Bounce],
    per_bounce: int,
    batches: tuple[int, int],
) -> str:
    """Produce a share of the records before each outage, run both jobs through it,
    then rerun them to completion and check every record; return the figures."""
    source, target = "bounce.source", "bounce.target"
    ingest_settings = client
    # A warehouse of its own: two first runs creating one rejects table would race.
    republish_settings = client.model_copy(update={"warehouse": logs.parent / "republish-wh"})
    corpus = Corpus(topic=source, records=[])
    outcomes: list[Bounced] = []
    for n, bounce in enumerate(bounces):
        part = produce_keyed_corpus(
            client,
            source,
            count=per_bounce,
            keys=per_bounce // 5,
            seed=n,
            compacted=False,
            first=n * per_bounce,
        )
        corpus.records.extend(part.records)
        codes, errors, running = _through_outage(
            broker,
            ingest_settings,
            republish_settings,
            source,
            target,
            logs / f"outage-{n}",
            bounce,
            batches,
        )
        outcomes.append(Bounced(bounce, per_bounce, running, codes, errors))

    ingest = Job.ingest(
        ingest_settings, source, logs / "rerun-ingest", state=False, batch=batches[0]
    )
    republish = Job.republish(
        republish_settings, source, target, logs / "rerun-rep", batch=batches[1]
    )
    for process in (ingest, republish):
        assert process.wait(timeout=JOB_TIMEOUT) == 0, process.output()[-4000:]

    lines = [f"produced {len(corpus.records)} records: {dict(sorted(corpus.kinds().items()))}"]
    lines += [o.describe() for o in outcomes]
    for outcome in outcomes:
        for job, text in outcome.errors.items():
            message = next(line for line in text.splitlines() if line.startswith("error: "))
            lines.append(f"  {job} said: {message[:400]}")
    lines.append(f"rerun: {ingest.lines[-1]} | {republish.lines[-1]}")
    lines.append(_check_ingest(spark, ingest_settings, corpus))
    lines.append(_check_republish(spark, client, corpus, target))
    return "\n".join(lines)


def _check_ingest(spark: SparkSession, settings: Settings, corpus: Corpus) -> str:
    events = (
        spark.read.format("delta")
        .load(str(settings.table_path(EVENTS)))
        .select("kafka_partition", "kafka_offset", "id")
        .collect()
    )
    by_coordinates = {(r.kafka_partition, r.kafka_offset): r.id for r in events}
    assert len(by_coordinates) == len(events), "an event was written twice"
    assert len({r.id for r in events}) == len(events), "an event id appears twice"
    assert by_coordinates == corpus.events()
    rejects = (
        spark.read.format("delta")
        .load(str(settings.table_path(REJECTS)))
        .select("kafka_partition", "kafka_offset", "reason")
        .collect()
    )
    reasons = {(r.kafka_partition, r.kafka_offset): r.reason for r in rejects}
    assert len(reasons) == len(rejects), "a reject was written twice"
    assert reasons == corpus.rejects()
    return (
        f"ingest: events={len(events)} rejects={len(rejects)}, duplicates=0, accounted for "
        f"{len(events) + len(rejects)} of {len(corpus.records)}"
    )


def _check_republish(spark: SparkSession, client: Settings, corpus: Corpus, target: str) -> str:
    """Every source record is on the target (by its trail), under its own key."""
    hops = (
        spark.read.format("kafka")
        .options(**spark_kafka_options(client))
        .option("subscribe", target)
        .option("includeHeaders", "true")
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("key", F.element_at(trail_entries(F.col("headers")), -1).alias("hop"))
        .select("key", "hop.topic", "hop.partition", "hop.offset")
        .collect()
    )
    keys = {(r.partition, r.offset): r.key for r in corpus.records}
    seen = Counter((r.partition, r.offset) for r in hops)
    assert {r.topic for r in hops} == {corpus.topic}
    assert set(seen) == set(keys), f"{len(set(keys) - set(seen))} source records missing"
    assert all(bytes(r.key) == keys[(r.partition, r.offset)] for r in hops)
    duplicates = sum(count - 1 for count in seen.values())
    return (
        f"republish: target holds {len(hops)} records, {len(seen)} distinct source records of "
        f"{len(keys)}, none lost; duplicates (at least once) = {duplicates}"
    )


def test_connection_lost_error_tells_an_outage_from_other_failures(
    broker: LocalBroker, settings: Settings
) -> None:
    resume = "Rerun the same command."
    other = RuntimeError("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException")
    assert connection_lost_error(settings, other, resume=resume) is None
    timeout = RuntimeError(
        "terminated with exception: org.apache.kafka.common.errors.TimeoutException: "
        "Timed out waiting for a node assignment. Call: listNodes\n=== Streaming Query ==="
    )
    lost = connection_lost_error(settings, timeout, resume=resume)
    assert lost is not None
    assert "lost the connection to Kafka" in str(lost) and "answers again now" in str(lost)
    assert "listNodes" in str(lost) and "Streaming Query" not in str(lost)
    down = settings.model_copy(update={"bootstrap_servers": f"127.0.0.1:{OWN_PORT + 2}"})
    unreachable = connection_lost_error(down, other, resume=resume)
    assert unreachable is not None
    assert str(unreachable).startswith("The run stopped because Kafka became unreachable")
    assert "eventlake broker status" in str(unreachable) and resume in str(unreachable)


def test_ingest_and_republish_survive_a_killed_broker(
    own: tuple[LocalBroker, Settings], spark: SparkSession, tmp_path: Path
) -> None:
    # One outage here (the suite's budget); a clean stop, longer outages and one the
    # jobs give up on are the faults run's.
    broker, client = own
    figures = _bounce_run(
        spark,
        broker,
        client,
        tmp_path / "logs",
        bounces=[Bounce("kill", down=5)],
        per_bounce=1_500,
        batches=(100, 100),
    )
    print(figures)


@pytest.mark.faults
def test_ingest_and_republish_survive_long_outages_and_say_why_they_gave_up(
    own: tuple[LocalBroker, Settings], spark: SparkSession, tmp_path: Path
) -> None:
    broker, client = own
    figures = _bounce_run(
        spark,
        broker,
        client,
        tmp_path / "logs",
        bounces=[
            Bounce("stop", down=30),
            Bounce("kill", down=30),
            Bounce("kill", down=None),
        ],
        per_bounce=7_000,
        batches=(500, 500),
    )
    print(figures)
