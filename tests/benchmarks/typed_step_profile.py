"""Where a typed step's seconds go: one session, the same new events stepped
``--rounds`` times into typed tables made afresh each round (the first round pays the
JVM's warm-up), each part of the step timed by wrapping it.

    python tests/benchmarks/typed_step_profile.py --records 1000000

Produces ``--records`` events of ``query_bench.py`` (six types, ~1 KB) to a topic on the
local broker, lands them without typed tables (one bounded ingest in this session), then
times :func:`eventlake.typed.step.update_typed_tables` and, per round, its parts: the
pass finding the types and their fields (``type_shapes``), making the tables
(``_prepare``), the staging pass (``stage``), the typed writes (``Ledger.write``) and
commits (``Ledger.commit``). Prints one line per round; the machine should be idle.
"""

from __future__ import annotations

import argparse
import collections
import functools
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))

import eventlake.typed.step as step_module
from eventlake.ingest import IngestRequest, run_ingest
from eventlake.kafka.topics import delete_topics
from eventlake.ledger.commits import Ledger
from eventlake.local.broker import LocalBroker
from eventlake.local.settings import load_local_settings
from eventlake.spark.session import build_spark_session
from tests.benchmarks.bench import fill_topic
from tests.benchmarks.phases import timed
from tests.benchmarks.query_bench import query_records

#: The parts of a step timed, as (owner, attribute) wrapped in place.
PARTS = (
    (step_module, "type_shapes"),
    (step_module, "_prepare"),
    (step_module, "stage"),
    (Ledger, "write"),
    (Ledger, "commit"),
)


def _add_seconds(seconds: dict[str, float], name: str, more: float) -> None:
    seconds[name] += more


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    settings = load_local_settings()
    LocalBroker(settings).start()
    topic = f"typed-profile-{int(time.time())}"
    warehouse = settings.warehouse.parent / topic
    fill_topic(settings, topic, query_records(args.records, days=5), compact=False)
    job = settings.model_copy(update={"warehouse": warehouse, "typed_tables": False})
    spark = build_spark_session(job, app_name="typed-profile")
    try:
        print(
            run_ingest(spark, job, IngestRequest(topics=(topic,), ending_offsets="latest")).line()
        )
        seconds: dict[str, float] = collections.defaultdict(float)
        for owner, name in PARTS:
            record = functools.partial(_add_seconds, seconds, name)
            setattr(owner, name, timed(getattr(owner, name), record))
        typed = job.model_copy(update={"typed_tables": True})
        for round_number in range(1, args.rounds + 1):
            shutil.rmtree(warehouse / "typed", ignore_errors=True)
            seconds.clear()
            started = time.monotonic()
            step_module.update_typed_tables(spark, typed, Ledger(spark), [topic], note="profile")
            parts = ", ".join(
                f"{n} {s:.2f}" for n, s in sorted(seconds.items(), key=lambda i: -i[1])
            )
            print(f"round {round_number}: step {time.monotonic() - started:.2f} s ({parts})")
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        delete_topics(settings, [topic])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
