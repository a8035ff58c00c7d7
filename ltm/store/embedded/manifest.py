"""``manifest.json``: what a namespace's vectors mean, checked every time the namespace is opened.

Vectors from two embedding models are not comparable, so opening a namespace that holds vectors with another
model (or another dimension) is refused with :class:`StoreMismatch` rather than silently mixing them. The model is
recorded with the first vector (the log's ``meta`` table, in the transaction that writes it: see
:meth:`ltm.store.embedded.mirror.IndexMirror.writing`): a namespace without vectors takes any model, and the
manifest of one names the model that opened it last, nothing more.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ltm.errors import StoreCorrupted, StoreMismatch
from ltm.store.embedded.atomic import atomic_write
from ltm.store.validation import held_by_another_model

__all__ = ["METRIC", "MIGRATE", "SCHEMA_VERSION", "Manifest"]

# 1: float32 vectors in SQLite. 2: float16 vectors in SQLite and in the snapshot (a schema-1 namespace is
# migrated in place when opened: see ltm.store.embedded.migrations.migrate). 3: the keyword index stems (porter) and
# holds the message's date; a schema-2 namespace gets its keyword index rebuilt from the log when opened. 4: scope /
# expiry columns and the history table (added by MessageLog whenever it opens an older file, filled from each
# row's metadata: ltm.store.embedded.scopes.add_scope_columns).
SCHEMA_VERSION = 4
MIGRATE = (
    "migrate: read every message (MemoryStorage.recent / search) with the old model, add_batch them into a new "
    "namespace opened with the new model, then clean() the old one"
)
METRIC = "cosine (inner product over L2-normalised vectors, stored as float16)"


@dataclass
class Manifest:
    """The namespace's schema version, embedding model, dimension (None until the first vector), metric."""

    namespace: str
    embedding_model: str
    dim: int | None = None
    metric: str = METRIC
    index_type: str = "flat"
    schema_version: int = SCHEMA_VERSION

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        """The manifest at ``path``, or None when there is none yet."""
        try:
            data: dict[str, Any] = json.loads(path.read_text("utf-8"))
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreCorrupted(
                f"{path} is unreadable ({exc}); restore it from a backup or delete it to have it rewritten"
            ) from exc

    def write(self, path: Path) -> None:
        """Write atomically (temp file, fsync, rename)."""
        atomic_write(path, json.dumps(asdict(self), indent=2, sort_keys=True).encode("utf-8"))

    def check(self, model: str, path: Path, held: int) -> None:
        """Refuse a newer schema, or another embedding model while the namespace holds ``held`` > 0 messages'
        vectors, saying how to migrate."""
        if self.schema_version > SCHEMA_VERSION:
            raise StoreMismatch(
                f"{path.parent} was written by a newer ltm (schema {self.schema_version} > {SCHEMA_VERSION}); "
                "upgrade ltm to read it"
            )
        if self.embedding_model != model and held:
            raise held_by_another_model(self.namespace, held, self.embedding_model, model, MIGRATE)

    def check_dim(self, dim: int, path: Path) -> bool:
        """True when the dimension was unknown and is now recorded (caller rewrites the manifest)."""
        if self.dim is None:
            self.dim = dim
            return True
        if self.dim != dim:
            raise StoreMismatch(
                f"namespace {self.namespace!r} holds {self.dim}-dimensional vectors but the embedding "
                f"returned {dim}; use the model the namespace was built with ({self.embedding_model!r})"
            )
        return False
