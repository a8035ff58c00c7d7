"""Settings: the only place configuration is read.

Precedence is explicit arguments > ``LTM_*`` environment variables > defaults. Nothing is read or created at
import time: call :meth:`Settings.load` (or construct ``Settings(...)`` for arguments and defaults only) and
pass the object down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ltm.errors import ConfigError

__all__ = ["ENV_PREFIX", "Settings"]

ENV_PREFIX = "LTM_"

EmbeddingKind = Literal["local", "openai", "hash"]
LLMKind = Literal["none", "openai"]


class Settings(BaseModel):
    """Every knob of ltm. Each field ``name`` can be set by the environment variable ``LTM_NAME``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    storage_dir: Path = Field(Path("storage"), description="Data root; namespaces live below it.")
    embedding: EmbeddingKind = Field("local", description="local (all-MiniLM-L6-v2), openai or hash.")
    embedding_model: str | None = Field(
        None, description="Model name for the openai embedding (default text-embedding-3-small)."
    )
    embedding_dim: int = Field(384, ge=8, le=8192, description="Dimension of the hash embedding.")
    embed_batch_size: int = Field(32, ge=1, le=4096, description="Texts per embedding call.")
    torch_threads: int = Field(1, ge=1, le=64, description="Torch threads for the local model.")
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint (also OPENAI_BASE_URL).")
    openai_api_key: str | None = Field(None, description="API key (also OPENAI_API_KEY); never stored.")
    llm: LLMKind = Field("none", description="none (offline extractive) or openai.")
    llm_model: str = Field("gpt-4o-mini", description="Chat model name for the openai LLM.")
    llm_timeout: float = Field(60.0, gt=0, description="Seconds per LLM request.")
    llm_max_retries: int = Field(3, ge=0, le=20, description="Retries after a failed LLM request.")
    store_url: str | None = Field(
        None, description="postgresql://user:pass@host/db puts the long-term store (MemoryStorage) on PostgreSQL + "
        "pgvector (the pg extra); none keeps it embedded (SQLite + FAISS under storage_dir).",
    )
    redis_url: str | None = Field(None, description="redis:// URL; BrainMemory and MemoryFS use Redis when set.")
    redis_prefix: str = Field("ltm", description="Key prefix for everything ltm writes to Redis.")
    redis_wait_replicas: int = Field(
        0, ge=0, le=16, description="Replicas that must acknowledge each Redis write (WAIT) before it returns: "
        "1 on a Redis Cluster with replicas keeps acknowledged writes through a master's crash.",
    )
    redis_failover_timeout: float = Field(
        10.0, ge=0, description="Seconds a Redis Cluster call keeps retrying while a failover moves its slot."
    )
    similarity_threshold: float = Field(
        0.95, ge=0.0, le=1.0, description="Cosine similarity at which a message counts as already seen."
    )
    recover_recent: int = Field(100, ge=0, description="Messages restored into short-term memory on recover.")
    short_term_capacity: int | None = Field(
        None, ge=1, description="Short-term messages kept in RAM by LongTermMemory (none: unbounded)."
    )
    hnsw_threshold: int = Field(
        200_000, ge=1, description="Live vectors above which a namespace's index switches from flat to HNSW."
    )
    hnsw_ef_search: int = Field(
        384, ge=1, description="HNSW efSearch floor (raised to 4*k for larger k): recall against latency."
    )
    snapshot_every: int = Field(
        10_000, ge=1, description="Rows added since the last FAISS snapshot that trigger a new one."
    )
    sqlite_synchronous: Literal["full", "normal"] = Field(
        "full", description="SQLite fsync policy of the long-term store. full: every acknowledged add is on disk "
        "(survives kill -9 and power loss; one fsync per commit). normal: WAL fsyncs only at checkpoints, adds "
        "are several times cheaper and still survive a process crash (kill -9), but an OS crash or power loss "
        "can drop the last acknowledged adds.",
    )
    brain_ttl_seconds: int | None = Field(1800, ge=1, description="BrainMemory key TTL; none keeps forever.")
    max_content_bytes: int = Field(
        1_000_000, ge=1, description="Largest message content accepted, in UTF-8 bytes."
    )
    files_max_bytes: int = Field(
        256_000, ge=1, description="Largest MemoryFS file accepted, in UTF-8 bytes."
    )
    agents_md_max_bytes: int = Field(
        16_000, ge=1, description="Largest AGENTS.md accepted (detail belongs in skills), in UTF-8 bytes."
    )

    @field_validator("store_url")
    @classmethod
    def _store_scheme(cls, value: str | None) -> str | None:
        if value is not None and value.split("://", 1)[0] not in ("postgresql", "postgres"):
            raise ValueError("store_url takes a postgresql://user:password@host:port/database URL (or none for the "
                             "embedded store)")
        return value

    @field_validator("storage_dir", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return Path(value).expanduser() if isinstance(value, str | Path) else value

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``overrides`` > ``LTM_*`` variables of ``environ`` (default os.environ) > defaults.

        ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` are honoured when their ``LTM_`` twins are unset.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is None and name in ("openai_base_url", "openai_api_key"):
                raw = env.get(name.upper())
            if raw is not None:
                values[name] = _from_env(raw, field.annotation)
        values.update({k: v for k, v in overrides.items()})
        unknown = set(values) - set(cls.model_fields)
        if unknown:
            raise ConfigError(f"unknown setting(s) {sorted(unknown)}; known: {sorted(cls.model_fields)}")
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from exc

    def with_(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied and validated."""
        try:
            return type(self)(**{**self.model_dump(), **changes})
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from exc

    def redacted(self) -> dict[str, Any]:
        """The settings as a dict with secrets masked, for logs and `ltm stats`."""
        data = self.model_dump(mode="json")
        if data.get("openai_api_key"):
            data["openai_api_key"] = "***"
        if data.get("store_url") and "@" in data["store_url"]:
            scheme, _, rest = data["store_url"].partition("://")
            user = rest.split("@", 1)[0].split(":", 1)[0]
            data["store_url"] = f"{scheme}://{user}:***@{rest.split('@', 1)[1]}"
        if data.get("redis_url") and "@" in data["redis_url"]:
            scheme, _, rest = data["redis_url"].partition("://")
            data["redis_url"] = f"{scheme}://***@{rest.split('@', 1)[1]}"
        return data


def _from_env(raw: str, annotation: Any) -> Any:
    """Env strings: empty or 'none' mean None for optional fields; pydantic converts the rest."""
    optional = get_origin(annotation) is not None and type(None) in get_args(annotation)
    if optional and raw.strip().lower() in ("", "none", "null"):
        return None
    return raw


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"])
        parts.append(f"{name}: {err['msg']} (set it with argument {name}= or {ENV_PREFIX}{name.upper()})")
    return "invalid settings: " + "; ".join(parts)
