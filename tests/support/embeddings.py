"""Embeddings for store tests: MetaGPT's two-vector fixture, a call counter, and broken models."""

from __future__ import annotations

import math
import threading
import time

from llama_index.core.bridge.pydantic import Field, PrivateAttr  # pydantic v1 models at MetaGPT's pins, v2 after

from ltm.llm.embeddings import HashEmbedding

# MetaGPT's fixture texts: 0, 1, 4, 5 share vector A; 2, 3, 6 share vector B (orthogonal to A).
TEXTS = [
    "Write a cli snake game",
    "Write a game of cli snake",
    "Write a 2048 web game",
    "Write a Battle City",
    "The user has requested the creation of a command-line interface (CLI) snake game",
    "The request is command-line interface (CLI) snake game",
    "Incorporate basic features of a snake game such as scoring and increasing difficulty",
]
_GROUP_A = {TEXTS[i] for i in (0, 1, 4, 5)}
_GROUP_B = {TEXTS[i] for i in (2, 3, 6)}


class MockEmbedding(HashEmbedding):
    """Maps the fixture texts onto two orthogonal unit vectors; any other text gets a hash vector that is
    orthogonal to both (its first two slots zeroed)."""

    dim: int = 32
    calls: int = 0

    @classmethod
    def class_name(cls) -> str:
        return "MockEmbedding"

    def _vector(self, text: str) -> list[float]:
        self.calls += 1
        if text in _GROUP_A:
            return [1.0] + [0.0] * (self.dim - 1)
        if text in _GROUP_B:
            return [0.0, 1.0] + [0.0] * (self.dim - 2)
        vec = super()._vector(text)
        vec[0] = vec[1] = 0.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec] if any(vec) else [0.0, 0.0, 1.0] + [0.0] * (self.dim - 3)


class CountingEmbedding(HashEmbedding):
    """A hash embedding that counts the texts it embeds (to prove a path never re-embeds)."""

    texts_embedded: int = 0

    @classmethod
    def class_name(cls) -> str:
        return "CountingEmbedding"

    def _vector(self, text: str) -> list[float]:
        self.texts_embedded += 1
        return super()._vector(text)


class SlowEmbedding(HashEmbedding):
    """A hash embedding whose batch calls take ``delay_s`` (a model's run time, without a model)."""

    delay_s: float = 0.005

    @classmethod
    def class_name(cls) -> str:
        return "SlowEmbedding"

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        time.sleep(self.delay_s)
        return [self._vector(t) for t in texts]


class BrokenEmbedding(HashEmbedding):
    """Returns NaN vectors, or vectors of the wrong dimension, for texts containing its trigger word."""

    fault: str = Field(default="nan")

    @classmethod
    def class_name(cls) -> str:
        return "BrokenEmbedding"

    def _vector(self, text: str) -> list[float]:
        vec = super()._vector(text)
        if "poison" not in text:
            return vec
        if self.fault == "nan":
            return [float("nan")] * len(vec)
        if self.fault == "zero":
            return [0.0] * len(vec)
        return vec[: len(vec) // 2]


class GatedEmbedding(HashEmbedding):
    """A hash embedding whose batch calls wait for :attr:`gate` (up to ``wait_s``: ``timed_out`` then says the
    caller was held that long), and raise while :attr:`failing` is set: for write-behind tests."""

    wait_s: float = 10.0
    timed_out: bool = False
    failing: bool = False
    _gate: threading.Event = PrivateAttr(default_factory=threading.Event)

    @classmethod
    def class_name(cls) -> str:
        return "GatedEmbedding"

    @property
    def gate(self) -> threading.Event:
        return self._gate

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not self._gate.wait(self.wait_s):
            self.timed_out = True
        if self.failing:
            raise RuntimeError("the model server went away")
        return [self._vector(t) for t in texts]


# a module constant, not a pydantic field: at MetaGPT's pins (llama-index-core 0.10, pydantic v1 models) a field
# default read through the class is a FieldInfo
CONCEPTS: dict[str, int] = {
    "trophy": 1,
    "medal": 1,
    "prize": 1,
    "thunder": 2,
    "storm": 2,
    "rain": 2,
    "exam": 3,
    "homework": 3,
    "quiz": 3,
    "guitar": 4,
    "piano": 4,
    "song": 4,
}


class ConceptEmbedding(HashEmbedding):
    """Meaning without shared words: each word of ``CONCEPTS`` counts on its concept's axis (synonyms share one),
    any other word on axis 0 (small talk). So "medal" is close to "trophy" while keyword search sees no match."""

    dim: int = 8

    @classmethod
    def class_name(cls) -> str:
        return "ConceptEmbedding"

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in text.lower().replace(":", " ").replace(",", " ").replace(".", " ").split():
            vec[CONCEPTS.get(word, 0)] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]
