"""eventlake.orchestration.republish: the republish DAG's routes and their spark-submits."""

from __future__ import annotations

import json

import pytest

from eventlake.core.settings import RepublishRoute, Settings
from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.republish import (
    RepublishParams,
    plan_republish,
    route_application_args,
)

ROUTES = [
    RepublishRoute(source="raw", target="orders", cleanup_policy="compact"),
    RepublishRoute(source="raw", target="audit", key_mapper="keep", to_mode="structured"),
]


def test_route_maps_to_republish_arguments() -> None:
    assert route_application_args(ROUTES[0]) == [
        "--source", "raw", "--target", "orders", "--key-mapper", "partitionkey",
        "--on-missing", "keep-key", "--to-mode", "keep", "--cleanup-policy", "compact",
    ]  # fmt: skip


def test_republish_plan_has_one_submit_per_configured_route(settings: Settings) -> None:
    with_routes = settings.model_copy(update={"republish_routes": ROUTES})
    plan = plan_republish({}, with_routes)
    assert [submit["application_args"][3] for submit in plan] == ["orders", "audit"]


def test_republish_routes_param_selects_routes(settings: Settings) -> None:
    with_routes = settings.model_copy(update={"republish_routes": ROUTES})
    plan = plan_republish({"routes": ["raw>audit"]}, with_routes)
    assert [submit["application_args"][3] for submit in plan] == ["audit"]


def test_unconfigured_route_is_refused() -> None:
    with pytest.raises(OrchestrationError, match="not configured"):
        RepublishParams.from_params({"routes": ["raw>nowhere"]}, ROUTES)


def test_routes_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from eventlake.core.settings import load_settings

    monkeypatch.setenv(
        "EVENTLAKE_REPUBLISH_ROUTES", json.dumps([{"source": "raw", "target": "orders"}])
    )
    assert [route.name for route in load_settings().republish_routes] == ["raw>orders"]
