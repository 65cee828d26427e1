"""Topic names in the DAGs' forms, and the part of an offsets spec that concerns one topic.

Example:
    >>> topic_offsets('{"a": {"0": 5}, "b": {"1": 9}}', "a", default="earliest")
    '{"a": {"0": 5}}'
"""

from __future__ import annotations

import json

from eventlake.core.offset_specs import offsets_json_problem
from eventlake.core.topic_names import InvalidTopicNameError, check_topic_name
from eventlake.orchestration.errors import OrchestrationError


def check_topic(name: str) -> str:
    """Return ``name`` when it is a legal Kafka topic name, else raise.

    Example:
        >>> check_topic("demo.orders")
        'demo.orders'
        >>> check_topic("bad topic!")
        Traceback (most recent call last):
        ...
        eventlake.orchestration.errors.OrchestrationError: Invalid Kafka topic name ...
    """
    try:
        return check_topic_name(name)
    except InvalidTopicNameError as error:
        raise OrchestrationError(str(error)) from None


def parse_offsets_json(spec: str, label: str) -> dict[str, dict[str, int]]:
    """Per-partition offsets JSON, checked: ``{"topic": {"0": 42}}``; ``label`` names
    the param in the error.

    Example:
        >>> parse_offsets_json('{"a": {"0": 5}}', "ending_offsets")
        {'a': {'0': 5}}
    """
    try:
        parsed: dict[str, dict[str, int]] = json.loads(spec)
    except json.JSONDecodeError as error:
        raise OrchestrationError(f"{label} is not valid JSON: {error}") from None
    problem = offsets_json_problem(spec)
    if problem is not None:
        raise OrchestrationError(
            f'{label} must look like {{"topic": {{"0": 42, "1": 7}}}} '
            f"(partition numbers as strings, offsets as integers): {problem}."
        )
    return parsed


def topics_offsets(spec: str, topics: tuple[str, ...], *, default: str) -> str:
    """The part of an offsets spec that concerns the job of ``topics``: per-partition JSON
    cut down to them (a topic it does not name: the job's own default), ``default`` when
    it names none of them.

    Example:
        >>> topics_offsets('{"a": {"0": 5}, "c": {"0": 1}}', ("a", "b"), default="earliest")
        '{"a": {"0": 5}}'
    """
    if not spec.lstrip().startswith("{"):
        return spec
    parsed = parse_offsets_json(spec, "offsets")
    named = {topic: parsed[topic] for topic in topics if topic in parsed}
    return json.dumps(named) if named else default


def topic_offsets(spec: str, topic: str, *, default: str) -> str:
    """The part of an offsets spec that concerns one topic's job.

    ``earliest``/``latest`` apply to every topic as they are. Per-partition JSON is cut
    down to ``topic`` (Spark refuses offsets of topics a job does not read); a topic the
    JSON does not name gets ``default``.

    Example:
        >>> topic_offsets('{"a": {"0": 5}, "b": {"0": 9}}', "a", default="earliest")
        '{"a": {"0": 5}}'
        >>> topic_offsets('{"a": {"0": 5}}', "b", default="latest")
        'latest'
        >>> topic_offsets("latest", "b", default="earliest")
        'latest'
    """
    if not spec.lstrip().startswith("{"):
        return spec
    parsed = parse_offsets_json(spec, "offsets")
    return json.dumps({topic: parsed[topic]}) if topic in parsed else default
