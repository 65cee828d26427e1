"""The sample stream of the demo and the local commands (lib/eventlake/local/samples.py)."""

from __future__ import annotations

import json

from eventlake.local.samples import SampleRecord, sample_records


def _event_ids(records: list[SampleRecord]) -> set[str]:
    ids = set()
    for record in records:
        headers = dict(record.headers)
        if "ce_id" in headers:
            ids.add(headers["ce_id"].decode())
        elif record.valid and record.value is not None:
            ids.add(json.loads(record.value)["id"])
    return ids


def test_the_same_seed_gives_the_same_records() -> None:
    assert list(sample_records(50, seed=3)) == list(sample_records(50, seed=3))


def test_no_seed_gives_new_event_ids_each_time() -> None:
    first, second = (_event_ids(list(sample_records(50, seed=None))) for _ in range(2))

    assert len(first) > 40
    assert first.isdisjoint(second)


def test_the_samples_command_refuses_a_name_kafka_refuses_in_one_line() -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    result = CliRunner().invoke(app, ["samples", "--topic", "bad topic", "--count", "3"])

    assert result.exit_code == 2, result.output
    assert "Invalid --topic 'bad topic': use 1-249 characters" in result.output
    assert "Traceback" not in result.output
