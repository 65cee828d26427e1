"""Timing the phases of a profile: a function wrapped so that every call reports its
seconds. Imports nothing heavy, so a profile that times its own imports can use it.

Example:
    >>> seconds: list[float] = []
    >>> slept = timed(time.sleep, seconds.append)
    >>> slept(0.1); round(seconds[0], 1)
    0.1
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any


def timed(function: Callable[..., Any], record: Callable[[float], None]) -> Any:
    """``function``, calling ``record`` with the seconds of every call (also when the
    call raises)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            record(time.monotonic() - began)

    return wrapper
