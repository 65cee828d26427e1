"""A Delta commit that lost a race to another writer, tried again a few times with a
pause between (tenacity).

Example:
    >>> retry_conflicts(lambda: append(), what="append", table=path)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, ParamSpec, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_incrementing,
)

from eventlake.core.progress import progress_log

_log = progress_log(__name__)

T = TypeVar("T")
P = ParamSpec("P")


#: How many times in all a Delta write that lost a commit race is tried.
CONFLICT_ATTEMPTS: Final = 3


#: Pause before the n-th retry: n times this many seconds.
CONFLICT_BACKOFF_SECONDS: Final = 1.0


def retry_conflicts(
    action: Callable[[], T],
    *,
    what: str,
    retryable: tuple[type[BaseException], ...],
    attempts: int = CONFLICT_ATTEMPTS,
    backoff_seconds: float = CONFLICT_BACKOFF_SECONDS,
) -> T:
    """Run ``action``; when Delta refuses its commit because another writer committed
    first (one of the ``retryable`` conflicts), print one line, pause a little longer
    each time and run it again, on the table's new snapshot, at most ``attempts`` times
    in all. Only for actions that are safe to repeat; each caller says why. The last
    attempt's conflict, or any other error, is raised as it is.

    Example:
        >>> from delta.exceptions import ConcurrentDeleteReadException
        >>> retry_conflicts(merge, what="state orders", retryable=(ConcurrentDeleteReadException,))
        state orders: lost a commit race to a concurrent writer (ConcurrentDeleteReadException: ...
    """

    def say_retrying(state: RetryCallState) -> None:
        assert state.outcome is not None  # called after a failed attempt
        error = state.outcome.exception()
        first_line = str(error).splitlines()[0][:200] if str(error) else ""
        _log.info(
            f"{what}: lost a commit race to a concurrent writer ({type(error).__name__}: "
            f"{first_line}); retrying, attempt {state.attempt_number + 1} of {attempts}"
        )

    retrying = Retrying(
        retry=retry_if_exception_type(retryable),
        stop=stop_after_attempt(attempts),
        # After the n-th attempt: n times backoff_seconds.
        wait=wait_incrementing(start=backoff_seconds, increment=backoff_seconds),
        before_sleep=say_retrying,
        reraise=True,
    )
    return retrying(action)


def conflicts_retried(
    *, what: Callable[..., str], retryable: tuple[type[BaseException], ...]
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """The decorator form of :func:`retry_conflicts`: each call of the decorated function
    is one action, ``what(*args, **kwargs)`` names it in the retry line.

    Example:
        >>> @conflicts_retried(what=lambda *_, note, **__: f"ingest: {note}",
        ...                    retryable=(LedgerMovedError,))
        ... def land(records, *, note): ...
    """

    def decorate(action: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(action)
        def retried(*args: P.args, **kwargs: P.kwargs) -> T:
            return retry_conflicts(
                functools.partial(action, *args, **kwargs),
                what=what(*args, **kwargs),
                retryable=retryable,
            )

        return retried

    return decorate
