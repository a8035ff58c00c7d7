"""Fixtures of the service tests: a real server on a free loopback port, with keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ltm.config import Settings
from tests.support.service import ServiceThread


@pytest.fixture
def server(settings: Settings) -> Iterator[ServiceThread]:
    """A server requiring keys, over a fresh data root with the hash embedding."""
    service = ServiceThread(settings).start()
    yield service
    service.close()
