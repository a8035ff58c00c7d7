from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ltm import ConfigError, Settings


def test_precedence_args_over_env_over_defaults() -> None:
    env = {"LTM_SIMILARITY_THRESHOLD": "0.8", "LTM_EMBEDDING": "hash", "LTM_REDIS_URL": "redis://x:1/0"}
    s = Settings.load(env, similarity_threshold=0.5)
    assert s.similarity_threshold == 0.5
    assert s.embedding == "hash"
    assert s.redis_url == "redis://x:1/0"
    assert Settings.load({}).similarity_threshold == 0.95


def test_optional_env_none_and_openai_fallbacks() -> None:
    s = Settings.load({"LTM_BRAIN_TTL_SECONDS": "none", "OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://h"})
    assert s.brain_ttl_seconds is None
    assert s.openai_api_key == "sk-1" and s.openai_base_url == "http://h"
    assert s.redacted()["openai_api_key"] == "***"


def test_bad_values_name_the_variable() -> None:
    with pytest.raises(ConfigError, match="LTM_SIMILARITY_THRESHOLD"):
        Settings.load({"LTM_SIMILARITY_THRESHOLD": "2"})
    with pytest.raises(ConfigError, match="unknown setting"):
        Settings.load({}, nope=1)


def test_nothing_created_at_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "ltm" or m.startswith("ltm.")]:
        monkeypatch.delitem(sys.modules, name)
    import ltm.config  # noqa: F401

    assert list(tmp_path.iterdir()) == []
    assert Settings(storage_dir="~/x").storage_dir == Path("~/x").expanduser()
