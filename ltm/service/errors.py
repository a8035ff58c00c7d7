"""Errors over HTTP: every failure is JSON ``{"error": "<LTMError class name>", "message": "..."}``.

The status comes from the error's class (the first match walking its MRO), so a subclass added later lands
on its parent's status without touching this table:

=====================================  ======
InvalidInput, ValidationFailed,        400
ConfigError
AuthRequired                           401
Forbidden                              403
NotFound                               404
Conflict, StoreMismatch                409
PayloadTooLarge                        413
BackendUnavailable, LLMError,          503
StoreCorrupted
=====================================  ======

Messages are the library's own (they name the fix) and never carry a key or a URL: the service never puts
one into an error.
"""

from __future__ import annotations

from ltm.errors import (
    AuthRequired,
    BackendUnavailable,
    ConfigError,
    Conflict,
    Forbidden,
    InvalidInput,
    LLMError,
    LTMError,
    NotFound,
    PayloadTooLarge,
    StoreCorrupted,
    StoreMismatch,
)

__all__ = ["STATUS", "AuthRequired", "Conflict", "Forbidden", "PayloadTooLarge", "error_body", "status_of"]

STATUS: tuple[tuple[type[LTMError], int], ...] = (
    (PayloadTooLarge, 413),
    (AuthRequired, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (StoreMismatch, 409),
    (InvalidInput, 400),
    (ConfigError, 400),
    (BackendUnavailable, 503),
    (LLMError, 503),
    (StoreCorrupted, 503),
)


def status_of(error: LTMError) -> int:
    """The HTTP status for ``error``: the first row of :data:`STATUS` it is an instance of, else 500."""
    for cls, status in STATUS:
        if isinstance(error, cls):
            return status
    return 500


_UNAVAILABLE = {
    "BackendUnavailable": "a storage backend of the server is unavailable; retry later (the operator's log says which)",
    "LLMError": "the server's LLM failed after its retries; retry later",
    "StoreCorrupted": "a store of the server cannot be read back; the operator must restore it",
}


def error_body(error: BaseException) -> dict[str, str]:
    """The JSON body of an error response. A 503's own message may name a backend's host and port, so the
    client gets a fixed sentence instead; 4xx messages are about the request and are passed on."""
    name = type(error).__name__
    if isinstance(error, LTMError) and status_of(error) == 503:
        return {"error": name, "message": _UNAVAILABLE.get(name, "the server cannot serve this now; retry later")}
    return {"error": name, "message": str(error)}
