"""The Airflow 3 plugin that puts eventlake's status into the Airflow UI.

It adds one FastAPI app to Airflow's api-server, at ``/eventlake`` (the page and
``/eventlake/status.json``, :mod:`eventlake.orchestration.status_page`), and an entry "eventlake
status" to the UI's navigation that shows the page in an iframe at
``/plugin/eventlake-status``. Registered by the entry point ``airflow.plugins`` in
pyproject.toml: every Airflow with eventlake installed loads it, the local one
(:mod:`eventlake.local.airflow`), the local cluster's and docker-compose's.

Every Airflow process loads plugins (a task's runner too, for macros), so this module
stays light: the app, with FastAPI and Airflow's auth, is built only when the
api-server asks for it.

Example:
    >>> from airflow import plugins_manager
    >>> [p.name for p in plugins_manager.get_plugins()]
    ['eventlake_status']
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from airflow.plugins_manager import AirflowPlugin

#: Where Airflow's api-server mounts the app.
URL_PREFIX: Final = "/eventlake"
#: The page's route inside Airflow's UI (``/plugin/<route>``).
UI_ROUTE: Final = "eventlake-status"


@cache
def _status_app() -> Any:
    from eventlake.orchestration.status_page import status_app

    return status_app()


class EventlakeStatusPlugin(AirflowPlugin):
    """eventlake's status page in Airflow's api-server and navigation."""

    name = "eventlake_status"
    # href without a leading slash: relative to the UI's base URL, so that the iframe
    # finds the app also behind a proxy that serves Airflow under a sub-path.
    external_views: list[Any] = [  # noqa: RUF012 (AirflowPlugin declares it so)
        {
            "name": "eventlake status",
            "href": f"{URL_PREFIX.lstrip('/')}/",
            "destination": "nav",
            "url_route": UI_ROUTE,
        }
    ]

    # A read-only property where AirflowPlugin has a list: Airflow only reads it.
    @property
    def fastapi_apps(self) -> list[dict[str, Any]]:  # type: ignore[override]
        """The app, built at the first ask (only the api-server asks)."""
        return [{"app": _status_app(), "url_prefix": URL_PREFIX, "name": "eventlake status"}]
