"""eventlake.core.locations: one type for a local path and an object-store URI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eventlake.core.locations import Location
from eventlake.core.settings import load_settings


def test_an_object_store_uri_keeps_its_double_slash_through_joins() -> None:
    events = Location.of("s3a://lake/prod/") / "events" / "_delta_log"

    assert str(events) == "s3a://lake/prod/events/_delta_log"
    assert (events.name, str(events.parent.parent)) == ("_delta_log", "s3a://lake/prod")
    assert str(events.with_name("x")) == "s3a://lake/prod/events/x"
    assert not events.is_local and events.scheme == "s3a"


def test_a_local_location_is_the_path_it_names() -> None:
    table = Location.of("file:///srv/wh") / "state" / "orders"

    assert table.is_local
    assert str(table) == "/srv/wh/state/orders"
    assert os.fspath(table) == "/srv/wh/state/orders"
    assert table == Path("/srv/wh/state/orders")
    assert hash(table) == hash(Path("/srv/wh/state/orders"))
    assert table.as_uri() == "file:///srv/wh/state/orders"


def test_an_object_store_location_is_not_a_local_path() -> None:
    with pytest.raises(TypeError, match="on 's3a' storage, not a local path"):
        os.fspath(Location.of("s3a://lake/prod"))


def test_the_warehouse_setting_takes_a_uri_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_WAREHOUSE", "s3a://lake/prod")
    settings = load_settings()

    assert str(settings.table_path("events")) == "s3a://lake/prod/events"
    assert settings.as_environment()["EVENTLAKE_WAREHOUSE"] == "s3a://lake/prod"


def test_a_relative_local_warehouse_is_made_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLAKE_WAREHOUSE", "var/wh")

    assert load_settings().warehouse == Path.cwd() / "var" / "wh"
