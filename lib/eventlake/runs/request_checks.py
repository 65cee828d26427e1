"""What every job's request is checked for: its topics' and checkpoint's names, its
trigger and its offset range.

Example:
    >>> request_problem([("--topic", "bad!topic")], checkpoint_name=None,
    ...                 trigger="available-now", offsets=("earliest", None))
    "Invalid --topic 'bad!topic': use 1-249 characters ..."
"""

from __future__ import annotations

from collections.abc import Iterable

from eventlake.core.offset_specs import run_offsets_problem
from eventlake.core.topic_names import InvalidTopicNameError, check_topic_name
from eventlake.ledger.checkpoint import InvalidCheckpointNameError, check_checkpoint_name
from eventlake.runs.triggers import trigger_problem


def request_problem(
    topics: Iterable[tuple[str, str]],
    *,
    checkpoint_name: str | None,
    trigger: str,
    offsets: tuple[str, str | None],
) -> str | None:
    """What is wrong with the (option, topic) names, the checkpoint name, the trigger or
    the (starting, ending) offsets, the first found; None when nothing is.

    Example:
        >>> request_problem([("--source", "orders")], checkpoint_name="../x",
        ...                 trigger="available-now", offsets=("earliest", None))
        "--checkpoint-name: Checkpoint name '../x' ..."
    """
    for option, topic in topics:
        try:
            check_topic_name(topic, option)
        except InvalidTopicNameError as error:
            return str(error)
    if checkpoint_name is not None:
        try:
            check_checkpoint_name(checkpoint_name)
        except InvalidCheckpointNameError as error:
            return f"--checkpoint-name: {error}"
    return trigger_problem(trigger) or run_offsets_problem(*offsets)
