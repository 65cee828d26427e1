"""Where a job's seconds go: run one benchmark job (``bench_job.py``) with Spark's event
log on, then print each Spark job it ran: when it started (seconds after the first),
how long it took, the tasks' summed run time, records read, and what ran it (the job
description, else the call site). The time between jobs is the driver's own (planning,
Delta commits, Python).

    python tests/benchmarks/event_log.py --topic bench-...-mixed -- republish --target t2
    python tests/benchmarks/event_log.py --log /tmp/evlog/local-1234   # an existing log

The job's arguments after ``--`` are ``bench_job.py``'s (the job name first; ``--topic``
is passed through). Not part of ``make test``: a profiling aid, run on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from eventlake.core.text_table import text_table

JOB_SCRIPT = Path(__file__).with_name("bench_job.py")


@dataclass
class SparkJob:
    """One Spark job of the log: times in ms since the epoch, summed task time."""

    job_id: int
    started: int
    what: str
    ended: int = 0
    stages: list[int] = field(default_factory=list)
    task_ms: int = 0
    records_read: int = 0


def read_jobs(log: Path) -> list[SparkJob]:
    """The Spark jobs of an uncompressed event log, in the order they started.

    Example:
        >>> [job.job_id for job in read_jobs(Path("/tmp/evlog/local-1"))][:2]
        [0, 1]
    """
    jobs: dict[int, SparkJob] = {}
    stage_job: dict[int, int] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            properties = event.get("Properties") or {}
            what = properties.get("spark.job.description") or properties.get("callSite.short", "")
            job = SparkJob(event["Job ID"], event["Submission Time"], what)
            job.stages = list(event.get("Stage IDs", []))
            for stage in job.stages:
                stage_job[stage] = job.job_id
            jobs[job.job_id] = job
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]].ended = event["Completion Time"]
        elif kind == "SparkListenerTaskEnd":
            job_id = stage_job.get(event.get("Stage ID", -1))
            if job_id is None:
                continue
            metrics = event.get("Task Metrics") or {}
            jobs[job_id].task_ms += int(metrics.get("Executor Run Time", 0))
            jobs[job_id].records_read += int(
                (metrics.get("Input Metrics") or {}).get("Records Read", 0)
            )
    return sorted(jobs.values(), key=lambda j: j.started)


def report(jobs: list[SparkJob]) -> list[str]:
    """The jobs as an aligned table, then the seconds in jobs and between them."""
    if not jobs:
        return ["no Spark jobs in the log"]
    first = jobs[0].started
    rows = [
        [
            str(job.job_id),
            f"{(job.started - first) / 1000:.1f}",
            f"{(job.ended - job.started) / 1000:.2f}",
            f"{job.task_ms / 1000:.1f}",
            f"{job.records_read:,}",
            job.what.replace("\n", " ")[:90],
        ]
        for job in jobs
    ]
    lines = text_table(["job", "at s", "seconds", "task s", "records read", "what"], rows)
    busy, last_end = 0, first
    for job in jobs:
        start = max(job.started, last_end)
        busy += max(0, job.ended - start)
        last_end = max(last_end, job.ended)
    span = (last_end - first) / 1000
    lines.append(
        f"{len(jobs)} Spark jobs over {span:.1f} s: {busy / 1000:.1f} s in jobs, "
        f"{span - busy / 1000:.1f} s between them (driver: planning, commits, Python)"
    )
    return lines


def run_logged(job_arguments: list[str], topic: str | None) -> Path:
    """Run ``bench_job.py`` with the event log on (uncompressed, in a temporary folder)
    and return the log it wrote."""
    folder = Path(tempfile.mkdtemp(prefix="eventlake-evlog-"))
    logs = folder / "logs"
    logs.mkdir()
    confs = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file://{logs}",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    command = [sys.executable, str(JOB_SCRIPT), *job_arguments]
    if topic:
        command += ["--topic", topic]
    # Through spark-submit's arguments, not a SPARK_CONF_DIR: Spark puts that folder on
    # the driver's class path, and the JVM then refuses eventlake's class archive (made
    # with another class path), so the profiled job would start seconds slower.
    submit = " ".join(f"--conf {key}={value}" for key, value in confs.items())
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": f"{submit} pyspark-shell"}
    done = subprocess.run(command, env=env, check=False)
    if done.returncode != 0:
        print(f"event_log: the job exited {done.returncode}", file=sys.stderr)
    (log,) = [p for p in logs.iterdir() if p.is_file()]
    return log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", type=Path, help="an existing uncompressed event log")
    parser.add_argument("--topic", help="the job's --topic")
    parser.add_argument("job", nargs="*", help="bench_job.py's arguments, after --")
    args = parser.parse_args(argv)
    if args.log is None and not args.job:
        parser.error("give --log, or a job to run after --")
    log = args.log or run_logged(args.job, args.topic)
    print(f"event log: {log}")
    print("\n".join(report(read_jobs(log))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
