"""Issue 13, defect 6: secrets never appear in errors (the Settings part is tested in tests/test_config.py)."""

from __future__ import annotations

import pytest

from ltm import ConfigError, LTMError
from ltm.kv.redis_kv import RedisKV

SECRET = "hunter2-s3cret"


@pytest.mark.parametrize("url", [
    f"redis://:{SECRET}@localhost:notaport/0",
    f"redis://user:{SECRET}@localhost:6379/notadb",
    f"redis://:{SECRET}@host@with@ats:xx/0",
    f"nonsense-{SECRET}",
    f"redis://:{SECRET}",
    f"unix://:{SECRET}@/tmp/redis.sock?db=x",
])
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
