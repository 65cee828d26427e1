"""The quality DAG (``eventlake_quality``): its options and its one spark-submit.

Example:
    >>> plan_quality({"full": True}, settings)["application_args"]
    ['--table', 'events', '--full']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow.sdk import Param

from eventlake.core.driver_work import DriverWork
from eventlake.core.settings import Settings
from eventlake.core.topic_names import topic_name_schema
from eventlake.orchestration.options import cli_args, dag_params, option, read_params, switch
from eventlake.orchestration.submit import submit_kwargs
from eventlake.orchestration.topics import check_topic
from eventlake.warehouse.names import EVENTS


@dataclass(frozen=True)
class QualityParams:
    """The quality DAG's params, checked.

    Example:
        >>> QualityParams.from_params({"full": True}).application_args()
        ['--table', 'events', '--full']
    """

    full: bool = switch(
        "Full quality run",
        "Check the whole events table, not only the rows added since the last check.",
        flag="--full",
    )
    #: Check only this topic's events; None: every topic.
    topic: str | None = field(
        default=None,
        metadata=option(
            "Topic",
            "Check only this topic's events; empty: every topic.",
            flag="--topic",
            **topic_name_schema(nullable=True),
        ),
    )
    dry_run: bool = switch("Dry run", "Only log the spark-submit command; check nothing.")

    def __post_init__(self) -> None:
        if self.topic is not None:
            check_topic(self.topic)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> QualityParams:
        """Build from a DAG run's params (missing keys take the defaults; an empty topic
        means every topic).

        Example:
            >>> QualityParams.from_params({"topic": "orders"}).topic
            'orders'
        """
        return cls(**read_params(cls, {**params, "topic": params.get("topic") or None}))

    def application_args(self) -> list[str]:
        """Arguments of ``jobs/check_quality.py`` (= ``eventlake check``).

        Example:
            >>> QualityParams(topic="orders").application_args()
            ['--table', 'events', '--topic', 'orders']
        """
        return ["--table", EVENTS, *cli_args(self)]


def plan_quality(params: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """Check the params; the spark-submit arguments, conf, jars and environment.

    The :func:`~eventlake.orchestration.submit.submit_kwargs` of the quality job, from
    a DAG run's params.

    Example:
        >>> plan_quality({"full": True}, settings)["application_args"]
        ['--table', 'events', '--full']
    """
    return submit_kwargs(
        settings, QualityParams.from_params(params).application_args(), work=DriverWork.CHECKING
    )


def quality_params() -> dict[str, Param]:
    """The quality DAG's params (JSON-schema validated before a run is created).

    Example:
        >>> list(quality_params())
        ['full', 'topic', 'dry_run']
    """
    return dag_params(QualityParams)
