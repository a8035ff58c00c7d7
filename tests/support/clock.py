"""A clock a test moves by hand: expiry tests advance it instead of sleeping."""

from __future__ import annotations

import time


class ManualClock:
    """Unix seconds, starting now, that only :meth:`advance` changes."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
