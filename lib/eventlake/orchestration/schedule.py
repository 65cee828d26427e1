"""When the Kafka DAGs run: on their cron, on the arrival of records on their topics, or
both, as the settings choose (``EVENTLAKE_INGEST_SCHEDULE``,
``EVENTLAKE_REPUBLISH_SCHEDULE``: ``schedule``, ``events`` or ``both``).

With events, each topic is an Asset (``kafka://<first bootstrap server>/<topic>``, the
Kafka provider's and OpenLineage's naming) watched by a
:class:`~eventlake.orchestration.arrivals.TopicArrivalTrigger` in the triggerer, and
the DAG is scheduled on any of them. Airflow queues at most one run of a DAG per asset
event however many arrive (its asset queue holds one entry per asset and DAG), and the
DAGs run one at a time (``max_active_runs=1``): a burst is one run, a burst during a
run one more run after it. See docs/airflow-events.md for why no record is missed.

Example:
    >>> dag_schedule("schedule", "*/10 * * * *", ["orders"], load_settings())
    '*/10 * * * *'
    >>> [a.uri for a in dag_schedule("events", "*/10 * * * *", ["orders"], settings).objects]
    ['kafka://127.0.0.1:9092/orders']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from airflow.sdk import Asset, AssetAny, AssetOrTimeSchedule, AssetWatcher, CronTriggerTimetable

from eventlake.core.settings import ScheduleMode, Settings
from eventlake.orchestration.arrivals import TopicArrivalTrigger
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.kafka_connection import KAFKA_CONN_ID

#: The prefix of a topic asset's name (``kafka.<topic>``).
TOPIC_ASSET_PREFIX: Final = "kafka."
#: What a DAG's ``schedule=`` takes from here.
Schedule = str | AssetAny | AssetOrTimeSchedule


def topic_asset(settings: Settings, topic: str, *, poll_seconds: float | None = None) -> Asset:
    """The topic as an Airflow asset, watched for arrivals in the triggerer through the
    ``kafka_default`` connection. Its URI names the first of the settings' bootstrap
    servers; the watcher's name and trigger depend only on the topic, so two DAGs that
    watch a topic share one trigger.

    Example:
        >>> asset = topic_asset(load_settings(bootstrap_servers="k1:9092,k2:9092"), "orders")
        >>> asset.name, asset.uri, asset.watchers[0].name
        ('kafka.orders', 'kafka://k1:9092/orders', 'kafka.orders.arrivals')
    """
    server = settings.bootstrap_servers.split(",")[0].strip()
    poll = settings.arrival_poll_seconds if poll_seconds is None else poll_seconds
    trigger = TopicArrivalTrigger(topic=topic, kafka_config_id=KAFKA_CONN_ID, poll_interval=poll)
    name = f"{TOPIC_ASSET_PREFIX}{topic}"
    return Asset(
        name=name,
        uri=f"kafka://{server}/{topic}",
        watchers=[AssetWatcher(name=f"{name}.arrivals", trigger=trigger)],
    )


def topic_of(asset_name: str) -> str | None:
    """The topic a topic asset's name names (None for another asset).

    Example:
        >>> topic_of("kafka.orders"), topic_of("eventlake.events")
        ('orders', None)
    """
    prefix = TOPIC_ASSET_PREFIX
    return asset_name[len(prefix) :] if asset_name.startswith(prefix) else None


def dag_schedule(
    mode: ScheduleMode, cron: str, topics: Sequence[str], settings: Settings
) -> Schedule:
    """A DAG's ``schedule=``: ``cron`` (``schedule``), the arrival of records on any of
    ``topics`` (``events``), or whichever comes first (``both``). Raises when events
    are asked for without a topic to watch.

    Example:
        >>> dag_schedule("both", "*/10 * * * *", ["a"], load_settings()).timetable.expression
        '*/10 * * * *'
    """
    if mode == "schedule":
        return cron
    if not topics:
        raise OrchestrationError(f"A {mode!r} schedule needs at least one topic to watch.")
    arrivals = AssetAny(*(topic_asset(settings, topic) for topic in dict.fromkeys(topics)))
    if mode == "events":
        return arrivals
    return AssetOrTimeSchedule(
        timetable=CronTriggerTimetable(cron, timezone="UTC"), assets=arrivals
    )
