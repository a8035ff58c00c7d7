"""Summarize a long BrainMemory history against the local OpenAI-compatible test server; print calls and time.

    python -m bench.brain --messages 10000 [--backend sqlite|redis] [--window 4096] [--max-calls 32]

The server (tests/support/openai_server.py) answers instantly and deterministically, so the time measured is
ltm's own work plus HTTP round trips on loopback, not a model's. Redis needs a redis-server binary (a private one
is started on a free port). Messages are distinct English sentences (~14 words each).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from ltm.brain import BrainMemory
from ltm.config import Settings
from ltm.kv.base import KVStore
from ltm.kv.redis_kv import RedisKV
from ltm.kv.sqlite_kv import SQLiteKV
from ltm.llm.openai_llm import OpenAICompatibleLLM
from ltm.llm.tokens import count_tokens, tokenizer_name
from tests.support.openai_server import OpenAIServer
from tests.support.redis_server import RedisServer


def sentence(i: int) -> str:
    word = "".join(chr(97 + int(d)) for d in str(i))
    return f"On day {i} the user asked about the {word}berry order and the assistant checked the {word}mart stock."


async def bench(kv: KVStore, server: OpenAIServer, args: argparse.Namespace, root: Path) -> None:
    llm = OpenAICompatibleLLM(model="bench", base_url=server.base_url, timeout=10, max_retries=2)
    brain = BrainMemory(
        settings=Settings(storage_dir=root), kv=kv, window_tokens=args.window, max_llm_calls=args.max_calls
    )
    for i in range(args.messages):
        (brain.add_talk if i % 2 == 0 else brain.add_answer)(sentence(i))
    text = "\n".join(m.content for m in brain.history)
    t0 = time.perf_counter()
    await brain.dumps(BrainMemory.to_redis_key("bench", "user", "chat"))
    t_dump = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = await brain.summarize(llm, max_words=200)
    t_sum = time.perf_counter() - t0
    run = brain.last_run
    assert run is not None
    t0 = time.perf_counter()
    loaded = await brain.loads(BrainMemory.to_redis_key("bench", "user", "chat"))
    t_load = time.perf_counter() - t0
    print(
        f"messages={args.messages} tokens={count_tokens(text)} ({tokenizer_name()}) window={args.window} "
        f"max_calls={args.max_calls} backend={args.backend}"
    )
    print(f"dumps: {t_dump:.3f}s")
    print(
        f"summarize: {t_sum:.3f}s, LLM calls={run.calls} (server saw {server.chat_calls}), map levels={run.levels}, "
        f"summary words={len(summary.split())}"
    )
    stored = bool(loaded.historical_summary)
    print(f"loads after fold: {t_load:.4f}s, history={len(loaded.history)}, summary stored={stored}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--backend", choices=["sqlite", "redis"], default="sqlite")
    parser.add_argument("--window", type=int, default=4096)
    parser.add_argument("--max-calls", type=int, default=32)
    args = parser.parse_args()
    server = OpenAIServer().start()
    redis_server = None
    with tempfile.TemporaryDirectory() as tmp:
        kv: KVStore
        if args.backend == "redis":
            redis_server = RedisServer().start()
            kv = RedisKV.from_url(redis_server.url, prefix="bench")
        else:
            kv = SQLiteKV(Path(tmp) / "kv.sqlite")
        try:
            asyncio.run(bench(kv, server, args, Path(tmp)))
        finally:
            kv.close()
            server.close()
            if redis_server is not None:
                redis_server.close()


if __name__ == "__main__":
    main()
