"""eventlake.orchestration.assets: the Delta tables as Airflow assets."""

from __future__ import annotations

from pathlib import Path

from eventlake.core.settings import Settings
from eventlake.orchestration.assets import (
    events_asset,
    ingest_outlets,
    rejects_asset,
    state_asset,
    state_assets,
)


def test_tables_are_file_uris_of_their_folders(settings: Settings, tmp_path: Path) -> None:
    own = settings.model_copy(update={"warehouse": tmp_path})
    assert events_asset(own).uri == (tmp_path / "events").as_uri()
    assert rejects_asset(own).name == "eventlake.rejects"
    assert state_asset(own, "c").uri == (tmp_path / "state" / "c").as_uri()


def test_ingest_updates_events_rejects_and_each_state_table(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["c", "d"]})
    assert [asset.name for asset in ingest_outlets(with_state)] == [
        "eventlake.events",
        "eventlake.rejects",
        "eventlake.state.c",
        "eventlake.state.d",
    ]


def test_state_rebuilds_update_the_table_of_each_state_topic(settings: Settings) -> None:
    with_state = settings.model_copy(update={"state_topics": ["c", "d"]})
    assert [asset.uri for asset in state_assets(with_state)] == [
        state_asset(with_state, "c").uri,
        state_asset(with_state, "d").uri,
    ]
