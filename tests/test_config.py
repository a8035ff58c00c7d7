from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ltm import ConfigError, Settings
from ltm.config import mask_url


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
    assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == "sk-1"
    assert s.openai_base_url == "http://h"
    assert s.redacted()["openai_api_key"] == "***"


@pytest.mark.parametrize(
    "redis_url",
    [
        "redis://:hunter2@cache:6379/0",
        "redis://app:hunter2@cache:6379/0",
        "rediss://hunter2@cache:6380",
        "redis://cache:6379/0?password=hunter2&ssl_cert_reqs=none",
    ],
)
def test_secrets_never_in_repr_str_json_or_errors(redis_url: str) -> None:
    s = Settings(redis_url=redis_url, openai_api_key="sk-live-secret", embedding="hash")
    for shown in (repr(s), str(s), s.model_dump_json(), str(s.redacted())):
        assert "hunter2" not in shown and "sk-live-secret" not in shown, shown
        assert "cache" in shown  # the host stays readable
    assert s.redis_url == redis_url  # the code that connects gets the real URL
    assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == "sk-live-secret"
    copy = s.with_(similarity_threshold=0.9)  # a copy keeps the secrets usable
    assert copy.redis_url == redis_url and copy.openai_api_key == s.openai_api_key
    env = {"LTM_REDIS_URL": redis_url, "OPENAI_API_KEY": "sk-live-secret", "LTM_SIMILARITY_THRESHOLD": "2"}
    with pytest.raises(ConfigError) as caught:
        Settings.load(env)
    assert "hunter2" not in str(caught.value) and "sk-live-secret" not in str(caught.value)


def test_mask_url() -> None:
    assert mask_url("redis://u:p@h:1/0") == "redis://u:***@h:1/0"
    assert mask_url("postgresql://me:s3cret@db/ltm?sslmode=require") == "postgresql://me:***@db/ltm?sslmode=require"
    assert mask_url("redis://h:1/0") == "redis://h:1/0"
    assert mask_url("http://host/v1?a=1&Password=x") == "http://host/v1?a=1&Password=***"
    for name in ("api-key", "api_key", "apikey", "key", "token", "access_token", "Access-Token"):
        assert mask_url(f"https://h/v1?v=2&{name}=s3cret#f") == f"https://h/v1?v=2&{name}=***#f"
    assert mask_url("https://h/v1?monkey=1&keys=2") == "https://h/v1?monkey=1&keys=2"


def test_a_key_in_a_url_query_never_in_repr_or_json() -> None:
    s = Settings(openai_base_url="https://x.openai.azure.com/openai/v1?api-key=azure-s3cret", embedding="hash")
    for shown in (repr(s), str(s), s.model_dump_json(), str(s.redacted())):
        assert "azure-s3cret" not in shown and "x.openai.azure.com" in shown, shown
    assert s.openai_base_url is not None and s.openai_base_url.endswith("api-key=azure-s3cret")


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
