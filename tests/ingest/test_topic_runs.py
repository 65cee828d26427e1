"""eventlake.ingest.topic_runs: a run's lineage per topic (the runs themselves are in
tests/runs/test_lineage.py)."""

from __future__ import annotations

import pytest

from eventlake.core.settings import Settings
from eventlake.ingest.request import IngestRequest, IngestSummary
from eventlake.ingest.topic_runs import TopicLineage
from eventlake.runs.lineage import LineageRun


def test_a_run_without_lineage_records_nothing_and_lists_no_typed_table(
    warehouse_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import eventlake.ingest.topic_runs as topic_runs

    def listed(_settings: Settings) -> dict[str, object]:
        raise AssertionError("the typed tables were listed for lineage that is off")

    monkeypatch.setattr(topic_runs, "typed_tables", listed)
    settings = warehouse_settings.model_copy(update={"typed_tables": True})
    off = LineageRun("ingest.a", inputs=[], outputs=[], enabled=False)

    TopicLineage(settings, IngestRequest(topics=("a",)), [(("a",), off)]).record(IngestSummary())

    assert off.row_counts == {} and off.outputs == []
