"""eventlake.runs.outcomes: a run's outcome per topic, through a file."""

from __future__ import annotations

from pathlib import Path

from eventlake.runs.outcomes import LANDED, REFUSED, TopicOutcome, read_outcomes, write_outcomes


def test_outcomes_written_are_read_back_and_no_file_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "outcomes.json"
    assert read_outcomes(path) == {}
    outcomes = {"a": TopicOutcome(LANDED, "ingest[a]: events=1"), "b": TopicOutcome(REFUSED, "x")}
    write_outcomes(path, outcomes)
    assert read_outcomes(path) == outcomes
    assert [p.name for p in tmp_path.iterdir()] == ["outcomes.json"]  # no partial file left
