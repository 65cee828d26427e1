"""A republish request is checked when it is made: what could harm the events (CloudEvents
headers, the trail) or could not run is refused, with the option to change."""

from __future__ import annotations

from typing import Any

import pytest

from eventlake.republish.request import DEFAULT_TRAIL_HEADER, RepublishError, RepublishRequest


@pytest.mark.parametrize("name", ["ce_id", "content-type", "CE_type", "Content-Type"])
def test_cloudevents_headers_cannot_be_dropped(name: str) -> None:
    with pytest.raises(RepublishError, match="carry the event"):
        RepublishRequest(source="a", target="b", drop_headers=(name,))


@pytest.mark.parametrize(
    "option",
    [
        {"insert_headers": (("ce_id", "x"),)},
        {"attribute_headers": (("subject", "content-type"),)},
    ],
)
def test_cloudevents_headers_cannot_be_written_by_transforms(option: dict[str, Any]) -> None:
    with pytest.raises(RepublishError, match="carry the event"):
        RepublishRequest(source="a", target="b", **option)


def test_trail_header_cannot_be_dropped() -> None:
    with pytest.raises(RepublishError, match="append-only"):
        RepublishRequest(source="a", target="b", drop_headers=(DEFAULT_TRAIL_HEADER,))


def test_source_and_target_must_differ() -> None:
    with pytest.raises(RepublishError, match="same topic"):
        RepublishRequest(source="a", target="a")


def test_unknown_key_mapper_is_refused_with_the_accepted_forms() -> None:
    with pytest.raises(RepublishError, match="attribute:<name>"):
        RepublishRequest(source="a", target="b", key_mapper="subject")


def test_header_to_attribute_needs_the_structured_conversion() -> None:
    with pytest.raises(RepublishError, match="--to-mode structured"):
        RepublishRequest(source="a", target="b", header_attributes=(("origin", "origin"),))


def test_cli_refuses_dropping_a_cloudevents_header_with_exit_code_2() -> None:
    from typer.testing import CliRunner

    from eventlake.cli import app

    result = CliRunner().invoke(
        app, ["republish", "--source", "a", "--target", "b", "--drop-header", "ce_id"]
    )
    assert result.exit_code == 2
    assert "carry the event" in result.output


def test_ending_offsets_spark_refuses_are_refused_before_the_run() -> None:
    with pytest.raises(RepublishError, match="--ending-offsets 'earliest' is not 'latest'"):
        RepublishRequest(source="a", target="b", ending_offsets="earliest")
