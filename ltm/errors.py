"""The one exception tree of ltm.

Every error ltm raises on purpose is an ``LTMError``; backend exceptions (sqlite3, redis, faiss, openai)
are translated at the boundary with ``raise ... from exc`` so callers catch one family::

    LTMError
     ├── ConfigError          a setting is missing or contradictory
     ├── InvalidInput         bad argument or content (also a ValueError)
     │    └── ValidationFailed    a memory file or payload failed validation
     ├── NotFound             the thing asked for does not exist (also a KeyError)
     ├── StoreMismatch        a store was opened with another model, dimension or schema
     ├── StoreCorrupted       a store's files cannot be read back
     ├── BackendUnavailable   Redis, SQLite, an LLM or embedding server cannot be reached (after retries)
     ├── LLMError             a model refused the request or answered nonsense
     ├── WriteBehindFailed    a write_behind add's embedding failed after add returned (the message is kept)
     ├── AuthRequired         the service needs a valid API key (HTTP 401)
     ├── Forbidden            the key may not do this: another namespace, or a write when read-only (403)
     └── Conflict             the request clashes with the stored state (409)
    InvalidInput
     └── PayloadTooLarge      a request body or list is over the service's limit (413)

Messages say what to do about the problem, not only what it is.
"""

from __future__ import annotations

__all__ = [
    "AuthRequired",
    "BackendUnavailable",
    "ConfigError",
    "Conflict",
    "Forbidden",
    "InvalidInput",
    "LLMError",
    "LTMError",
    "NotFound",
    "PayloadTooLarge",
    "StoreCorrupted",
    "StoreMismatch",
    "ValidationFailed",
    "WriteBehindFailed",
]


class LTMError(Exception):
    """Root of every error ltm raises on purpose."""


class ConfigError(LTMError):
    """A setting is missing, malformed or contradictory."""


class InvalidInput(LTMError, ValueError):
    """An argument or a piece of content cannot be accepted; nothing was stored."""


class ValidationFailed(InvalidInput):
    """A memory file or structured payload failed validation; the message says what to fix."""


class NotFound(LTMError, KeyError):
    """The message, file, version or key asked for does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class StoreMismatch(LTMError):
    """A store was reopened with another embedding model, dimension, metric or schema."""


class StoreCorrupted(LTMError):
    """A store's files cannot be read back; restore from a backup or export."""


class BackendUnavailable(LTMError):
    """A backend (Redis, SQLite, a vector engine, an LLM or embedding server) could not be reached or failed
    mid-operation, after the configured retries."""


class LLMError(LTMError):
    """A model (LLM or embedding) refused the request, failed, or gave an answer that could not be used."""


class WriteBehindFailed(LTMError):
    """Embedding messages that ``add`` had already stored with ``Settings.write_behind`` failed (its cause is
    the model's error). The messages stay stored and are embedded again by the next call that reads the
    namespace."""


class AuthRequired(LTMError):
    """The service needs an API key and got none, or one it does not know (revoked keys included)."""


class Forbidden(LTMError):
    """The API key is valid but may not do this: another namespace, or a write with a read-only key."""


class Conflict(LTMError):
    """The request clashes with the stored state (e.g. a change someone else is approving)."""


class PayloadTooLarge(InvalidInput):
    """A request body (or the number of items in it) is over the service's limit; send smaller batches."""
