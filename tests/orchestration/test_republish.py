"""eventlake.orchestration.republish: the republish DAG's routes and their spark-submits."""

from __future__ import annotations

import json

import pytest

from eventlake.core.settings import RepublishRoute, Settings
from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.republish import (
    ROUTES_VARIABLE,
    RepublishParams,
    plan_republish,
    plan_routes,
)

ROUTES = [
    RepublishRoute(source="raw", target="orders", cleanup_policy="compact"),
    RepublishRoute(source="raw", target="audit", key_mapper="keep", to_mode="structured"),
]


def test_a_republish_run_is_one_submit_of_every_configured_route(settings: Settings) -> None:
    with_routes = settings.model_copy(update={"republish_routes": ROUTES})

    (submit,) = plan_republish({}, with_routes)

    assert submit["application_args"] == ["--route", "raw>orders", "--route", "raw>audit"]


def test_the_submit_carries_the_routes_options_the_job_reads_by_name(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventlake.core.settings import load_settings

    with_routes = settings.model_copy(update={"republish_routes": ROUTES})
    (submit,) = plan_republish({"routes": ["raw>audit"]}, with_routes)

    monkeypatch.setenv(ROUTES_VARIABLE, submit["env_vars"][ROUTES_VARIABLE])
    assert load_settings().republish_routes == [ROUTES[1]]


def test_republish_routes_param_selects_routes(settings: Settings) -> None:
    with_routes = settings.model_copy(update={"republish_routes": ROUTES})
    assert plan_routes({"routes": ["raw>audit"]}, with_routes) == ["raw>audit"]
    assert plan_republish({"routes": ["raw>audit"]}, with_routes)[0]["application_args"] == [
        "--route",
        "raw>audit",
    ]


def test_no_route_configured_plans_no_submit(settings: Settings) -> None:
    assert plan_republish({}, settings.model_copy(update={"republish_routes": []})) == []


def test_unconfigured_route_is_refused() -> None:
    with pytest.raises(OrchestrationError, match="not configured"):
        RepublishParams.from_params({"routes": ["raw>nowhere"]}, ROUTES)


def test_routes_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from eventlake.core.settings import load_settings

    monkeypatch.setenv(
        "EVENTLAKE_REPUBLISH_ROUTES", json.dumps([{"source": "raw", "target": "orders"}])
    )
    assert [route.name for route in load_settings().republish_routes] == ["raw>orders"]
