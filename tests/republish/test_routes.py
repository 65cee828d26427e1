"""eventlake.republish.routes: the configured routes chosen by name and each one's outcome
(the run itself, in one application, is tests/dags/test_republish_dag.py's)."""

from __future__ import annotations

import pytest

from eventlake.core.settings import RepublishRoute
from eventlake.republish.routes import (
    RoutesRun,
    UnknownRouteError,
    route_request,
    selected_routes,
)
from eventlake.republish.run import RepublishSummary
from eventlake.runs.outcomes import LANDED, REFUSED

ROUTES = [
    RepublishRoute(source="raw", target="orders", cleanup_policy="compact", partitions=3),
    RepublishRoute(source="raw", target="audit", key_mapper="keep", to_mode="structured"),
]


def test_no_name_selects_every_route_in_configuration_order() -> None:
    assert selected_routes(ROUTES, []) == ROUTES


def test_names_select_their_routes_in_configuration_order() -> None:
    assert selected_routes(ROUTES, ["raw>audit", "raw>orders"]) == ROUTES


def test_a_name_not_configured_is_refused_naming_those_that_are() -> None:
    with pytest.raises(UnknownRouteError, match=r"'raw>nowhere' is not configured.*raw>audit"):
        selected_routes(ROUTES, ["raw>nowhere"])


def test_a_routes_request_has_its_options() -> None:
    request = route_request(ROUTES[0])

    assert (request.source, request.target, request.key_mapper) == ("raw", "orders", "partitionkey")
    assert (request.cleanup_policy, request.partitions) == ("compact", 3)


def test_each_route_has_its_outcome_and_one_not_reached_has_none() -> None:
    run = RoutesRun(
        summaries={"raw>orders": RepublishSummary(source="raw", target="orders", accepted=4)},
        refused={"typo>x": "Topic 'typo' does not exist"},
        idle=["raw>audit"],
    )

    outcomes = run.outcomes(["raw>orders", "typo>x", "raw>audit", "raw>later"])

    assert {name: o.outcome for name, o in outcomes.items()} == {
        "raw>orders": LANDED,
        "typo>x": REFUSED,
        "raw>audit": LANDED,
    }
    assert outcomes["typo>x"].line == "republish typo>x: refused: Topic 'typo' does not exist"
    assert outcomes["raw>audit"].line == "republish raw>audit: nothing new"


def test_a_stop_signal_ends_the_run_after_the_route_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import eventlake.republish.routes as routes_module

    ran: list[str] = []

    def stopped_at_once(_spark: object, _settings: object, request: object) -> RepublishSummary:
        ran.append(f"{request.source}>{request.target}")  # type: ignore[attr-defined]
        return RepublishSummary(source="raw", target="orders", stopped_by="SIGTERM")

    monkeypatch.setattr(routes_module, "run_republish", stopped_at_once)

    run = routes_module.run_routes(None, None, ROUTES)  # type: ignore[arg-type]

    assert ran == ["raw>orders"]
    assert run.stopped_by == "SIGTERM"
    assert list(run.outcomes([r.name for r in ROUTES])) == ["raw>orders"]
