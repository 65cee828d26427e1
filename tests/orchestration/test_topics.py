"""eventlake.orchestration.topics: offsets per topic."""

from __future__ import annotations

import pytest

from eventlake.orchestration import OrchestrationError
from eventlake.orchestration.topics import parse_offsets_json, topic_offsets


def test_topic_offsets_keep_keywords_as_they_are() -> None:
    assert topic_offsets("latest", "a", default="earliest") == "latest"


def test_topic_offsets_cut_json_down_to_the_topic_or_give_the_default() -> None:
    spec = '{"a": {"0": 5}, "b": {"1": 9}}'
    assert topic_offsets(spec, "b", default="earliest") == '{"b": {"1": 9}}'
    assert topic_offsets(spec, "c", default="earliest") == "earliest"


@pytest.mark.parametrize(
    ("spec", "match"),
    [("{", "not valid JSON"), ('{"a": {"x": 1}}', "partition numbers"), ("[1]", "must look")],
)
def test_malformed_offsets_json_is_refused(spec: str, match: str) -> None:
    with pytest.raises(OrchestrationError, match=match):
        parse_offsets_json(spec, "ending_offsets")
