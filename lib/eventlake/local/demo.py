"""`make demo`: the whole platform on one machine, driven through Airflow.

1. start the local Kafka broker;
2. produce a realistic mixed stream to a keyed, compacted topic (binary and structured
   events, several types, updates and tombstones per entity, ~2% invalid records);
3. start the local Hive Metastore (:mod:`eventlake.local.metastore`), where the jobs
   register the tables by name, and a local Airflow (:mod:`eventlake.local.airflow`) on
   the project's DAGs, with the topic configured as a state topic and one re-key route;
4. trigger ``eventlake_ingest``, then ``eventlake_republish`` and ``eventlake_quality``,
   through the REST API as the UI's trigger button does, and wait for each run;
5. print downstream queries of the Delta tables (one by its name in the metastore), the
   UI address and how to stop.

Airflow is stopped at the end unless ``keep_ui`` (``make demo-ui``) leaves it running.
With ``--object-store`` (``make demo-s3``) the warehouse is on the local S3 server
(:func:`on_the_local_s3_server`), which the DAGs reach through ``aws_default``.

Example:
    >>> run_demo(load_local_settings(), count=500, keep_ui=False)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from eventlake.core.errors import EventlakeError
from eventlake.core.locations import Location
from eventlake.local.airflow import LocalAirflow, LocalAirflowError, stop_local_airflow
from eventlake.local.metastore import LocalMetastore
from eventlake.local.s3_server import LocalS3Server
from eventlake.local.settings import LocalSettings
from eventlake.storage.store import on_object_store

DEMO_TOPIC: Final = "demo.orders"
#: The warehouse of ``eventlake demo --object-store`` on the local S3 server.
DEMO_S3_WAREHOUSE: Final = "s3a://eventlake/demo-warehouse"
#: The re-key route of the demo: the same events keyed by the partitionkey extension.
DEMO_TARGET: Final = "demo.orders.by-entity"
#: The project's DAGs, every one unpaused by the demo.
DEMO_DAGS: Final = (
    "eventlake_ingest",
    "eventlake_republish",
    "eventlake_quality",
    "eventlake_maintenance",
)
#: What the demo shows of its warehouse, its own topic's rows only (a warehouse used for
#: other topics too keeps them).
QUERIES: Final = (
    (
        f"events of {DEMO_TOPIC} by content mode and type (every demo run so far)",
        "SELECT content_mode, type, count(*) AS events FROM events "
        f"WHERE kafka_topic = '{DEMO_TOPIC}' "
        "GROUP BY content_mode, type ORDER BY content_mode, type",
    ),
    (
        f"rejects of {DEMO_TOPIC} by job and reason (ingest and republish each account for "
        "their reads)",
        "SELECT rejected_by, reason, count(*) AS records FROM rejects "
        f"WHERE kafka_topic = '{DEMO_TOPIC}' "
        "GROUP BY rejected_by, reason ORDER BY rejected_by, reason",
    ),
    (
        f"state of {DEMO_TOPIC}: entities alive (tombstones deleted the others)",
        "SELECT count(*) AS entities, max(kafka_offset) AS latest_offset FROM state_demo_orders",
    ),
    (
        "data-quality results of the last run",
        "SELECT `check`, severity, success, count(*) AS expectations FROM dq_results "
        "WHERE run_id = (SELECT max_by(run_id, run_time) FROM dq_results) "
        "GROUP BY `check`, severity, success ORDER BY `check`",
    ),
)


#: The demo's query by name: the events table as the metastore names it, which any
#: Spark or engine on the metastore reads the same way (docs/querying.md).
BY_NAME_QUERY: Final = (
    f"events of {DEMO_TOPIC} by name in the metastore (eventlake.events)",
    f"SELECT count(*) AS events FROM eventlake.events WHERE kafka_topic = '{DEMO_TOPIC}'",
)


#: What the demo's closing lines suggest trying next, as ``(command, what it shows)``:
#: each command works as printed from a new shell in the checkout (no venv activated;
#: tests/test_docs_commands.py runs the ``.venv/bin`` ones, the README shows them too).
NEXT_STEPS: Final = (
    (".venv/bin/eventlake status", "per topic: where the tables stand, lag, risks, quality"),
    (".venv/bin/eventlake types", "event types, counts, typed views, shape changes"),
    (
        '.venv/bin/eventlake query "SELECT type, count(*) AS n FROM events GROUP BY type"',
        "any SQL over the tables and views (docs/querying.md)",
    ),
)


def next_steps(url: str, *, keep_ui: bool) -> list[str]:
    """The demo's closing lines: what to try next, each command as it runs from a shell.

    Example:
        >>> next_steps("http://127.0.0.1:8080", keep_ui=True)[0]
        'Airflow UI: http://127.0.0.1:8080 (no login: local SimpleAuthManager, every user admin)'
    """
    steps = [(command, what) for command, what in NEXT_STEPS]
    if keep_ui:
        lines = [f"Airflow UI: {url} (no login: local SimpleAuthManager, every user admin)"]
        steps.append(("make stop", "stop Airflow, the broker and the metastore"))
    else:
        lines = ["Airflow was stopped; the broker and the metastore still run."]
        steps.append(("make demo-ui", f"the demo again, leaving the Airflow UI up at {url}"))
        steps.append(
            ("make stop", "stop the broker, the metastore (and the S3 server of make demo-s3)")
        )
    lines.append("Try next, from the checkout in any shell:")
    for command, what in steps:
        lines += [f"  {what}:", f"    {command}"]
    return lines


class DemoError(EventlakeError, RuntimeError):
    """A step of the demo failed; the message says which and where the logs are."""


@dataclass(frozen=True)
class DemoRun:
    """What the demo did: the DAG runs and their final states."""

    url: str
    states: dict[str, str]
    #: The metastore the jobs registered the tables in.
    metastore_uri: str


def demo_environment(topic: str = DEMO_TOPIC) -> dict[str, str]:
    """The eventlake settings the demo's Airflow workers get.

    Example:
        >>> json.loads(demo_environment()["EVENTLAKE_STATE_TOPICS"])
        ['demo.orders']
    """
    route = {
        "source": topic,
        "target": DEMO_TARGET,
        "key_mapper": "partitionkey",
        "cleanup_policy": "compact",
    }
    return {
        "EVENTLAKE_TOPICS": topic,
        "EVENTLAKE_STATE_TOPICS": json.dumps([topic]),
        "EVENTLAKE_REPUBLISH_ROUTES": json.dumps([route]),
        # The demo's ingest keeps a typed table per event type (off by default).
        "EVENTLAKE_TYPED_TABLES": "true",
    }


def on_the_local_s3_server(
    settings: LocalSettings, say: Callable[[str], None] = print
) -> LocalSettings:
    """``settings`` with the warehouse on the local S3 server, which this starts (with
    the warehouse's bucket); this process's ``EVENTLAKE_S3_*`` point at it too, for the
    demo's queries. The warehouse is :data:`DEMO_S3_WAREHOUSE` unless the settings name
    one on ``s3a://``.

    Example:
        >>> str(on_the_local_s3_server(load_local_settings()).warehouse)
        's3a://eventlake/demo-warehouse'
    """
    server = LocalS3Server(settings)
    say(server.start().describe())
    warehouse = on_object_store(settings.warehouse) or Location.of(DEMO_S3_WAREHOUSE)
    server.make_bucket(warehouse)
    os.environ.update(server.environment())
    return settings.model_copy(update={**dict(server.connection()), "warehouse": warehouse})


def run_demo(
    settings: LocalSettings,
    *,
    count: int = 500,
    keep_ui: bool = False,
    say: Callable[[str], None] = print,
) -> DemoRun:
    """Run the demo end to end; raises :class:`DemoError` when a DAG run fails."""
    from eventlake.local.broker import LocalBroker
    from eventlake.local.samples import produce_samples

    started = time.monotonic()

    def step(message: str) -> None:
        say(f"[{time.monotonic() - started:5.0f} s] {message}")

    step("starting the Kafka broker")
    step(LocalBroker(settings).start().describe())
    # New events each run (new ids): a second demo on the same warehouse adds events,
    # it does not send the first run's again (which the quality check would flag).
    produced = produce_samples(settings, topic=DEMO_TOPIC, count=count, seed=None)
    step(
        f"produced {produced.valid} CloudEvents and {produced.invalid} invalid records "
        f"to {DEMO_TOPIC}"
    )

    metastore = LocalMetastore(settings)
    step(metastore.start().describe())
    stop_local_airflow(settings.airflow_home)  # a UI left running by an earlier demo
    extra_env = {**demo_environment(), "EVENTLAKE_METASTORE_URI": metastore.uri}
    if on_object_store(settings.warehouse) is not None and settings.s3_endpoint == (
        LocalS3Server(settings).endpoint
    ):
        # The DAGs reach the local S3 server through aws_default alone.
        extra_env = {**LocalS3Server(settings).airflow_environment(), **extra_env}
    airflow = LocalAirflow.create(
        settings,
        home=settings.airflow_home,
        port=settings.airflow_port,
        extra_env=extra_env,
    )
    step(f"starting Airflow (api-server, scheduler, dag-processor) in {airflow.home}")
    airflow.start()
    states: dict[str, str] = {}
    try:
        # Every DAG unpaused, maintenance too: a run triggered in the UI of `make
        # demo-ui` would otherwise stay queued with no word why.
        for dag_id in DEMO_DAGS:
            airflow.wait_for_dag(dag_id)
            airflow.unpause(dag_id)
        states["eventlake_ingest"] = _run(airflow, "eventlake_ingest", step)
        states["eventlake_republish"] = _run(airflow, "eventlake_republish", step)
        states["eventlake_quality"] = _run(airflow, "eventlake_quality", step)
    finally:
        if not keep_ui:
            step("stopping Airflow")
            airflow.stop()
    failed = {dag: state for dag, state in states.items() if state != "success"}
    if failed:
        raise DemoError(
            f"DAG runs did not succeed: {failed}; task logs are under "
            f"{airflow.home / 'logs'} (make demo-ui keeps the UI up to look at them)"
        )
    return DemoRun(url=airflow.url, states=states, metastore_uri=metastore.uri)


def _run(airflow: LocalAirflow, dag_id: str, step: Callable[[str], None]) -> str:
    run_id = airflow.trigger(dag_id)
    step(f"triggered {dag_id} ({run_id}); waiting for it")
    try:
        state = airflow.wait_for_run(dag_id, run_id)
    except LocalAirflowError as error:
        raise DemoError(f"{dag_id} did not finish: {error}") from None
    step(f"{dag_id}: {state}")
    return state
