"""The Delta tables as Airflow assets: what the ingest DAG updates, what the quality DAG
waits for.

Example:
    >>> [a.name for a in ingest_outlets(load_settings(state_topics=["c"]))]
    ['eventlake.events', 'eventlake.rejects', 'eventlake.state.c']
"""

from __future__ import annotations

from typing import Final

from airflow.sdk import Asset

from eventlake.core.settings import Settings
from eventlake.warehouse.names import EVENTS, REJECTS, state_path

EVENTS_ASSET_NAME: Final = "eventlake.events"
REJECTS_ASSET_NAME: Final = "eventlake.rejects"


def _table_asset(settings: Settings, table: str, name: str) -> Asset:
    uri = settings.table_path(table).as_uri()
    return Asset(name=name, uri=uri)


def events_asset(settings: Settings) -> Asset:
    """The ``events`` Delta table as an Airflow asset (``file://`` URI of its folder).

    Example:
        >>> events_asset(load_settings(warehouse="/warehouse")).uri
        'file:///warehouse/events'
    """
    return _table_asset(settings, EVENTS, EVENTS_ASSET_NAME)


def rejects_asset(settings: Settings) -> Asset:
    """The ``rejects`` Delta table as an Airflow asset.

    Example:
        >>> rejects_asset(load_settings(warehouse="/warehouse")).name
        'eventlake.rejects'
    """
    return _table_asset(settings, REJECTS, REJECTS_ASSET_NAME)


def state_asset(settings: Settings, topic: str) -> Asset:
    """The ``state/<topic>`` Delta table as an Airflow asset.

    Example:
        >>> state_asset(load_settings(warehouse="/warehouse"), "customers").uri
        'file:///warehouse/state/customers'
    """
    uri = state_path(settings, topic).as_uri()
    return Asset(name=f"eventlake.state.{topic}", uri=uri)


def state_assets(settings: Settings) -> list[Asset]:
    """The state table of each state topic (``EVENTLAKE_STATE_TOPICS``): what a rebuild
    of the state tables updates.

    Example:
        >>> [a.name for a in state_assets(load_settings(state_topics=["c"]))]
        ['eventlake.state.c']
    """
    return [state_asset(settings, topic) for topic in settings.state_topics]


def ingest_outlets(settings: Settings) -> list[Asset]:
    """What an ingest run updates: events, rejects and the state table of each state topic.

    Example:
        >>> [a.name for a in ingest_outlets(load_settings(state_topics=["c"]))]
        ['eventlake.events', 'eventlake.rejects', 'eventlake.state.c']
    """
    return [events_asset(settings), rejects_asset(settings), *state_assets(settings)]
