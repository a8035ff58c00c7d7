"""Run a test's work in several threads and fail the test when any of them failed.

An exception (an ``assert``) raised in a thread is lost to pytest: the thread dies and the test passes. Each
concurrency test used to catch, collect and re-check the errors by hand; :func:`run_in_threads` does it once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["run_in_threads"]


def run_in_threads(work: Callable[[int], object], count: int) -> None:
    """Run ``work(0)`` ... ``work(count - 1)`` each in its own thread, wait for all of them, then raise an
    AssertionError naming every failure (chained to the first) when any raised."""
    errors: list[tuple[int, BaseException]] = []

    def guarded(worker: int) -> None:
        try:
            work(worker)
        except BaseException as exc:  # noqa: BLE001 - reported below, in the test's own thread
            errors.append((worker, exc))

    threads = [threading.Thread(target=guarded, args=(w,), name=f"test-worker-{w}") for w in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        listed = "; ".join(f"worker {w}: {type(e).__name__}: {e}" for w, e in sorted(errors, key=lambda x: x[0]))
        raise AssertionError(f"{len(errors)} of {count} threads failed: {listed}") from errors[0][1]
