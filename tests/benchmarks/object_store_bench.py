"""The warehouse on object storage against a local folder, and eventlake against
kafka-delta-ingest on object storage: whole processes, interleaved, in one run.

    make bench-s3                                   # 1,000,000 records, 3 rounds
    python tests/benchmarks/object_store_bench.py --records 2000 --rounds 1   # smoke
    python tests/benchmarks/object_store_bench.py --kdi /path/to/kafka-delta-ingest

It fills two topics of ~1 KB CloudEvents on the local broker (as ``bench.py`` makes
them: structured-only, and a compacted keyed one with ~10% tombstones; 2 partitions),
starts the local S3 server (s3proxy on its filesystem backend, on this machine's disk:
the same disk as the local folder, so the difference is the S3 protocol, S3A and the
conditional commits, not the medium), and runs, round after round:

* ``ingest`` of the structured topic into a fresh local warehouse, then into a fresh
  one on the S3 server;
* ``ingest --state`` of the keyed topic, local, then S3;
* with ``--kdi``, kafka-delta-ingest (a release build with ``--features s3``) landing
  the structured topic into a fresh Delta table on the same S3 server, one writer
  (``AWS_S3_ALLOW_UNSAFE_RENAME``: it has no other safe commit there), ending at the
  topic's end (timed to the commit that holds every record: see :func:`kdi_run`); its
  table has the events' fields as columns, made with delta-rs before the run, outside
  the timing.

Every figure is the median of the rounds' whole-process seconds; the ratios are S3 over
local (the cost of object storage) and eventlake over kafka-delta-ingest on S3 (events
per second). Every run's table is counted afterwards (rows from the Delta log) and a
run that lands another number of records fails the bench. Results go to
``results/object-store-bench-<time>.json`` and ``.md``. After the rounds, the same run
measures what one batch, one JSON commit and one data file cost on each store
(``object_store_upkeep.py``): the figures behind the S3 advice in docs/deployment.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.kafka.topics import delete_topics
from eventlake.local.broker import LocalBroker
from eventlake.local.s3_server import LocalS3Server
from eventlake.local.settings import load_local_settings
from eventlake.storage.store import (
    remove_tree,
)
from tests.benchmarks.bench import (
    JOB_SCRIPT,
    RESULTS,
    bench_records,
    fill_topic,
    run_process,
)
from tests.benchmarks.kafka_delta_ingest import kdi_run, table_rows
from tests.benchmarks.object_store_upkeep import (
    BATCH_RECORDS,
    UpkeepFigures,
    upkeep_lines,
)

BUCKET: Final = "bench"
INGEST_LOCAL: Final = "ingest structured, local folder"
INGEST_S3: Final = "ingest structured, S3 server"
STATE_LOCAL: Final = "ingest --state keyed, local folder"
STATE_S3: Final = "ingest --state keyed, S3 server"
KDI_S3: Final = "kafka-delta-ingest structured, S3 server"


@dataclass
class Figures:
    """One job's runs: whole-process seconds and the rows its table held, per round."""

    job: str
    records: int
    seconds: list[float] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def events_per_second(self) -> float:
        return self.records / self.median


def eventlake_run(
    settings: Settings, broker_pid: int | None, topic: str, *, state: bool
) -> tuple[float, int]:
    """One ``ingest`` process into ``settings.warehouse``: its seconds, rows landed."""
    command = [str(JOB_SCRIPT), "ingest", "--topic", topic, *(["--state"] if state else [])]
    run = run_process(command, settings, broker_pid)
    rows = table_rows(settings.warehouse / "events") + table_rows(settings.warehouse / "rejects")
    return run.seconds, rows


def kdi_store_environment(server: LocalS3Server) -> dict[str, str]:
    """The object_store crate's AWS variables for the local S3 server."""
    options = server.connection().delta_rs_options()
    return {key: value for key, value in options.items() if key != "AWS_CONDITIONAL_PUT"}


def report(
    figures: dict[str, Figures], upkeep: list[UpkeepFigures], records: int, rounds: int
) -> tuple[str, dict[str, Any]]:
    """The markdown tables and ratios, and the JSON of the run."""
    ratios = {
        "ingest S3 / local (seconds)": figures[INGEST_S3].median / figures[INGEST_LOCAL].median,
        "ingest --state S3 / local (seconds)": figures[STATE_S3].median
        / figures[STATE_LOCAL].median,
    }
    if KDI_S3 in figures:
        ratios["eventlake / kafka-delta-ingest on S3 (events/s)"] = (
            figures[INGEST_S3].events_per_second / figures[KDI_S3].events_per_second
        )
    lines = [
        f"# Object-store bench, {records:,} records, {rounds} rounds (medians)",
        "",
        "| job | s (median) | runs (s) | events/s | rows landed |",
        "|---|---|---|---|---|",
        *(
            f"| {f.job} | {f.median:.1f} | {', '.join(f'{s:.1f}' for s in f.seconds)} | "
            f"{f.events_per_second:,.0f} | {sorted(set(f.rows))} |"
            for f in figures.values()
        ),
        "",
        *(f"- {name}: {value:.2f}" for name, value in ratios.items()),
        *upkeep_lines(upkeep),
    ]
    data = {"records": records, "rounds": rounds, "jobs": [asdict(f) for f in figures.values()],
            "ratios": ratios, "upkeep": [asdict(u) for u in upkeep]}  # fmt: skip
    return "\n".join(lines), data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kdi", type=Path, help="a kafka-delta-ingest binary (--features s3)")
    args = parser.parse_args(argv)

    local = load_local_settings()
    broker, server = LocalBroker(local), LocalS3Server(local)
    broker_pid = broker.start().pid
    server.start()
    server.make_bucket(Location.of(f"s3a://{BUCKET}"))
    os.environ.update(server.environment())  # this process reads the S3 tables
    on_s3 = local.model_copy(update=dict(server.connection()))
    root = Path(local.warehouse).parent / f"object-store-bench-{uuid.uuid4().hex[:6]}"
    tag = uuid.uuid4().hex[:6]
    topics = {"structured": f"bench-s3-structured-{tag}", "keyed": f"bench-s3-keyed-{tag}",
              "batches": f"bench-s3-batches-{tag}"}  # fmt: skip
    print(f"filling {args.records:,} records into {list(topics.values())}", flush=True)
    fill_topic(local, topics["structured"], bench_records(args.records, mode="structured",
               seed=1), compact=False)  # fmt: skip
    fill_topic(local, topics["keyed"], bench_records(args.records, mode="mixed", seed=2,
               tombstones=0.1), compact=True)  # fmt: skip
    fill_topic(local, topics["batches"], bench_records(20 * BATCH_RECORDS, mode="structured",
               seed=3), compact=False)  # fmt: skip
    jobs = [INGEST_LOCAL, INGEST_S3, STATE_LOCAL, STATE_S3, *([KDI_S3] if args.kdi else [])]
    figures = {job: Figures(job, args.records) for job in jobs}
    kdi_env = kdi_store_environment(server)
    try:
        for round_number in range(1, args.rounds + 1):
            for job in jobs:
                warehouse_name = uuid.uuid4().hex[:10]
                if job in (INGEST_LOCAL, STATE_LOCAL):
                    where = local.model_copy(update={"warehouse": root / warehouse_name})
                else:
                    where = on_s3.model_copy(
                        update={"warehouse": Location.of(f"s3a://{BUCKET}/{warehouse_name}")}
                    )
                if job == KDI_S3:
                    assert args.kdi is not None
                    table = Location.of(f"s3a://{BUCKET}/{warehouse_name}/kdi_events")
                    seconds, rows = kdi_run(
                        args.kdi, local, kdi_env, topics["structured"], table, args.records
                    )
                else:
                    state = job in (STATE_LOCAL, STATE_S3)
                    topic = topics["keyed" if state else "structured"]
                    seconds, rows = eventlake_run(where, broker_pid, topic, state=state)
                if rows != args.records:
                    raise RuntimeError(f"{job}: {rows} rows landed of {args.records} records")
                figures[job].seconds.append(seconds)
                figures[job].rows.append(rows)
                print(f"round {round_number} {job}: {seconds:.1f} s, {rows:,} rows", flush=True)
                remove_tree(where.warehouse)
        upkeep = [
            UpkeepFigures.measure(store, where, broker_pid, topics["batches"])
            for store, where in (
                ("local folder", local.model_copy(update={"warehouse": root / "upkeep"})),
                ("S3 server", on_s3.model_copy(
                    update={"warehouse": Location.of(f"s3a://{BUCKET}/upkeep-{tag}")})),
            )
        ]  # fmt: skip
    finally:
        delete_topics(local, list(topics.values()))
        remove_tree(root)
    text, data = report(figures, upkeep, args.records, args.rounds)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"object-store-bench-{stamp}.md").write_text(text + "\n")
    (RESULTS / f"object-store-bench-{stamp}.json").write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
