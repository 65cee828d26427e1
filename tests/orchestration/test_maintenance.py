"""eventlake.orchestration.maintenance: the maintenance DAG's params and its spark-submit.
The DAG's runs: tests/dags/test_maintenance_dag.py; the job: tests/test_maintenance.py."""

from __future__ import annotations

import pytest

from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.maintenance import MaintenanceParams, maintenance_params


def test_params_map_to_job_arguments() -> None:
    params = {"retention_hours": 0, "allow_below_safety": True, "topics": ["a"], "dry_run": True}

    args = MaintenanceParams.from_params(params).application_args()

    assert args == [
        "--retention-hours",
        "0",
        "--allow-below-safety",
        "--auto-reconcile",
        "--dry-run",
        "--topic",
        "a",
    ]


def test_auto_reconcile_off_is_passed_explicitly() -> None:
    args = MaintenanceParams.from_params({"auto_reconcile": False}).application_args()
    assert args == ["--retention-hours", "168", "--no-auto-reconcile"]


@pytest.mark.parametrize(
    "params",
    [
        {"retention_hours": 167.9},
        {"retention_hours": -1, "allow_below_safety": True},
        {"retention_hours": "168"},
        {"auto_reconcile": "yes"},
        {"topics": ["bad topic!"]},
    ],
    ids=["below-safety", "negative", "not-a-number", "flag-not-boolean", "bad-topic"],
)
def test_bad_params_are_refused(params: dict[str, object]) -> None:
    with pytest.raises(OrchestrationError):
        MaintenanceParams.from_params(params)


def test_params_form_ends_with_dry_run() -> None:
    params = maintenance_params()
    assert list(params) == [
        "retention_hours",
        "allow_below_safety",
        "auto_reconcile",
        "topics",
        "dry_run",
    ]
    assert params["retention_hours"].value == 168.0
    assert params["topics"].value == []
