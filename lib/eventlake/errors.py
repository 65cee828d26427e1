"""The kind of error every command treats alike: :class:`TryAgainLater`."""

from __future__ import annotations


class TryAgainLater(Exception):
    """A refusal that the same command, run again later, may get past: Kafka does not
    answer, another process holds the topic's lease or the stream's checkpoint, a commit
    lost to other writers every time. Commands exit 75 (``EX_TEMPFAIL`` of sysexits.h)
    for it and the DAGs retry it; other refusals (bad arguments, a topic Kafka does not
    have) exit 2 and are not retried.

    Example:
        >>> class KafkaConnectionError(TryAgainLater, RuntimeError): ...
    """
