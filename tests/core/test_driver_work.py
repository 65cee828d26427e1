"""What a job's driver does: the one rule that tells an ingest's."""

from __future__ import annotations

from eventlake.core.driver_work import DriverWork, ingest_driver_work


def test_only_an_ingest_that_keeps_nothing_is_a_landing() -> None:
    assert ingest_driver_work(state=False, dedup=False) is DriverWork.LANDING
    assert ingest_driver_work(state=True, dedup=False) is DriverWork.GENERAL
    assert ingest_driver_work(state=False, dedup=True) is DriverWork.GENERAL
