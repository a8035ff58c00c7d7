"""Secrets never appear in errors (the Settings part is tested in tests/test_config.py)."""

from __future__ import annotations

import pytest

from ltm import ConfigError, LTMError
from ltm.kv.redis_kv import RedisKV

SECRET = "hunter2-s3cret"


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@localhost:notaport/0",
        f"redis://user:{SECRET}@localhost:6379/notadb",
        f"redis://:{SECRET}@host@with@ats:xx/0",
        f"nonsense-{SECRET}",
        f"redis://:{SECRET}",
        f"unix://:{SECRET}@/tmp/redis.sock?db=x",
    ],
)
def test_a_malformed_redis_url_error_does_not_echo_the_password(url: str) -> None:
    with pytest.raises(LTMError) as info:
        RedisKV.from_url(url, socket_connect_timeout=0.2).ping()
    text = str(info.value) + repr(info.value)
    assert SECRET not in text, text
    assert isinstance(info.value, ConfigError) or "Redis" in text


def test_an_unreachable_redis_error_does_not_echo_the_password() -> None:
    import socket

    with socket.socket() as probe:  # a free loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LTMError) as info:
        RedisKV.from_url(f"redis://:{SECRET}@127.0.0.1:{port}/0", socket_connect_timeout=0.2).ping()
    assert SECRET not in str(info.value)


def test_settings_never_show_the_key_or_the_redis_password() -> None:
    from ltm import Settings

    settings = Settings(openai_api_key=f"sk-{SECRET}", redis_url=f"redis://user:{SECRET}@localhost:6379/0")
    for shown in (repr(settings), str(settings), settings.model_dump_json(), str(settings.redacted())):
        assert SECRET not in shown, shown
    assert settings.openai_api_key is not None and SECRET in settings.openai_api_key.get_secret_value()


def test_a_failing_settings_load_does_not_echo_secrets() -> None:
    from ltm import Settings

    with pytest.raises(ConfigError) as info:
        Settings.load(
            {
                "LTM_OPENAI_API_KEY": f"sk-{SECRET}",
                "LTM_REDIS_URL": f"redis://:{SECRET}@h:1/0",
                "LTM_EMBED_BATCH_SIZE": "not a number",
            }
        )
    assert SECRET not in str(info.value)
