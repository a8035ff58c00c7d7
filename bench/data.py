"""Deterministic synthetic data for bench/run.py: agent-style message texts and precomputed vectors.

Texts are templates x vocabulary with optional clauses (10-40 words), every one unique (it carries a ticket
number), so a text maps to exactly one vector. Vectors for the precomputed runs are random, L2-normalised
float32 of dimension 384 with topic structure: each message's vector is its topic centre plus Gaussian noise
(cosine to the centre ~0.7), because real sentence embeddings cluster by topic and uniform random vectors
have no neighbours worth finding. Recall is always measured against exact search on these same vectors.

:class:`LookupEmbedding` is a llama-index ``BaseEmbedding`` that returns those vectors by text lookup: the
fair, API-level way to feed precomputed vectors to ltm and to the llama-index baseline alike, so that the
measured time is the store's own work per message, not the model's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

DIM = 384
N_TOPICS = 512

_COMPONENTS = [
    "login service",
    "payment gateway",
    "search index",
    "user profile page",
    "REST API",
    "database schema",
    "cache layer",
    "message queue",
    "auth middleware",
    "CLI tool",
    "test suite",
    "deployment pipeline",
    "metrics dashboard",
    "rate limiter",
    "file uploader",
    "notification worker",
    "billing report",
    "recommendation engine",
    "session store",
    "config loader",
    "retry policy",
    "web crawler",
    "PDF parser",
    "image resizer",
    "email sender",
    "audit log",
    "feature flag system",
    "job scheduler",
    "GraphQL schema",
    "websocket gateway",
    "data exporter",
    "permission model",
]
_ROLES = ["Alice", "Bob", "ProductManager", "Architect", "Engineer", "QaEngineer", "DataAnalyst", "Reviewer"]
_ACTIONS = ["WritePRD", "WriteDesign", "WriteCode", "WriteTest", "RunCode", "ReviewCode", "DebugError", "Research"]
_LIBS = [
    "FastAPI",
    "Django",
    "SQLite",
    "Postgres",
    "Redis",
    "Kafka",
    "pytest",
    "React",
    "numpy",
    "asyncio",
    "Docker",
    "Kubernetes",
    "gRPC",
    "pydantic",
    "FAISS",
    "Celery",
]
_ISSUES = [
    "a race condition",
    "a memory leak",
    "an off-by-one error",
    "a timeout under load",
    "a missing index",
    "an unhandled None",
    "a flaky test",
    "a deadlock",
    "slow startup",
    "a wrong time zone",
    "a broken migration",
    "an encoding error",
    "a stale cache entry",
    "a permission bypass",
]
_CLAUSES = [
    "The customer is waiting for a demo.",
    "Keep compatibility with last month's release.",
    "Every public function needs type hints.",
    "Staging showed a regression after the last merge.",
    "Talk to the upstream team before changing the contract.",
    "Log enough context without leaking personal data.",
    "Add a regression test for the fix.",
    "Drop the legacy path after the migration.",
]
_TEMPLATES = [
    "Please implement the {c} with {l} for ticket {t}.",
    "I found {i} in the {c} while testing ticket {t}; it only shows up with {l}.",
    "Design review for ticket {t}: the {c} should call the {c2} through {l} instead of polling.",
    "Write unit tests for the {c} (ticket {t}) covering {i} and the happy path.",
    "Ticket {t} is done: the {c} now uses {l} and the p95 latency dropped by {p} percent.",
    "Can you explain why the {c} depends on the {c2}? Ticket {t} needs a decision today.",
    "The {c} crashed again with {i}; see ticket {t} for the stack trace and the {l} logs.",
    "Summary of ticket {t}: migrate the {c} from {l} to {l2} and keep the {c2} untouched.",
]


def message_text(i: int, seed: int) -> tuple[str, int, str, str]:
    """Message ``i`` of the dataset: (text, topic, role, cause_by). Pure function of (i, seed)."""
    rnd = random.Random(seed * 1_000_003 + i)
    c, c2 = rnd.sample(_COMPONENTS, 2)
    l1, l2 = rnd.sample(_LIBS, 2)
    text = rnd.choice(_TEMPLATES).format(
        c=c, c2=c2, l=l1, l2=l2, i=rnd.choice(_ISSUES), t=f"T-{i:07d}", p=rnd.randint(5, 60)
    )
    extra = rnd.choice((0, 0, 1, 1, 2))  # 10-40 words in all
    if extra:
        text += " " + " ".join(rnd.sample(_CLAUSES, extra))
    topic = (_COMPONENTS.index(c) * len(_LIBS) + _LIBS.index(l1)) % N_TOPICS
    return text, topic, rnd.choice(_ROLES), rnd.choice(_ACTIONS)


def dataset(n: int, seed: int) -> tuple[list[str], np.ndarray, list[str], list[str]]:
    """``n`` messages: texts, topics (int array), roles, cause_by names."""
    rows = [message_text(i, seed) for i in range(n)]
    return (
        [r[0] for r in rows],
        np.fromiter((r[1] for r in rows), dtype=np.int64, count=n),
        [r[2] for r in rows],
        [r[3] for r in rows],
    )


def _centres(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((N_TOPICS, DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    return centres


def vectors(topics: np.ndarray, seed: int, noise: float = 1.0) -> np.ndarray:
    """Unit float32 vectors, one per topic id: centre + N(0, noise^2/DIM) noise, normalised. Chunked for 1M."""
    centres = _centres(seed)
    out = np.empty((len(topics), DIM), dtype=np.float32)
    rng = np.random.default_rng(seed + 1)
    scale = np.float32(noise / np.sqrt(DIM))
    for start in range(0, len(topics), 65_536):
        block = centres[topics[start : start + 65_536]]
        block = block + rng.standard_normal(block.shape, dtype=np.float32) * scale
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + len(block)] = block
    return out


def query_set(vecs: np.ndarray, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """``n`` search queries near stored messages (a stored vector plus noise, cosine ~0.7 to it), with texts."""
    rng = np.random.default_rng(seed + 2)
    src = rng.integers(0, len(vecs), size=n)
    q = vecs[src] + rng.standard_normal((n, vecs.shape[1]), dtype=np.float32) * np.float32(1.0 / np.sqrt(DIM))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    texts = [message_text(int(s), seed)[0].split(";")[0].split(".")[0] + f" (query {j})" for j, s in enumerate(src)]
    return texts, q.astype(np.float32)


class LookupEmbedding(BaseEmbedding):
    """Returns precomputed vectors by exact text; an unknown text is an error (the bench must not cheat)."""

    _table: dict[str, int] = PrivateAttr(default_factory=dict)
    _vecs: list[np.ndarray] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "LookupEmbedding"

    def register(self, texts: Sequence[str], vecs: np.ndarray) -> None:
        """Make ``texts[i]`` embed to ``vecs[i]`` (kept by reference, not copied)."""
        base = sum(len(v) for v in self._vecs)
        self._vecs.append(vecs)
        self._table.update((t, base + j) for j, t in enumerate(texts))

    def vector(self, text: str) -> np.ndarray:
        pos = self._table[text]
        for block in self._vecs:
            if pos < len(block):
                row: np.ndarray = block[pos]
                return row
            pos -= len(block)
        raise KeyError(text)  # pragma: no cover - the table only holds registered positions

    def _get_query_embedding(self, query: str) -> list[float]:
        out: list[float] = self.vector(query).tolist()
        return out

    def _get_text_embedding(self, text: str) -> list[float]:
        out: list[float] = self.vector(text).tolist()
        return out

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t).tolist() for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def lookup_embedding(model_name: str = "bench-lookup-384") -> LookupEmbedding:
    """A fresh, empty :class:`LookupEmbedding`; its ``model_name`` is what a store records in its manifest."""
    return LookupEmbedding(model_name=model_name, embed_batch_size=2048)
