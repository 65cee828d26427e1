"""The configured routes (``EVENTLAKE_REPUBLISH_ROUTES``) republished in one Spark
application, one after another: what the republish DAG's scheduled run submits, so
that its routes pay one engine start between them rather than one each.

Each route keeps what a run of its own has: its checkpoint, its marks in the ledger,
its summary line and lineage run. A route refused (its source topic missing, its
options refused) is reported as that route's with its sentence, and the others run.

Example:
    >>> run = run_routes(spark, settings, selected_routes(settings.republish_routes, []))
    >>> run.lines()
    ['republish orders.raw -> orders: read=10 republished=10 rejected=0 batches=1 ...']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from eventlake.core.errors import EventlakeError, Refused
from eventlake.core.settings import RepublishRoute, Settings
from eventlake.republish.request import RepublishRequest
from eventlake.republish.run import RepublishSummary, run_republish
from eventlake.runs.outcomes import LANDED, REFUSED, TopicOutcome


class UnknownRouteError(Refused):
    """A route was asked for by a name the configuration does not have."""


def route_request(route: RepublishRoute) -> RepublishRequest:
    """The request of a configured route: its options, the rest as ``eventlake
    republish`` has them by default (available-now, from where the route stands).

    Example:
        >>> route_request(RepublishRoute(source="raw", target="orders")).key_mapper
        'partitionkey'
    """
    return RepublishRequest(
        source=route.source,
        target=route.target,
        key_mapper=route.key_mapper,
        on_missing=route.on_missing,
        to_mode=route.to_mode,
        partitions=route.partitions,
        cleanup_policy=route.cleanup_policy,
    )


def selected_routes(
    configured: Sequence[RepublishRoute], names: Sequence[str]
) -> list[RepublishRoute]:
    """The routes named ``names`` (``source>target``), in configuration order; every
    configured route when none is named. Raises :class:`UnknownRouteError` for a name
    that is not configured.

    Example:
        >>> selected_routes([RepublishRoute(source="a", target="b")], ["a>c"])
        Traceback (most recent call last):
        ...
        eventlake.republish.routes.UnknownRouteError: route 'a>c' is not configured ...
    """
    known = [route.name for route in configured]
    for name in names:
        if name not in known:
            raise UnknownRouteError(
                f"route {name!r} is not configured: EVENTLAKE_REPUBLISH_ROUTES has "
                f"{known or 'none'}. Name a configured route as source>target."
            )
    return [route for route in configured if not names or route.name in names]


@dataclass
class RoutesRun:
    """What a run of several routes did: each route's summary, or why it was refused."""

    summaries: dict[str, RepublishSummary] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    #: Routes with nothing to send, found before Spark started: no run of theirs.
    idle: list[str] = field(default_factory=list)

    @property
    def stopped_by(self) -> str | None:
        """The signal that stopped the run, if one did (the routes after it did not run)."""
        return next((s.stopped_by for s in self.summaries.values() if s.stopped_by), None)

    def lines(self) -> list[str]:
        """A line per route, in the order they ran: its summary, or why it was refused."""
        lines = [f"republish {name}: nothing new" for name in self.idle]
        lines += [summary.line() for summary in self.summaries.values()]
        return lines + [f"republish {name}: refused: {why}" for name, why in self.refused.items()]

    def outcomes(self, names: Sequence[str]) -> dict[str, TopicOutcome]:
        """Each of ``names``' outcome, for the DAG's task per route (a route the run did
        not reach, stopped first, has none)."""
        found = {name: TopicOutcome(LANDED, f"republish {name}: nothing new") for name in self.idle}
        found |= {name: TopicOutcome(LANDED, s.line()) for name, s in self.summaries.items()}
        found |= {
            name: TopicOutcome(REFUSED, f"republish {name}: refused: {why}")
            for name, why in self.refused.items()
        }
        return {name: found[name] for name in names if name in found}


def run_routes(
    spark: SparkSession, settings: Settings, routes: Sequence[RepublishRoute]
) -> RoutesRun:
    """Republish ``routes`` one after another in ``spark``'s application. A route whose
    run is refused (an :class:`~eventlake.core.errors.EventlakeError`: the sentence says
    why) is recorded as such and the next runs; a stop signal ends the run after the
    route it stopped.

    Example:
        >>> run_routes(spark, settings, settings.republish_routes).refused
        {'typo>orders': "Topic 'typo' does not exist ..."}
    """
    run = RoutesRun()
    for route in routes:
        try:
            summary = run_republish(spark, settings, route_request(route))
        except EventlakeError as error:
            # Said once, in the run's lines (RoutesRun.lines), as each summary is.
            run.refused[route.name] = str(error)
            continue
        run.summaries[route.name] = summary
        if summary.stopped_by:
            break
    return run
