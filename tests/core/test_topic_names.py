"""eventlake.core.topic_names: which names Kafka accepts for a topic."""

from __future__ import annotations

import jsonschema
import pytest

from eventlake.core.topic_names import (
    InvalidTopicNameError,
    check_topic_name,
    is_topic_name,
    topic_name_schema,
)


@pytest.mark.parametrize("name", ["demo.orders", "a", "A-b_c.9", "x" * 249, "..."])
def test_names_kafka_accepts_are_topic_names(name: str) -> None:
    assert is_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "bad topic", "a/b", "a\n", "ü"])
def test_names_kafka_refuses_are_not_topic_names(name: str) -> None:
    assert not is_topic_name(name)


def test_a_bad_topic_name_is_refused_with_what_is_allowed() -> None:
    with pytest.raises(InvalidTopicNameError, match=r"--source 'a/b': use 1-249 characters"):
        check_topic_name("a/b", "--source")


NAMES = ["demo.orders", "x" * 249, "...", "", ".", "..", "x" * 250, "bad topic", "a/b"]


@pytest.mark.parametrize("name", NAMES)
def test_the_json_schema_of_a_topic_name_refuses_what_kafka_refuses(name: str) -> None:
    """The DAGs' forms check names with this schema: it must agree with is_topic_name."""
    valid = jsonschema.Draft7Validator(topic_name_schema()).is_valid(name)
    assert valid == is_topic_name(name)


def test_the_nullable_schema_also_takes_no_topic() -> None:
    validator = jsonschema.Draft7Validator(topic_name_schema(nullable=True))
    assert validator.is_valid(None)
    assert not validator.is_valid("..")
