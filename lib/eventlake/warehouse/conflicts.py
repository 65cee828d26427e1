"""A Delta commit that lost a race to another writer, tried again a few times with a
pause between.

Example:
    >>> retry_conflicts(lambda: append(), what="append", table=path)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")


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
    in all. Only for actions that are safe to repeat; each caller says why.

    Example:
        >>> from delta.exceptions import ConcurrentDeleteReadException
        >>> retry_conflicts(merge, what="state orders", retryable=(ConcurrentDeleteReadException,))
        state orders: lost a commit race to a concurrent writer (ConcurrentDeleteReadException: ...
    """
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except retryable as error:
            if attempt == attempts:
                raise
            first_line = str(error).splitlines()[0][:200] if str(error) else ""
            print(
                f"{what}: lost a commit race to a concurrent writer ({type(error).__name__}: "
                f"{first_line}); retrying, attempt {attempt + 1} of {attempts}",
                flush=True,
            )
            time.sleep(backoff_seconds * attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")
