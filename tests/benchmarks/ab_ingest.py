"""`eventlake ingest` of two checkouts against each other, interleaved: whole processes on
one topic of mixed ~1 KB events, a fresh warehouse per run, the order of the two
alternating each round. For a change whose cost is within the drift of the machine
between two `bench.py` runs.

Usage:
    python tests/benchmarks/ab_ingest.py --old /tmp/before --new . --rounds 4

Each checkout needs its jars (`make jars`) and, for a fair start-up, its class archive
(`eventlake class-archive`, run in that checkout).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Runs as a script from the checkout (python tests/benchmarks/ab_ingest.py): its own
# packages first, as bench.py does.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from tests.benchmarks.bench import bench_records, fill_topic


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--new", type=Path, default=Path("."), help="the checkout measured")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    settings = load_local_settings()
    LocalBroker(settings).start()
    topic = f"ab-ingest-{int(time.time())}"
    fill_topic(settings, topic, bench_records(args.records, mode="mixed", seed=42), compact=False)
    scratch = settings.warehouse.parent / "ab-ingest"
    times: dict[str, list[float]] = {"old": [], "new": []}
    for round_ in range(args.rounds):
        for name in ("old", "new") if round_ % 2 == 0 else ("new", "old"):
            root = (args.old if name == "old" else args.new).resolve()
            env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTLAKE_")}
            env.update(
                PYTHONPATH=f"{root / 'lib'}{os.pathsep}{root}",
                EVENTLAKE_WAREHOUSE=str(scratch / f"{name}-{round_}"),
                EVENTLAKE_BOOTSTRAP_SERVERS=settings.bootstrap_servers,
            )
            command = [sys.executable, "-m", "eventlake.cli", "ingest", "--topic", topic]
            started = time.monotonic()
            done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
            seconds = time.monotonic() - started
            summary = (done.stdout.strip().splitlines() or [done.stderr[-300:]])[-1]
            if f"read={args.records}" not in summary:
                raise SystemExit(f"{name} ({root}) did not read every record: {summary}")
            times[name].append(seconds)
            print(f"round {round_} {name}: {seconds:.1f} s  {summary}", flush=True)
    for name, values in times.items():
        print(f"{name}: median {statistics.median(values):.2f} s {[round(v, 1) for v in values]}")
    ratio = statistics.median(times["new"]) / statistics.median(times["old"])
    print(f"new / old: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
