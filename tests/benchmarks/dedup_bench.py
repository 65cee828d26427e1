"""What ``--dedup`` costs ingest (issue 35): ``eventlake ingest`` of ``--records`` new mixed
~1 KB events into a warehouse that already holds ``--records`` events (all within the
horizon), with and without ``--dedup``, whole processes, interleaved, a fresh copy of
the warehouse per run.

    python tests/benchmarks/dedup_bench.py --records 1000000 --rounds 3

One event in ``--repeat-every`` of the new topic repeats an (source, id) of the table,
so the check finds real duplicates; the run without ``--dedup`` lands them as events.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from eventlake.kafka.clients import Record
from eventlake.kafka.topics import delete_topics
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from tests.benchmarks.bench import bench_records, fill_topic


def repeating(records: Iterator[Record], every: int) -> Iterator[Record]:
    """``records`` (seed 43) with every ``every``-th one's id set to seed 42's id of the
    same position: a repeat of an event the first topic landed."""
    for n, (key, value, headers) in enumerate(records):
        if n % every == 0:
            old, new = f"43-{n}".encode(), f"42-{n}".encode()
            headers = [(k, new if v == old else v) for k, v in headers]
            value = None if value is None else value.replace(b'"43-%d"' % n, b'"42-%d"' % n)
        yield (key, value, headers)


def bounded_ingest(
    warehouse: Path, topic: str, *, dedup: bool, typed: bool = False
) -> tuple[float, str]:
    """``eventlake ingest --ending-offsets latest`` of ``topic`` into ``warehouse`` as a
    process of its own (``typed``: keeping the typed tables, whose line is then the
    second to last): its seconds and its output's last lines."""
    env = {
        **os.environ,
        "EVENTLAKE_WAREHOUSE": str(warehouse),
        "EVENTLAKE_TYPED_TABLES": str(typed).lower(),
    }
    command = [
        str(Path(sys.executable).parent / "eventlake"),
        "ingest",
        "--topic",
        topic,
        "--ending-offsets",
        "latest",
        *(["--dedup"] if dedup else []),
    ]
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    lines = done.stdout.strip().splitlines()
    return time.monotonic() - started, "\n".join(lines[-2:] if typed else lines[-1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat-every", type=int, default=100)
    args = parser.parse_args(argv)
    settings = load_local_settings()
    LocalBroker(settings).start()
    stamp = int(time.time())
    landed, fresh = f"dedup-bench-landed-{stamp}", f"dedup-bench-new-{stamp}"
    fill_topic(settings, landed, bench_records(args.records, mode="mixed", seed=42), compact=False)
    new_records = repeating(bench_records(args.records, mode="mixed", seed=43), args.repeat_every)
    fill_topic(settings, fresh, new_records, compact=False)
    scratch = settings.warehouse.parent / f"dedup-bench-{stamp}"
    base = scratch / "base"
    seconds, line = bounded_ingest(base, landed, dedup=False)
    print(f"base: {seconds:.1f} s  {line}", flush=True)
    times: dict[str, list[float]] = {"plain": [], "dedup": []}
    for round_ in range(args.rounds):
        for name in ("plain", "dedup") if round_ % 2 == 0 else ("dedup", "plain"):
            warehouse = scratch / f"{name}-{round_}"
            shutil.copytree(base, warehouse)
            seconds, line = bounded_ingest(warehouse, fresh, dedup=name == "dedup")
            times[name].append(seconds)
            print(f"round {round_} {name}: {seconds:.1f} s  {line}", flush=True)
            shutil.rmtree(warehouse)
    for name, values in times.items():
        print(f"{name}: median {statistics.median(values):.2f} s {[round(v, 1) for v in values]}")
    ratio = statistics.median(times["plain"]) / statistics.median(times["dedup"])
    print(f"ingest with --dedup / without (throughput): {ratio:.3f}")
    shutil.rmtree(scratch, ignore_errors=True)
    delete_topics(settings, [landed, fresh])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
