"""Fixtures of the service tests: a real server on a free loopback port, with keys; Debian's Chromium, headless."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ltm.config import Settings
from tests.support.service import ServiceThread

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's package: Playwright downloads no browser


@pytest.fixture
def server(settings: Settings) -> Iterator[ServiceThread]:
    """A server requiring keys, over a fresh data root with the hash embedding."""
    service = ServiceThread(settings).start()
    yield service
    service.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test module (Playwright is imported here: only the browser tests need it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()
