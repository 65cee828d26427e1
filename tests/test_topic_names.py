"""eventlake.topic_names: which names Kafka accepts for a topic."""

from __future__ import annotations

import pytest

from eventlake.topic_names import InvalidTopicNameError, check_topic_name, is_topic_name


@pytest.mark.parametrize("name", ["demo.orders", "a", "A-b_c.9", "x" * 249, "..."])
def test_names_kafka_accepts_are_topic_names(name: str) -> None:
    assert is_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "bad topic", "a/b", "a\n", "ü"])
def test_names_kafka_refuses_are_not_topic_names(name: str) -> None:
    assert not is_topic_name(name)


def test_a_bad_topic_name_is_refused_with_what_is_allowed() -> None:
    with pytest.raises(InvalidTopicNameError, match=r"--source 'a/b': use 1-249 characters"):
        check_topic_name("a/b", "--source")
