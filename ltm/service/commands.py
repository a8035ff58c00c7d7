"""What ``ltm serve``, ``ltm keys`` and ``ltm mcp`` do (the CLI module only parses their arguments)."""

from __future__ import annotations

import ipaddress
import json
import logging
import sys
from collections.abc import Sequence
from typing import TextIO

from ltm.config import Settings
from ltm.errors import ConfigError
from ltm.service.keys import KeyStore
from ltm.service.server import ServerLimits
from ltm.service.state import Limits

__all__ = ["create_key", "is_loopback", "list_keys", "revoke_key", "run_mcp", "serve"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on the local host (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_open(host: str, auth: bool) -> None:
    if not auth and not is_loopback(host):
        raise ConfigError(
            f"--no-auth is refused on {host!r}: without keys anyone who reaches the port can read "
            "and write every namespace. Listen on 127.0.0.1, or create keys with `ltm keys create`"
        )


def _logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def serve(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    auth: bool = True,
    max_body_bytes: int = Limits.max_body_bytes,
    mcp: bool = False,
    log_level: str = "info",
    allowed_hosts: Sequence[str] = (),
    server_limits: ServerLimits | None = None,
) -> int:
    """Run the HTTP API (and the inspector, and MCP at ``/mcp/`` with ``mcp``) until interrupted.
    ``allowed_hosts`` are the ``Host`` names answered besides loopback ones (see :mod:`ltm.service.guards`)."""
    import uvicorn

    from ltm.service.app import create_app
    from ltm.service.server import uvicorn_config

    _check_open(host, auth)
    _logging(log_level)
    app = create_app(
        settings,
        auth=auth,
        limits=Limits(max_body_bytes=max_body_bytes),
        mcp_path="/mcp" if mcp else None,
        allowed_hosts=allowed_hosts,
    )
    # uvicorn's access log prints request URLs (namespace names, query strings): ltm.service logs its own lines.
    config = uvicorn_config(
        app, limits=server_limits, host=host, port=port, access_log=False, log_level=log_level, log_config=None
    )
    uvicorn.Server(config).run()
    return 0


def run_mcp(
    settings: Settings,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8766,
    auth: bool = True,
    log_level: str = "warning",
) -> int:
    """Run the MCP server on stdio (key from ``LTM_API_KEY``) or streamable HTTP (Bearer keys)."""
    from ltm.service.mcp import build_mcp, mcp_http_app, stdio_key
    from ltm.service.state import ServiceState

    state = ServiceState(settings, auth=auth)
    try:
        if transport == "stdio":
            key = stdio_key()
            if auth and (key is None or state.keys.lookup(key) is None):
                raise ConfigError(
                    "set LTM_API_KEY to a key from `ltm keys create` in the MCP client's config "
                    "(or start with --no-auth for a local single-user setup)"
                )
            logging.basicConfig(level=log_level.upper(), stream=sys.stderr)  # stdout carries the protocol
            build_mcp(state, stdio_key=key).run("stdio")
            return 0
        import uvicorn

        from ltm.service.guards import HostGuard, SecurityHeaders
        from ltm.service.server import uvicorn_config

        _check_open(host, auth)
        _logging(log_level)
        app = mcp_http_app(state, path="/mcp")
        app.add_middleware(HostGuard, open_server=not auth)
        app.add_middleware(SecurityHeaders)
        uvicorn.Server(
            uvicorn_config(app, host=host, port=port, access_log=False, log_level=log_level, log_config=None)
        ).run()
        return 0
    finally:
        state.close()


def create_key(
    settings: Settings,
    namespaces: list[str],
    *,
    read_only: bool = False,
    label: str = "",
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Create a key, print it once on ``out`` (its id and scope on ``err``)."""
    out, err = out or sys.stdout, err or sys.stderr
    store = KeyStore(settings)
    try:
        key, record = store.create(namespaces, read_only=read_only, label=label)
    finally:
        store.close()
    mode = "read-only" if record.read_only else "read-write"
    print(f"created key {record.id} ({mode}) for {', '.join(record.namespaces)}; it is shown only now:", file=err)
    print(key, file=out)
    return 0


def list_keys(settings: Settings, *, as_json: bool = False, out: TextIO | None = None) -> int:
    """Print the live keys' ids, scopes and modes (never the keys)."""
    out = out or sys.stdout
    store = KeyStore(settings)
    try:  # no key table yet: no keys, and listing creates no data root (only `keys create` does)
        records = store.list() if store.path.is_file() else []
    finally:
        store.close()
    for r in records:
        if as_json:
            print(
                json.dumps(
                    {
                        "id": r.id,
                        "namespaces": list(r.namespaces),
                        "read_only": r.read_only,
                        "label": r.label,
                        "created_at": r.created_at,
                    }
                ),
                file=out,
            )
        else:
            mode = "read-only " if r.read_only else "read-write"
            print(f"{r.id}  {mode}  {' '.join(r.namespaces)}  {r.label}".rstrip(), file=out)
    if not records and not as_json:
        print("no keys: create one with `ltm keys create --namespaces 'team-a/*'`", file=out)
    return 0


def revoke_key(settings: Settings, key_id: str, *, out: TextIO | None = None) -> int:
    """Revoke a key by id; the server refuses it from its next request on."""
    out = out or sys.stdout
    store = KeyStore(settings)
    try:
        store.revoke(key_id)
    finally:
        store.close()
    print(f"revoked key {key_id}", file=out)
    return 0
