"""eventlake against its peers (issue 75's targets): kafka-delta-ingest on the
structured-only topic, the plain PySpark job on the mixed topic; whole processes, a
fresh table per run, interleaved rounds, on a local folder.

    python tests/benchmarks/peer_bench.py --kdi /path/to/kafka-delta-ingest --records 1000000
    python tests/benchmarks/peer_bench.py --kdi ... --records 5000000 --rounds 1

It fills two topics of ~1 KB CloudEvents on the local broker as ``bench.py`` makes
them (structured-only, and mixed: binary, structured and bad records; 2 partitions),
then per round runs, one after the other:

* ``eventlake ingest --topic <structured>`` (the command users run), into a new
  warehouse;
* kafka-delta-ingest (``--kdi``: a release build, see
  :mod:`tests.benchmarks.kafka_delta_ingest`) landing the same topic into a new Delta
  table whose columns are the events' fields, timed to the commit that holds every
  record;
* the plain PySpark job (``plain_pyspark_ingest.py``) on the mixed topic;
* ``eventlake ingest --topic <mixed>``.

Every run's rows are counted from its table's log and a run that lands another number
fails the bench. Prints the medians and the ratios (seconds of the peer over eventlake's:
above 1, eventlake is faster), and writes ``results/peer-bench-<time>.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from eventlake.core.locations import Location
from eventlake.core.settings import Settings
from eventlake.kafka.topics import delete_topics
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from tests.benchmarks.bench import (
    REFERENCE_SCRIPT,
    RESULTS,
    bench_records,
    delta_table_rows,
    fill_topic,
    job_environment,
    run_process,
)
from tests.benchmarks.kafka_delta_ingest import kdi_run

EVENTLAKE_STRUCTURED: Final = "eventlake ingest, structured"
KDI_STRUCTURED: Final = "kafka-delta-ingest, structured"
PLAIN_MIXED: Final = "plain PySpark job, mixed"
EVENTLAKE_MIXED: Final = "eventlake ingest, mixed"
#: Issue 75's targets: (peer, eventlake, records) -> peer seconds over eventlake's.
TARGETS: Final = {
    (KDI_STRUCTURED, EVENTLAKE_STRUCTURED, 1_000_000): 1.2,
    (KDI_STRUCTURED, EVENTLAKE_STRUCTURED, 5_000_000): 2.0,
    (PLAIN_MIXED, EVENTLAKE_MIXED, 1_000_000): 1.0,
}


def eventlake_ingest(settings: Settings, topic: str) -> tuple[float, int]:
    """One ``eventlake ingest`` process of ``topic`` into ``settings.warehouse``: its
    seconds and the rows of events and rejects."""
    command = [str(Path(sys.executable).parent / "eventlake"), "ingest", "--topic", topic]
    started = time.monotonic()
    subprocess.run(command, env=job_environment(settings), capture_output=True, check=True)
    seconds = time.monotonic() - started
    warehouse = Path(settings.warehouse)
    rows = [delta_table_rows(warehouse / name) for name in ("events", "rejects")]
    return seconds, sum(r or 0 for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kdi", type=Path, required=True, help="a kafka-delta-ingest binary")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    settings = load_local_settings()
    broker_pid = LocalBroker(settings).start().pid
    tag = uuid.uuid4().hex[:6]
    topics = {"structured": f"peer-structured-{tag}", "mixed": f"peer-mixed-{tag}"}
    root = Path(settings.warehouse).parent / f"peer-bench-{tag}"
    print(f"filling {args.records:,} records into {list(topics.values())}", flush=True)
    for mode, topic in topics.items():
        fill_topic(settings, topic, bench_records(args.records, mode=mode, seed=7), compact=False)
    seconds: dict[str, list[float]] = {
        job: [] for job in (EVENTLAKE_STRUCTURED, KDI_STRUCTURED, PLAIN_MIXED, EVENTLAKE_MIXED)
    }
    try:
        for round_number in range(1, args.rounds + 1):
            for job in seconds:
                where = settings.model_copy(update={"warehouse": root / uuid.uuid4().hex[:10]})
                warehouse = Path(where.warehouse)
                if job == KDI_STRUCTURED:
                    table = Location.of(str(warehouse / "kdi_events"))
                    warehouse.mkdir(parents=True)
                    took, rows = kdi_run(
                        args.kdi, settings, {}, topics["structured"], table, args.records
                    )
                elif job == PLAIN_MIXED:
                    table_path = warehouse / "plain_events"
                    command = [str(REFERENCE_SCRIPT), "--topic", topics["mixed"]]
                    run = run_process([*command, "--table", str(table_path)], where, broker_pid)
                    # The plain job keeps the valid events alone: its rows are those.
                    took, rows = run.seconds, delta_table_rows(table_path) or 0
                    if rows != run.records:
                        raise RuntimeError(f"{job}: {rows} rows, the job reports {run.records}")
                else:
                    mode = "structured" if job == EVENTLAKE_STRUCTURED else "mixed"
                    took, rows = eventlake_ingest(where, topics[mode])
                    if rows != args.records:
                        raise RuntimeError(f"{job}: {rows} rows landed of {args.records}")
                seconds[job].append(took)
                print(f"round {round_number} {job}: {took:.1f} s, {rows:,} rows", flush=True)
                shutil.rmtree(warehouse, ignore_errors=True)
    finally:
        delete_topics(settings, list(topics.values()))
        shutil.rmtree(root, ignore_errors=True)
    text = report(seconds, args.records, args.rounds, args.kdi)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"peer-bench-{stamp}.md").write_text(text + "\n")
    return 0


def report(seconds: dict[str, list[float]], records: int, rounds: int, kdi: Path) -> str:
    """The Markdown table of medians and the ratios against issue 75's targets."""
    medians = {job: statistics.median(runs) for job, runs in seconds.items()}
    lines = [
        f"# Peer bench, {records:,} records, {rounds} round(s), {datetime.now(UTC):%Y-%m-%d}",
        "",
        f"kafka-delta-ingest: `{kdi}`; {os.cpu_count()} cores.",
        "",
        "| job | s (median) | runs (s) | events/s |",
        "|---|---:|---|---:|",
        *(
            f"| {job} | {medians[job]:.1f} | {', '.join(f'{s:.1f}' for s in runs)} | "
            f"{records / medians[job]:,.0f} |"
            for job, runs in seconds.items()
        ),
        "",
    ]
    for peer, ours in dict.fromkeys((peer, ours) for peer, ours, _ in TARGETS):
        ratio = medians[peer] / medians[ours]
        target = TARGETS.get((peer, ours, records))
        verdict = "no target at this N"
        if target is not None:
            verdict = f"target >= {target}, {'met' if ratio >= target else 'not met'}"
        lines.append(f"- {peer} / {ours}, seconds: {ratio:.2f} ({verdict})")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
