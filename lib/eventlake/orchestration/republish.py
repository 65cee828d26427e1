"""The republish DAG (``eventlake_republish``): its options, and one spark-submit of the
configured routes (``EVENTLAKE_REPUBLISH_ROUTES``) that a run sends.

Example:
    >>> plan_republish({}, settings)
    []
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from airflow.sdk import Param

from eventlake.core.settings import ENV_PREFIX, RepublishRoute, Settings
from eventlake.orchestration.errors import OrchestrationError
from eventlake.orchestration.options import dag_params, read_params, selection, switch
from eventlake.orchestration.submit import submit_kwargs

#: The variable the job reads the routes' options from.
ROUTES_VARIABLE: Final = f"{ENV_PREFIX}REPUBLISH_ROUTES"
#: A route name, ``source>target``, as JSON schema.
_ROUTE_NAME_PATTERN: Final = r"^[A-Za-z0-9._-]+>[A-Za-z0-9._-]+$"


@dataclass(frozen=True)
class RepublishParams:
    """The republish DAG's params, checked against the configured routes. Neither is a
    flag of the job: the routes pick the configured routes to submit.

    Example:
        >>> routes = [RepublishRoute(source="raw", target="orders")]
        >>> RepublishParams.from_params({"routes": []}, routes).selected(routes)[0].name
        'raw>orders'
    """

    #: Route names (``source>target``) to run; empty: every configured route.
    routes: tuple[str, ...] = selection(
        "Routes",
        "Routes to run, as source>target; empty: every route configured "
        "in EVENTLAKE_REPUBLISH_ROUTES.",
        items={"type": "string", "pattern": _ROUTE_NAME_PATTERN},
    )
    dry_run: bool = switch("Dry run", "Only log the spark-submit commands; republish nothing.")

    @classmethod
    def from_params(
        cls, params: Mapping[str, Any], configured: Sequence[RepublishRoute]
    ) -> RepublishParams:
        """Build from a DAG run's params; a route that is not configured is refused.

        Example:
            >>> RepublishParams.from_params({"routes": ["x>y"]}, [])
            Traceback (most recent call last):
            ...
            eventlake.orchestration.errors.OrchestrationError: routes: ['x>y'] are not ...
        """
        checked = cls(**read_params(cls, params))
        known = {route.name for route in configured}
        unknown = [name for name in checked.routes if name not in known]
        if unknown:
            raise OrchestrationError(
                f"routes: {unknown} are not configured (EVENTLAKE_REPUBLISH_ROUTES has "
                f"{sorted(known)})."
            )
        return checked

    def selected(self, configured: Sequence[RepublishRoute]) -> list[RepublishRoute]:
        """The routes this run republishes, in configuration order.

        Example:
            >>> RepublishParams().selected([RepublishRoute(source="a", target="b")])[0].name
            'a>b'
        """
        return [r for r in configured if not self.routes or r.name in self.routes]


def plan_republish(params: Mapping[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """Check the params; the run's one spark-submit (args, conf, jars, env) of every
    selected route, in one Spark application (``eventlake republish-routes``).

    A :func:`~eventlake.orchestration.submit.submit_kwargs` with a ``--route`` per route
    and the routes' options in its environment (``EVENTLAKE_REPUBLISH_ROUTES``, the
    worker's); none when no route is set up.

    Example:
        >>> plan_republish({}, settings)[0]["application_args"]
        ['--route', 'orders.raw>orders', '--route', 'orders.raw>audit']
    """
    routes = plan_routes(params, settings)
    if not routes:
        return []
    chosen = [r for r in settings.republish_routes if r.name in routes]
    submit = submit_kwargs(settings, [arg for name in routes for arg in ("--route", name)])
    submit["env_vars"][ROUTES_VARIABLE] = json.dumps(
        [route.model_dump(exclude_none=True) for route in chosen]
    )
    return [submit]


def plan_routes(params: Mapping[str, Any], settings: Settings) -> list[str]:
    """The names (``source>target``) of the routes a run of the republish DAG sends, in
    configuration order: the DAG has a task per route, showing what its spark-submit did
    with it.

    Example:
        >>> plan_routes({"routes": ["orders.raw>audit"]}, settings)
        ['orders.raw>audit']
    """
    checked = RepublishParams.from_params(params, settings.republish_routes)
    return [route.name for route in checked.selected(settings.republish_routes)]


def republish_params() -> dict[str, Param]:
    """The republish DAG's params (JSON-schema validated before a run is created).

    Example:
        >>> list(republish_params())
        ['routes', 'dry_run']
    """
    return dag_params(RepublishParams)
