"""One way to wait for a condition: poll it at a steady pace until it holds or the time is up."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(cond: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.25,
          error: Callable[[str], Exception] | None = TimeoutError) -> float:
    """Call ``cond`` every ``interval_s`` until it returns true; the seconds that took.

    When the time is up, raise ``error`` (an exception class, or a function that makes one from the
    message, to add what the wait last saw) saying ``what`` did not happen, or, with ``error=None``,
    return the seconds waited (for waits that go on regardless).
    """
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    while True:
        if cond():
            return time.monotonic() - t0
        if time.monotonic() >= deadline:
            if error is None:
                return time.monotonic() - t0
            raise error(f"{what} within {timeout_s:.0f} s")
        time.sleep(interval_s)
