"""eventlake's errors: one base, and the two kinds every command and DAG treats alike.

- :class:`Refused`: the same command run again will be refused again (bad arguments, a
  topic Kafka does not have, no jars): one ``error: <reason>`` line, exit 2, and a DAG
  task that fails at once.
- :class:`TryAgainLater`: a later run may get past it (Kafka does not answer, another
  process holds the topic's lease or the stream's checkpoint, a commit lost to other
  writers every time): exit 75 (``EX_TEMPFAIL`` of sysexits.h), and a retried DAG task.

Any other :class:`EventlakeError` is a failure eventlake names but does not expect
(exit 1). Each error keeps the built-in kind it had (``ValueError``, ``RuntimeError``)
as a second base, so ``except ValueError`` around a setting still holds.

Example:
    >>> class KafkaConnectionError(TryAgainLater, RuntimeError): ...
    >>> KafkaConnectionError("no broker").exit_code
    75
"""

from __future__ import annotations

from typing import ClassVar, Final

#: The exit code of a refusal (:class:`Refused`): one ``error: <reason>`` line on stderr,
#: nothing done. The DAGs do not retry it: the same arguments would be refused again.
REFUSED_EXIT_CODE: Final = 2
#: The exit code of a refusal a later run may get past (:class:`TryAgainLater`):
#: ``EX_TEMPFAIL`` of sysexits.h. The DAGs retry it.
TRY_AGAIN_EXIT_CODE: Final = 75


class EventlakeError(Exception):
    """The base of every error eventlake raises: a sentence saying what went wrong."""

    #: What a command exits with when this error ends it.
    exit_code: ClassVar[int] = 1


class Refused(EventlakeError):
    """A refusal that running the same command again will not get past: exit 2."""

    exit_code: ClassVar[int] = REFUSED_EXIT_CODE


class TryAgainLater(EventlakeError):
    """A refusal that the same command, run again later, may get past: exit 75."""

    exit_code: ClassVar[int] = TRY_AGAIN_EXIT_CODE
