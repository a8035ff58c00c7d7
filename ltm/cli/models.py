"""Which embedding model a command opens a namespace with.

A namespace records the model its vectors came from (``ltm stats`` shows it), and a store refuses to open it with
another. Commands that only read (``recent``, ``get``, ``list``, ``export``, ``history``, deletes, keyword search)
embed nothing, so they open a namespace with whatever model it records and load none. Commands that embed
(``add``, ``import``, ``search``, ``update`` of content) need the namespace's own model: ``--embedding-model NAME``
names it as ``ltm stats`` shows it.
"""

from __future__ import annotations

import re
from typing import Any

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.llm.names import LOCAL_MODEL_NAME

__all__ = ["ORIGIN_SUFFIX", "check_embeddable", "how_to_embed_with", "model_overrides", "reading"]

ORIGIN_SUFFIX = "+origin"  # the name ltm's MetaGPT integration gives MetaGPT's embedding, lifted by a coordinate
_HASH = re.compile(r"hash-(\d+)")


def model_overrides(name: str, *, kind: str | None = None) -> dict[str, Any]:
    """The settings that embed with the model a namespace records as ``name``: the local model, ``hash-N`` or an
    OpenAI-compatible model of that name. With ``kind`` (``--embedding`` given too) the name is only the
    OpenAI-compatible model's."""
    if kind is not None:
        return {"embedding": kind, "embedding_model": name}
    if name == LOCAL_MODEL_NAME:
        return {"embedding": "local"}
    hashed = _HASH.fullmatch(name)
    if hashed:
        return {"embedding": "hash", "embedding_dim": int(hashed.group(1))}
    return {"embedding": "openai", "embedding_model": name}


def reading(settings: Settings, recorded: str) -> Settings:
    """``settings`` naming the model ``recorded``, for a command that embeds nothing (the model is never loaded)."""
    return settings.model_copy(update=model_overrides(recorded))


def how_to_embed_with(recorded: str) -> str:
    """How to run an embedding command on a namespace whose vectors come from ``recorded``."""
    if recorded.endswith(ORIGIN_SUFFIX):
        return (
            "it was written through ltm's MetaGPT integration with MetaGPT's own embedding: add to it or search it "
            "by meaning from MetaGPT's environment (ltm.integrations.metagpt.MemoryStorage); here, `ltm recent`, "
            "`list`, `get`, `export` and `search --mode keyword` read it without a model"
        )
    if recorded == LOCAL_MODEL_NAME or _HASH.fullmatch(recorded):
        return f"pass --embedding-model {recorded}"
    return (
        f"pass --embedding-model {recorded} (an OpenAI-compatible model: OPENAI_BASE_URL and OPENAI_API_KEY name "
        "its endpoint)"
    )


def check_embeddable(name: str) -> None:
    """InvalidInput for an ``--embedding-model`` that ltm cannot embed with from the command line."""
    if name.endswith(ORIGIN_SUFFIX):
        raise InvalidInput(f"--embedding-model {name}: {how_to_embed_with(name)}")
