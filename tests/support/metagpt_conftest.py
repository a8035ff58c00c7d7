"""conftest for MetaGPT 0.8.2's own memory tests, run by scripts/frameworks/metagpt (copied in as tests/conftest.py).

MetaGPT's own conftest needs its whole test tree (mocks of LLM responses, web servers); its memory tests use
only the ``context`` fixture (a MetaGPT Context; the serialization tests take it and do not touch it) and
pytest-mock's ``mocker``.
"""

import pytest
from metagpt.context import Context


@pytest.fixture
def context() -> Context:
    return Context()
