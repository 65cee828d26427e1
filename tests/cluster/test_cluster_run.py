"""The DAGs end to end on the local cluster (issue 19): triggered through Airflow's REST
API, each job submitted to the standalone master with executors on both workers, the
jars served to them by path, the tables equal to a local-mode run of the same jobs;
then a worker SIGKILLed during an ingest, which still lands every record exactly once;
then a driver without the cluster's RPC secret, which the master refuses.

The tests share the cluster and run in order (the second kills a worker). Figures
go to results/cluster-run.json (``make test-cluster`` prints them: ``-s``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

import pytest

from eventlake.core.settings import RepublishRoute, Settings, load_settings
from eventlake.kafka.clients import produce_all
from eventlake.kafka.topics import create_topic
from eventlake.local.airflow import LocalAirflow
from eventlake.local.cluster import LocalCluster
from eventlake.local.postgres import METASTORE_DATABASE, METASTORE_USER
from eventlake.local.samples import produce_samples
from eventlake.local.spark_standalone import worker_name
from eventlake.orchestration import plan_ingest, plan_quality, plan_republish
from eventlake.spark.conf import spark_jars
from eventlake.storage import store
from eventlake.warehouse.catalog import same_location
from eventlake.warehouse.names import catalog_name, state_path
from tests.cluster.cluster_tools import (
    app_ids,
    apps_since,
    executor_jars,
    executor_logs,
    executors_per_worker,
    run_independent,
    run_local,
    sigkill,
    table_rows,
    topic_records,
    wait_for,
    worker_processes,
)
from tests.cluster.conftest import (
    CLUSTER_TARGET,
    LOCAL_TARGET,
    MAX_OFFSETS_PER_TRIGGER,
    QUALITY,
    SAMPLE_TOPIC,
    route,
)
from tests.helpers import binary_headers

pytestmark = pytest.mark.cluster

INGEST, REPUBLISH, QUALITY_DAG = "eventlake_ingest", "eventlake_republish", "eventlake_quality"
SAMPLE_COUNT: Final = 2_000
#: The worker-kill topic: several micro-batches of MAX_OFFSETS_PER_TRIGGER records.
KILL_TOPIC: Final = "cluster.kill"
KILL_COUNT: Final = 30_000
LOCAL_MASTER: Final = "local[2]"


def _run(
    airflow: LocalAirflow, cluster: LocalCluster, dag_id: str, conf: dict[str, Any]
) -> dict[str, Any]:
    """Trigger ``dag_id`` through the REST API, wait for it; its figures (state, wall
    time, the Spark applications it ran and their executors per worker)."""
    before = app_ids(cluster)
    started = time.monotonic()
    run_id = airflow.trigger(dag_id, conf)
    state = airflow.wait_for_run(dag_id, run_id, timeout=1200)
    wall = time.monotonic() - started
    instances = airflow.request(
        "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
    ).json()["task_instances"]
    apps = [
        {
            "app_id": app["id"],
            "name": app["name"],
            "cores": app["cores"],
            "state": app["state"],
            "app_seconds": round(app["duration"] / 1000, 1),
            "executors_per_worker": executors_per_worker(cluster, app["id"]),
        }
        for app in apps_since(cluster, before)
    ]
    return {
        "run_id": run_id,
        "state": state,
        "wall_seconds": round(wall, 1),
        "tasks": {ti["task_id"]: [ti["state"], ti["try_number"]] for ti in instances},
        "spark_apps": apps,
    }


def _on_both_workers(cluster: LocalCluster, run: dict[str, Any]) -> None:
    names = {worker_name(n) for n in range(1, cluster.settings.spark_workers + 1)}
    assert run["spark_apps"], f"no Spark application ran: {run}"
    for app in run["spark_apps"]:
        used = {worker for worker, ids in app["executors_per_worker"].items() if ids}
        assert used == names, f"{app['name']} {app['app_id']}: executors on {used} only"


def _local_settings(cluster: LocalCluster, warehouse_name: str) -> Settings:
    return load_settings(
        bootstrap_servers=cluster.settings.bootstrap_servers,
        warehouse=cluster.settings.warehouse.parent / warehouse_name,
        spark_master=LOCAL_MASTER,
        state_topics=[SAMPLE_TOPIC],
        republish_routes=[RepublishRoute(**route(LOCAL_TARGET))],
        quality=QUALITY,
        driver_memory=cluster.settings.driver_memory,
        shuffle_partitions=cluster.settings.shuffle_partitions,
    )


def _registered_tables(cluster: LocalCluster) -> dict[str, str]:
    """``schema.table`` -> path of every table in the cluster metastore's database. Spark
    keeps a Delta table's path in its storage parameter ``path`` (SERDE_PARAMS): the
    storage descriptor's own LOCATION is a placeholder (``...-__PLACEHOLDER__``)."""
    import psycopg2

    connection = psycopg2.connect(
        host="127.0.0.1",
        port=cluster.postgres.port,
        user=METASTORE_USER,
        password=cluster.postgres.metastore_password(),
        dbname=METASTORE_DATABASE,
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                'SELECT d."NAME", t."TBL_NAME", p."PARAM_VALUE" FROM "TBLS" t '
                'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" JOIN "SDS" s ON s."SD_ID" = t."SD_ID" '
                'JOIN "SERDE_PARAMS" p ON p."SERDE_ID" = s."SERDE_ID" AND p."PARAM_KEY" = %s',
                ("path",),
            )
            return {f"{db}.{table}": str(location) for db, table, location in cursor}
    finally:
        connection.close()


def test_dags_on_the_cluster_use_both_workers_and_equal_a_local_run(
    cluster: LocalCluster, figures: dict[str, Any]
) -> None:
    settings = cluster.settings
    produced = produce_samples(settings, topic=SAMPLE_TOPIC, count=SAMPLE_COUNT)
    figures["sample_topic"] = {
        "topic": SAMPLE_TOPIC,
        "records": SAMPLE_COUNT,
        "valid": produced.valid,
        "invalid": produced.invalid,
    }
    airflow = cluster.airflow_client()
    for dag_id in (INGEST, REPUBLISH, QUALITY_DAG):
        airflow.wait_for_dag(dag_id)
    # Quality stays paused until ingest and republish are done: an asset-triggered run
    # after the ingest would check the slice the triggered run below is compared on.
    airflow.unpause(INGEST)
    airflow.unpause(REPUBLISH)

    runs = {INGEST: _run(airflow, cluster, INGEST, {"topics": [SAMPLE_TOPIC]})}
    runs[REPUBLISH] = _run(airflow, cluster, REPUBLISH, {})
    airflow.unpause(QUALITY_DAG)
    runs[QUALITY_DAG] = _run(airflow, cluster, QUALITY_DAG, {})
    figures["cluster_runs"] = runs
    assert {dag: run["state"] for dag, run in runs.items()} == dict.fromkeys(runs, "success"), runs
    for run in runs.values():
        _on_both_workers(cluster, run)

    # The jars: paths of the jars folder (this repository's decoder among them), no
    # package to resolve; each executor has every one in its work dir, served by the driver.
    plan = airflow.request(
        "GET",
        f"/api/v2/dags/{INGEST}/dagRuns/{runs[INGEST]['run_id']}"
        "/taskInstances/plan/xcomEntries/return_value",
    ).json()["value"]
    expected = spark_jars(settings)
    assert [submit["jars"] for submit in plan] == [",".join(map(str, expected))]
    conf = plan[0]["conf"]
    assert not {key for key in conf if key.startswith("spark.jars.")}, conf
    assert conf["spark.executor.cores"] == "1"
    names = {jar.name for jar in expected}
    assert "eventlake-cloudevents-0.1.0.jar" in names
    served = {
        app["app_id"]: executor_jars(cluster, app["app_id"])
        for run in runs.values()
        for app in run["spark_apps"]
    }
    for app_id, executors in served.items():
        assert len(executors) >= 2, (app_id, executors)
        assert all(jars == names for jars in executors.values()), (app_id, executors)
    figures["jars_per_executor"] = {
        "jars": sorted(names),
        "executors_checked": sum(len(e) for e in served.values()),
    }
    # The warehouse is on the cluster's S3 server; the executors got its keys from their
    # driver (over the authenticated RPC), never on their launch command line.
    assert str(settings.warehouse).startswith("s3a://"), settings.warehouse
    secret = cluster.object_store.connection().s3_secret_access_key
    assert secret is not None
    logs = {app_id: executor_logs(cluster, app_id) for app_id in served}
    assert all(logs.values()) and all(
        "Spark Executor Command" in text
        for executors in logs.values()
        for text in executors.values()
    ), logs
    assert not [
        (app_id, name)
        for app_id, executors in logs.items()
        for name, text in executors.items()
        if secret.get_secret_value() in text
    ]

    # The DAGs' jobs registered their tables in the cluster's metastore, whose catalog is
    # in PostgreSQL's metastore database (read there, as the metastore's own user).
    registered = _registered_tables(cluster)
    figures["metastore_tables"] = sorted(registered)
    wanted = ("events", "rejects", "dq_results", f"state/{SAMPLE_TOPIC}")
    for table in wanted:
        name = catalog_name(table, settings.metastore_schema)
        assert name in registered, (name, registered)
        assert same_location(registered[name], str(settings.table_path(table)))

    # The same jobs in local mode, on a warehouse and a route target of their own.
    local = _local_settings(cluster, "warehouse-local")
    env = {
        "EVENTLAKE_SPARK_MASTER": LOCAL_MASTER,
        "EVENTLAKE_QUALITY": json.dumps(QUALITY),
        "EVENTLAKE_DRIVER_MEMORY": local.driver_memory,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    local_seconds = {
        INGEST: run_local(
            "ingest_cloudevents.py",
            plan_ingest({"topics": [SAMPLE_TOPIC]}, local),
            env,
            LOCAL_MASTER,
        ),
        REPUBLISH: run_local("republish_routes.py", plan_republish({}, local), env, LOCAL_MASTER),
        QUALITY_DAG: run_local("check_quality.py", [plan_quality({}, local)], env, LOCAL_MASTER),
    }
    figures["local_run_seconds"] = {k: round(v, 1) for k, v in local_seconds.items()}

    compared: dict[str, dict[str, int]] = {}

    def compare(name: str, on_cluster: list[Any], in_local: list[Any]) -> None:
        compared[name] = {"cluster": len(on_cluster), "local": len(in_local)}
        assert on_cluster == in_local, f"{name}: the cluster's rows differ from the local run's"

    compare(
        "events",
        table_rows(settings.table_path("events")),
        table_rows(local.table_path("events")),
    )
    # Republish's rejects name the route's target, which differs between the two runs.
    renamed = {f"republish:{LOCAL_TARGET}": f"republish:{CLUSTER_TARGET}"}
    local_rejects = [
        {**row, "rejected_by": renamed.get(row["rejected_by"], row["rejected_by"])}
        for row in table_rows(local.table_path("rejects"))
    ]
    compare("rejects", table_rows(settings.table_path("rejects")), sorted(local_rejects, key=repr))
    compare(
        f"state/{SAMPLE_TOPIC}",
        table_rows(state_path(settings, SAMPLE_TOPIC)),
        table_rows(state_path(local, SAMPLE_TOPIC)),
    )
    compare(
        "dq_results",
        table_rows(settings.table_path("dq_results"), drop=("run_id", "run_time")),
        table_rows(local.table_path("dq_results"), drop=("run_id", "run_time")),
    )
    compare(
        "republished topic",
        run_independent(topic_records(settings, CLUSTER_TARGET), CLUSTER_TARGET),
        run_independent(topic_records(settings, LOCAL_TARGET), LOCAL_TARGET),
    )
    figures["rows_cluster_vs_local"] = compared
    # Not empty comparisons: the sample stream has rejects, tombstones and failures.
    assert compared["events"]["cluster"] > 0 and compared["rejects"]["cluster"] > 0
    assert 0 < compared[f"state/{SAMPLE_TOPIC}"]["cluster"] < compared["events"]["cluster"]


def test_worker_killed_during_an_ingest_still_lands_every_record_once(
    cluster: LocalCluster, figures: dict[str, Any]
) -> None:
    settings = cluster.settings
    airflow = cluster.airflow_client()
    # No asset-triggered quality run competing for the one surviving worker's core.
    airflow.request("PATCH", f"/api/v2/dags/{QUALITY_DAG}", {"is_paused": True}).raise_for_status()
    create_topic(settings, KILL_TOPIC, partitions=3)
    ids = [f"kill-{n}" for n in range(KILL_COUNT)]
    produce_all(
        settings,
        KILL_TOPIC,
        ((f"k{n % 101}".encode(), b'{"n": %d}' % n, binary_headers(i)) for n, i in enumerate(ids)),
    )
    log = settings.table_path("events") / "_delta_log"

    def commits() -> int:
        """Commit files in the events table's log (on the cluster's S3 server)."""
        return sum(1 for name in store.names(log) if name.endswith(".json") and name[0].isdigit())

    commits_before = commits()
    before = app_ids(cluster)
    started = time.monotonic()
    run_id = airflow.trigger(INGEST, {"topics": [KILL_TOPIC]})

    # The ingest's application, once it has an executor on each worker and has committed
    # a first micro-batch to the events table: then worker 1 and its executor die.
    app: dict[str, Any] = {}

    def running_on_both() -> bool:
        new = [a for a in apps_since(cluster, before) if a["state"] == "RUNNING"]
        if not new:
            return False
        app.update(new[0])
        per_worker = executors_per_worker(cluster, app["id"])
        return len(per_worker) == 2 and all(per_worker.values())

    wait_for("the ingest's executors on both workers", running_on_both, timeout=600)
    executors_before_kill = executors_per_worker(cluster, app["id"])
    wait_for(
        "a first micro-batch committed",
        lambda: commits() > commits_before,
        timeout=600,
        step=0.2,
    )
    assert airflow.run_state(INGEST, run_id) == "running", "the ingest ended before the kill"
    victim = cluster.spark.pids()[worker_name(1)]
    killed = worker_processes(victim)
    killed_at = time.monotonic() - started
    commits_at_kill = commits() - commits_before
    sigkill(killed)

    state = airflow.wait_for_run(INGEST, run_id, timeout=1500)
    wall = time.monotonic() - started
    instances = airflow.request(
        "GET", f"/api/v2/dags/{INGEST}/dagRuns/{run_id}/taskInstances"
    ).json()["task_instances"]
    tries = {ti["task_id"]: [ti["state"], ti["try_number"]] for ti in instances}
    apps = apps_since(cluster, before)
    commits_after_kill = commits() - commits_before - commits_at_kill
    master = cluster.spark.master_json() or {}
    worker_states = {w["webuiaddress"]: w["state"] for w in master.get("workers", [])}

    events = table_rows(settings.table_path("events"))
    landed = [e for e in events if e["kafka_topic"] == KILL_TOPIC]
    coordinates = Counter((e["kafka_partition"], e["kafka_offset"]) for e in landed)
    landed_ids = Counter(e["id"] for e in landed)
    figures["worker_kill"] = {
        "topic": KILL_TOPIC,
        "records": KILL_COUNT,
        "max_offsets_per_trigger": MAX_OFFSETS_PER_TRIGGER,
        "app_id": app["id"],
        "executors_before_kill": executors_before_kill,
        "killed": {"worker": worker_name(1), "pids (worker, its executors)": killed},
        "killed_after_seconds": round(killed_at, 1),
        "events_commits_before_kill": commits_at_kill,
        "events_commits_after_kill": commits_after_kill,
        "executors_after_run": executors_per_worker(cluster, app["id"]),
        "master_workers_after_run": worker_states,
        "run_state": state,
        "tasks": tries,
        "spark_apps": [
            {"app_id": a["id"], "state": a["state"], "app_seconds": round(a["duration"] / 1000, 1)}
            for a in apps
        ],
        "wall_seconds": round(wall, 1),
        "events_rows_of_topic": len(landed),
        "distinct_ids": len(landed_ids),
        "duplicates": sum(n - 1 for n in coordinates.values() if n > 1),
        "missing": len(set(ids) - set(landed_ids)),
    }
    assert state == "success", figures["worker_kill"]
    assert commits_after_kill > 0, "the ingest did no work after the kill"
    assert sorted(landed_ids) == sorted(ids), figures["worker_kill"]
    assert all(n == 1 for n in landed_ids.values()), figures["worker_kill"]
    assert all(n == 1 for n in coordinates.values()), figures["worker_kill"]


def test_a_submission_without_the_clusters_secret_is_refused(
    cluster: LocalCluster, figures: dict[str, Any], tmp_path: Path
) -> None:
    """The cluster authenticates its RPC: a driver that does not know the secret gets no
    application on the master, and a sentence instead of a stack trace."""
    settings = cluster.settings
    names_before = {app["name"] for app in _master_apps(cluster)}
    env = {key: value for key, value in os.environ.items() if not key.startswith("EVENTLAKE_")}
    env.update(
        {
            "EVENTLAKE_SPARK_MASTER": cluster.spark.url,
            "EVENTLAKE_SPARK_AUTHENTICATE": "false",
            "EVENTLAKE_WAREHOUSE": str(tmp_path / "warehouse"),
            "EVENTLAKE_DRIVER_MEMORY": settings.driver_memory,
        }
    )
    started = time.monotonic()

    result = subprocess.run(
        [str(Path(sys.executable).parent / "eventlake"), "query", "SELECT 1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    figures["unauthenticated_submission"] = {
        "exit_code": result.returncode,
        "seconds": round(time.monotonic() - started, 1),
        "error": result.stderr.strip().splitlines()[-1:],
    }
    assert result.returncode == 2, result.stderr[-3000:]
    assert "did not accept this application" in result.stderr
    assert "Traceback" not in result.stderr
    master_log = cluster.spark.log_file("spark-master").read_text(errors="replace")
    assert "Expected SaslMessage" in master_log
    names_after = {app["name"] for app in _master_apps(cluster)}
    assert "eventlake-query" not in names_after - names_before


def _master_apps(cluster: LocalCluster) -> list[dict[str, Any]]:
    master = cluster.spark.master_json() or {}
    return [*master.get("activeapps", []), *master.get("completedapps", [])]
