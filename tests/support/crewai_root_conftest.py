"""Stand-in for CrewAI's workspace conftest.py, which sits at the root of CrewAI's repository and so is not in the
crewai sdist. scripts/frameworks/crewai copies it in as the root conftest when CrewAI's tests come from the sdist.

It does what CrewAI's own does for its memory tests, on both sides of the comparison alike: the fake API keys of
CrewAI's .env.test (no test reaches a model: pytest-recording's --block-network), a fresh CREWAI_STORAGE_DIR and
CREWAI_TESTING=true for each test, the same variables dropped after it, and the event bus reset around it. CrewAI's
VCR cassette settings are left out: no memory test records or replays HTTP.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_ENV_TEST = {
    "OPENAI_API_KEY": "fake-api-key",
    "ANTHROPIC_API_KEY": "fake-anthropic-key",
    "GEMINI_API_KEY": "fake-gemini-key",
    "AZURE_API_KEY": "fake-azure-key",
    "OPENROUTER_API_KEY": "fake-openrouter-key",
    "OPENAI_BASE_URL": "https://api.openai.com/v1",
    "OPENAI_API_BASE": "https://api.openai.com/v1",
}
for _name, _value in _ENV_TEST.items():
    os.environ.setdefault(_name, _value)  # load_dotenv(override=False), as CrewAI's conftest loads .env.test


@pytest.fixture(autouse=True)
def cleanup_event_handlers() -> Iterator[None]:
    """The event bus's handlers dropped after each test."""
    yield
    try:
        from crewai.events.event_bus import crewai_event_bus

        with crewai_event_bus._rwlock.w_locked():
            crewai_event_bus._sync_handlers.clear()
            crewai_event_bus._async_handlers.clear()
    except Exception:  # noqa: BLE001, S110 - as CrewAI's own: a release without these internals needs no cleanup
        pass


@pytest.fixture(autouse=True)
def reset_event_state() -> None:
    """The event system's counters and context reset before each test."""
    try:
        from crewai.events.base_events import reset_emission_counter
        from crewai.events.event_context import EventContextConfig, _event_context_config, _event_id_stack
    except ImportError:  # a release without them
        return
    reset_emission_counter()
    _event_id_stack.set(())
    _event_context_config.set(EventContextConfig())


@pytest.fixture(autouse=True)
def setup_test_environment() -> Iterator[None]:
    """A private CREWAI_STORAGE_DIR for each test, then CrewAI's variables dropped as its own conftest drops them."""
    with tempfile.TemporaryDirectory() as temp_dir:
        storage_dir = Path(temp_dir) / "crewai_test_storage"
        storage_dir.mkdir(parents=True)
        os.environ["CREWAI_STORAGE_DIR"] = str(storage_dir)
        os.environ["CREWAI_TESTING"] = "true"
        try:
            yield
        finally:
            for name in (
                "CREWAI_TESTING",
                "CREWAI_STORAGE_DIR",
                "CREWAI_DISABLE_TELEMETRY",
                "OTEL_SDK_DISABLED",
                "OPENAI_BASE_URL",
                "OPENAI_API_BASE",
            ):
                os.environ.pop(name, None)
