"""What the cluster tier looks at: the master's and workers' JSON, the executors' work
dirs, Delta tables and Kafka topics read without a JVM, a local-mode run of the same
jobs, and the figures the tier records."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from eventlake.core.locations import LocationLike
from eventlake.core.settings import PROJECT_ROOT, Settings
from eventlake.local.cluster import LocalCluster
from eventlake.local.spark_standalone import worker_name
from eventlake.orchestration.submit import spark_submit_args
from eventlake.storage.store import open_delta_table

#: The header republish adds to each record: where it came from, when, and its target.
TRAIL_HEADER = "eventlake-trail"
#: Folder of the figures (results/ is not committed).
RESULTS_FILE = PROJECT_ROOT / "results" / "cluster-run.json"


# -- the standalone cluster's own view ----------------------------------------------------


def app_ids(cluster: LocalCluster) -> set[str]:
    """Every application the master knows, running or finished."""
    master = cluster.spark.master_json() or {}
    return {app["id"] for app in master.get("activeapps", []) + master.get("completedapps", [])}


def apps_since(cluster: LocalCluster, before: set[str]) -> list[dict[str, Any]]:
    """The master's entries of the applications that were not in ``before``."""
    master = cluster.spark.master_json() or {}
    apps = master.get("activeapps", []) + master.get("completedapps", [])
    return sorted((a for a in apps if a["id"] not in before), key=lambda a: a["starttime"])


def executors_per_worker(cluster: LocalCluster, app_id: str) -> dict[str, list[int]]:
    """Executor ids of ``app_id`` by worker, from each worker's ``/json/`` (running and
    finished executors); a worker that does not answer is left out."""
    found: dict[str, list[int]] = {}
    for number in range(1, cluster.settings.spark_workers + 1):
        worker = cluster.spark.worker_json(number)
        if worker is None:
            continue
        executors = worker.get("executors", []) + worker.get("finishedexecutors", [])
        found[worker_name(number)] = sorted(
            int(e["id"]) for e in executors if e.get("appid") == app_id
        )
    return found


def executor_jars(cluster: LocalCluster, app_id: str) -> dict[str, set[str]]:
    """The jar files in each executor's work dir (``<worker work dir>/<app>/<executor>``),
    by ``worker/executor``: what the driver served the executor from ``spark.jars``."""
    jars: dict[str, set[str]] = {}
    for number in range(1, cluster.settings.spark_workers + 1):
        for folder in sorted((cluster.spark.work_dir(number) / app_id).glob("*")):
            jars[f"{worker_name(number)}/{folder.name}"] = {p.name for p in folder.glob("*.jar")}
    return jars


def executor_logs(cluster: LocalCluster, app_id: str) -> dict[str, str]:
    """Each executor's stderr (its worker writes the executor's command line first,
    ``Spark Executor Command: ...``), by ``worker/executor``."""
    logs: dict[str, str] = {}
    for number in range(1, cluster.settings.spark_workers + 1):
        for folder in sorted((cluster.spark.work_dir(number) / app_id).glob("*")):
            stderr = folder / "stderr"
            if stderr.is_file():
                logs[f"{worker_name(number)}/{folder.name}"] = stderr.read_text(errors="replace")
    return logs


def worker_processes(worker_pid: int) -> list[int]:
    """The worker's process and its live children (the executors it launched; not the
    zombie that spark-class's launcher leaves behind)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == worker_pid and fields[0] != "Z":  # parent pid, state
            children.append(int(stat.parent.name))
    return [worker_pid, *sorted(children)]


def sigkill(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for(what: str, condition: Callable[[], bool], timeout: float, step: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


# -- tables and topics, read without a JVM ------------------------------------------------


def normalized(value: Any) -> Any:
    """A value comparable across two runs: maps (lists of pairs) and lists of dicts in a
    fixed order, dicts with sorted keys."""
    if isinstance(value, dict):
        return {key: normalized(value[key]) for key in sorted(value)}
    if isinstance(value, list | tuple):
        items = [normalized(item) for item in value]
        if items and all(isinstance(item, tuple) and len(item) == 2 for item in items):
            return sorted(items, key=repr)  # a map column
        return items
    return value


def table_rows(
    location: LocationLike, *, drop: Iterable[str] = ("ingested_at",)
) -> list[dict[str, Any]]:
    """Every row of a Delta table (local or on S3) without the ``drop`` columns (when
    each run wrote a row), normalized and sorted."""
    dropped = set(drop)
    rows = open_delta_table(location).to_pyarrow_table().to_pylist()
    cleaned = [normalized({k: v for k, v in row.items() if k not in dropped}) for row in rows]
    return sorted(cleaned, key=repr)


def topic_records(settings: Settings, topic: str) -> list[tuple[Any, ...]]:
    """Every record of ``topic`` as (partition, key, value, headers), sorted: records of
    several source partitions land in one target partition in no fixed order."""
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        records: list[tuple[Any, ...]] = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
            last = low - 1
            while last < high - 1:
                batch = consumer.consume(1000, timeout=10)
                if not batch:
                    raise AssertionError(f"{topic}[{partition}] stopped at {last} of {high}")
                for message in batch:
                    if message.error() is None:
                        last = message.offset()
                        records.append(
                            (partition, message.key(), message.value(), message.headers() or [])
                        )
        return sorted(records, key=repr)
    finally:
        consumer.close()


def run_independent(records: Iterable[tuple[Any, ...]], target: str) -> list[tuple[Any, ...]]:
    """Republished records without what differs between two runs of one route: the time
    in each record's trail header (``at``), and its target, checked to be ``target``."""
    kept = []
    for partition, key, value, headers in records:
        cleaned = []
        for name, header in headers:
            if name == TRAIL_HEADER:
                trail = json.loads(header)
                assert trail.pop("target") == target, trail
                trail.pop("at")
                header = json.dumps(trail, sort_keys=True).encode()
            cleaned.append((name, header))
        kept.append((partition, key, value, cleaned))
    return sorted(kept, key=repr)


# -- a local-mode run of the same jobs ----------------------------------------------------


def run_local(
    application: str, submits: Iterable[Mapping[str, Any]], env: Mapping[str, str], master: str
) -> float:
    """spark-submit each planned job with ``master`` (a local one), one after the other,
    as the DAG would; the seconds it took. Fails with the job's output."""
    started = time.monotonic()
    spark_submit = str(Path(sys.executable).parent / "spark-submit")
    for submit in submits:
        command = spark_submit_args(PROJECT_ROOT / "jobs" / application, submit, master=master)
        command[0] = spark_submit
        full_env = {**os.environ, **env, **submit.get("env_vars", {})}
        # spark-submit finds Spark with the first python on PATH: the venv's, as in Airflow.
        full_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        result = subprocess.run(
            command, env=full_env, capture_output=True, text=True, timeout=900, check=False
        )
        assert result.returncode == 0, (
            f"{application}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return time.monotonic() - started


# -- the figures ----------------------------------------------------------------------------


def write_figures(figures: Mapping[str, Any]) -> str:
    """Write the figures to results/cluster-run.json; their text for the test output."""
    RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(figures, indent=2, default=str)
    RESULTS_FILE.write_text(text + "\n")
    return text
