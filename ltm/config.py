"""Settings: the only place configuration is read.

Precedence is explicit arguments > ``LTM_*`` environment variables > a config file > defaults. The config
file is ``LTM_CONFIG`` when set, else ``./ltm.toml``, else the ``[tool.ltm]`` table of ``./pyproject.toml``;
its keys are the field names (``storage_dir = "data"``). Nothing is read or created at import time: call
:meth:`Settings.load` (or construct ``Settings(...)`` for arguments and defaults only) and pass the object down.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from ltm.errors import ConfigError

__all__ = ["ENV_PREFIX", "Settings", "mask_url"]

ENV_PREFIX = "LTM_"

# user:password@ in a URL's authority, and password=... in its query (redis-py reads both); the other query
# parameters that carry a credential (an OpenAI-compatible endpoint such as Azure's takes ?api-key=...)
_URL_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^@/?#]*)@")
_URL_PASSWORD_PARAM = re.compile(
    r"(?i)([?&](?:password|passwd|secret|api[-_]?key|key|token|access[-_]token|auth|sig|signature)=)[^&#]*"
)


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (``redis://user:***@host``, ``?password=***``, and the same
    for ``api-key``, ``api_key``, ``key``, ``token``, ``access_token`` and other credential parameters), for
    anything a person or a log may see; the host, port and database stay readable."""
    match = _URL_USERINFO.match(url)
    if match:
        user, colon, _ = match["userinfo"].partition(":")
        userinfo = f"{user}:***" if colon else "***"
        url = f"{match['scheme']}{userinfo}@{url[match.end() :]}"
    return _URL_PASSWORD_PARAM.sub(r"\1***", url)


EmbeddingKind = Literal["local", "openai", "hash"]
LLMKind = Literal["none", "openai"]
LocalRuntime = Literal["auto", "onnx", "onnx-int8", "torch"]


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
    torch_threads: int = Field(1, ge=1, le=64, description="Threads for the local model (torch or ONNX Runtime).")
    local_runtime: LocalRuntime = Field(
        "auto",
        description="Runtime of the local model: onnx, torch, or auto (ONNX Runtime when installed); "
        "onnx-int8 (opt-in) runs an int8-quantized copy of the ONNX graph: faster batches, slightly different vectors.",
    )
    query_cache_size: int = Field(
        1024,
        ge=0,
        description="Query embeddings each open store keeps in memory (LRU by model and text): a "
        "repeated search skips the model. 0 keeps none.",
    )
    model_cache_dir: Path = Field(
        Path("~/.cache/ltm"), description="Where the local model's ONNX export is cached (built once, offline)."
    )
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint (also OPENAI_BASE_URL).")
    openai_api_key: SecretStr | None = Field(
        None, description="API key (also OPENAI_API_KEY); never stored, shown as ********** (get_secret_value())."
    )
    llm: LLMKind = Field("none", description="none (offline extractive) or openai.")
    llm_model: str = Field("gpt-4o-mini", description="Chat model name for the openai LLM.")
    llm_timeout: float = Field(60.0, gt=0, description="Seconds per LLM request.")
    llm_max_retries: int = Field(3, ge=0, le=20, description="Retries after a failed LLM request.")
    store_url: str | None = Field(
        None,
        description="postgresql://user:pass@host/db puts the long-term store (MemoryStorage) on PostgreSQL + "
        "pgvector (the pg extra); none keeps it embedded (SQLite + FAISS under storage_dir).",
    )
    store_partitions: int = Field(
        0,
        ge=0,
        le=1024,
        description="PostgreSQL store: a NEW database's message and history tables are "
        "PARTITION BY HASH (namespace) into this many partitions (0: one plain table each). An existing database "
        "keeps the layout it was created with; a different value is refused (StoreMismatch): set it to what the "
        "database has, or `ltm migrate` into a new database (docs/DEPLOYMENT.md).",
    )
    store_hnsw_m: int = Field(
        16,
        ge=2,
        le=100,
        description="PostgreSQL store: HNSW graph degree (pgvector's m) of a namespace's index when "
        "it is built; pgvector's default. Higher finds more true neighbours in large namespaces and costs build and "
        "insert time (an index already built keeps its own; BENCHMARKS.md has the measured trade).",
    )
    store_hnsw_ef_construction: int = Field(
        64,
        ge=4,
        le=1000,
        description="PostgreSQL store: HNSW ef_construction of a namespace's index when it is "
        "built, at least 2 x store_hnsw_m (pgvector's rule); pgvector's default.",
    )
    redis_url: str | None = Field(None, description="redis:// URL; BrainMemory and MemoryFS use Redis when set.")
    redis_prefix: str = Field("ltm", description="Key prefix for everything ltm writes to Redis.")
    redis_wait_replicas: int = Field(
        0,
        ge=0,
        le=16,
        description="Replicas that must acknowledge each Redis write (WAIT) before it returns: "
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
        20_000,
        ge=1,
        description="Live vectors from which a namespace's index is an HNSW graph instead of a flat "
        "(exact) scan: past ~20,000 384-d vectors the scan costs more than the graph (docs/SEARCH_SPEED.md).",
    )
    hnsw_ef_search: int = Field(
        384,
        ge=1,
        description="HNSW efSearch floor (raised to 4*k for larger k): recall against latency. The "
        "embedded engine uses it in full from 300,000 vectors and scales it down with a smaller graph, to a third "
        "at 100,000 and below (docs/SEARCH_SPEED.md).",
    )
    snapshot_every: int = Field(
        10_000, ge=1, description="Rows added since the last FAISS snapshot that trigger a new one."
    )
    sqlite_synchronous: Literal["full", "normal"] = Field(
        "full",
        description="SQLite fsync policy of the long-term store. full: every acknowledged add is on disk "
        "(survives kill -9 and power loss; one fsync per commit). normal: WAL fsyncs only at checkpoints, adds "
        "are several times cheaper and still survive a process crash (kill -9), but an OS crash or power loss "
        "can drop the last acknowledged adds.",
    )
    staged_add: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Embedded store, sqlite_synchronous=full: whether an add of up to 64 new messages commits "
        "them to a staging table while the model embeds them, so the commit's fsync overlaps the model run "
        "(ltm/store/embedded/behind.py). auto: when the model's recent calls took 1 ms or more (beside a model that "
        "answers in microseconds there is nothing to overlap); always; never.",
    )
    write_behind: bool = Field(
        False,
        description="Embedded store: add() returns once the message is on disk and its vector is computed "
        "in batches by a background thread; every other call on the namespace waits for the pending vectors first, "
        "a background failure is raised (WriteBehindFailed) by the next call, and the next open embeds what a crash "
        "left (ltm/store/embedded/behind.py). One caller adding one message per call ingests faster; add() no longer "
        "reports a model failure itself.",
    )
    max_open_namespaces: int = Field(
        128,
        ge=0,
        description="Namespaces a process keeps open at once (about 3 files each); the least recently "
        "used idle ones are closed and reopen on their next call. 0: no bound (each open namespace keeps its files).",
    )
    history_limit: int = Field(
        100_000,
        ge=0,
        description="Newest ADD / UPDATE / DELETE events a namespace keeps in its history "
        "(MemoryStorage.history, `ltm history ID`); 0 records none.",
    )
    brain_ttl_seconds: int | None = Field(1800, ge=1, description="BrainMemory key TTL; none keeps forever.")
    max_content_bytes: int = Field(1_000_000, ge=1, description="Largest message content accepted, in UTF-8 bytes.")
    files_max_bytes: int = Field(256_000, ge=1, description="Largest MemoryFS file accepted, in UTF-8 bytes.")
    agents_md_max_bytes: int = Field(
        16_000, ge=1, description="Largest AGENTS.md accepted (detail belongs in skills), in UTF-8 bytes."
    )

    @field_validator("store_url")
    @classmethod
    def _store_scheme(cls, value: str | None) -> str | None:
        if value is not None and value.split("://", 1)[0] not in ("postgresql", "postgres"):
            raise ValueError(
                "store_url takes a postgresql://user:password@host:port/database URL (or none for the embedded store)"
            )
        return value

    @model_validator(mode="after")
    def _hnsw_build(self) -> Settings:
        if self.store_hnsw_ef_construction < 2 * self.store_hnsw_m:
            raise ValueError(
                f"store_hnsw_ef_construction ({self.store_hnsw_ef_construction}) must be at least 2 x "
                f"store_hnsw_m ({self.store_hnsw_m}): raise it to {2 * self.store_hnsw_m} or more"
            )
        return self

    @field_validator("storage_dir", "model_cache_dir", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return Path(value).expanduser() if isinstance(value, str | Path) else value

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``overrides`` > ``LTM_*`` variables of ``environ`` (default os.environ) > the config
        file (see the module docstring) > defaults.

        ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` are honoured when their ``LTM_`` twins are unset.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = config_file_values(env)
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
        data = self.model_dump(mode="json")  # SecretStr fields and URL passwords come out masked
        if data.get("openai_api_key"):
            data["openai_api_key"] = "***"
        return data

    # Secrets never leave through repr(), str() or JSON: the key is a SecretStr; the URLs (redis_url, and any
    # other *_url such as a database URL) stay plain str for the code that connects, with the password masked
    # in what is shown or serialised. model_dump() (Python mode, used by with_()) keeps the real values.
    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, _masked(name, value)

    @model_serializer(mode="wrap", when_used="json")
    def _mask_urls(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return {name: _masked(name, value) for name, value in data.items()} if isinstance(data, dict) else data


def _masked(name: str | None, value: Any) -> Any:
    return mask_url(value) if name is not None and name.endswith("_url") and isinstance(value, str) else value


def config_file(environ: Mapping[str, str]) -> tuple[Path, tuple[str, ...]] | None:
    """The config file in force and the table path inside it, or None (see the module docstring)."""
    named = environ.get(ENV_PREFIX + "CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"{ENV_PREFIX}CONFIG names {path}, which is not a file; fix the path or unset it")
        return path, (("tool", "ltm") if path.name == "pyproject.toml" else ())
    if Path("ltm.toml").is_file():
        return Path("ltm.toml"), ()
    if Path("pyproject.toml").is_file():
        return Path("pyproject.toml"), ("tool", "ltm")
    return None


def config_file_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings a config file gives (empty without one); unknown keys are refused by :meth:`Settings.load`."""
    found = config_file(environ)
    if found is None:
        return {}
    path, table = found
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}; fix it or set {ENV_PREFIX}CONFIG") from exc
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: [{'.'.join(table)}] must be a table of settings")
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {unknown}; known: {sorted(Settings.model_fields)}")
    return dict(data)


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
