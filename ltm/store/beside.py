"""Work beside the model: what the store does on the process's helper threads while the caller's thread waits for
the embedding model (an add's staging commit and row drafts, :mod:`ltm.store.adding`).

:func:`beside` hands a job to a small pool of daemon threads and returns at once; :meth:`Beside.result` waits for it.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

__all__ = ["Beside", "beside"]

_HELPERS_MAX = 8  # threads for work beside model runs; a job waits only when this many are busy


class Beside:
    """Work handed to the helper threads by :func:`beside`: :meth:`result` waits for it and returns its value or
    raises its error. A plain queue and a lock per job: a ThreadPoolExecutor's futures cost ~60 us more per
    hand-off (BENCHMARKS.md), a tenth of what an add overlaps."""

    __slots__ = ("_done", "_error", "_result", "_work")

    def __init__(self, work: Callable[[], object]) -> None:
        self._work = work
        self._done = threading.Lock()
        self._done.acquire()
        self._result: object = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._result = self._work()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the job
            self._error = exc
        finally:
            self._done.release()

    def wait(self) -> None:
        """Until the work is done (however it ended)."""
        with self._done:
            pass

    def result(self) -> object:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._result


class _Helpers:
    """The process's helper threads (daemons, started on demand, at most _HELPERS_MAX)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Beside] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = self._idle = 0

    def submit(self, job: Beside) -> None:
        with self._lock:
            if self._idle == 0 and self._threads < _HELPERS_MAX:
                self._threads += 1
                self._idle += 1
                threading.Thread(target=self._serve, name="ltm-beside", daemon=True).start()
            self._idle -= 1
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            job._run()
            with self._lock:
                self._idle += 1


_HELPERS = _Helpers()


def beside(work: Callable[[], object]) -> Beside:
    """Run ``work`` on the process's helper threads and return at once: what the store does while the caller's
    thread waits for the model (the add's staging commit, ltm.store.embedded.behind.Staging)."""
    job = Beside(work)
    _HELPERS.submit(job)
    return job


def _forget_helpers() -> None:
    global _HELPERS
    _HELPERS = _Helpers()  # its threads did not survive the fork: a child that adds starts its own


os.register_at_fork(after_in_child=_forget_helpers)
