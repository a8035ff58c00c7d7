"""Commands of ltm as a service: ``serve`` (HTTP API + inspector), ``keys`` (API keys), ``mcp`` (MCP server).

They need the ``service`` extra (``pip install '/path/to/ltm[service]'`` from the checkout); the work is done in
:mod:`ltm.service.commands`.
"""

from __future__ import annotations

import argparse
from types import ModuleType

from ltm.cli.common import AddCommand, Options, settings_from
from ltm.errors import ConfigError

COMMANDS = {
    "serve": "serve the HTTP API and the web inspector (/ui) on a port",
    "keys": "create, list or revoke the API keys of the service",
    "mcp": "run the MCP server (stdio or streamable HTTP) over the memory",
}


def _commands() -> ModuleType:
    try:
        from ltm.service import commands
    except ImportError as exc:
        raise ConfigError(
            f"the service needs its extra: pip install '/path/to/ltm[service]' (the ltm checkout; "
            f"{exc.name} is missing)"
        ) from exc
    return commands


def cmd_serve(args: argparse.Namespace) -> int:
    commands = _commands()
    from ltm.service.server import ServerLimits

    limits = ServerLimits(request_timeout=args.request_timeout, max_connections=args.max_connections)
    return int(
        commands.serve(
            settings_from(args),
            host=args.host,
            port=args.port,
            auth=not args.no_auth,
            max_body_bytes=args.max_body_bytes,
            mcp=args.mcp,
            log_level=args.log_level,
            allowed_hosts=args.allow_host,
            server_limits=limits,
        )
    )


def cmd_keys(args: argparse.Namespace) -> int:
    commands = _commands()
    settings = settings_from(args)
    if args.keys_command == "create":
        return int(commands.create_key(settings, args.namespaces, read_only=args.read_only, label=args.label))
    if args.keys_command == "list":
        return int(commands.list_keys(settings, as_json=args.json))
    return int(commands.revoke_key(settings, args.key_id))


def cmd_mcp(args: argparse.Namespace) -> int:
    return int(
        _commands().run_mcp(
            settings_from(args),
            transport=args.transport,
            host=args.host,
            port=args.port,
            auth=not args.no_auth,
            log_level=args.log_level,
        )
    )


def _listen(p: argparse.ArgumentParser, port: int) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=port, help=f"port (default {port})")
    p.add_argument(
        "--no-auth",
        action="store_true",
        help="no API keys: every caller may do everything (refused unless --host is loopback)",
    )


def register(add: AddCommand, opts: Options) -> None:
    p = add("serve")
    _listen(p, 8765)
    p.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024, help="largest request body (8 MiB)")
    p.add_argument("--mcp", action="store_true", help="also serve MCP (streamable HTTP) at /mcp/, same keys")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer besides loopback ones, e.g. memory.example.org or *.example.org "
        "(repeatable; with keys and none given, every name is answered)",
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=15.0,
        help="seconds a client may take to send a whole request (default 15)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=200,
        help="connections served at once; one more is answered 503 (default 200)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the server's log: one line per request at info (default info)",
    )
    p.set_defaults(func=cmd_serve)

    p = add("keys")
    keys = p.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = keys.add_parser(
        "create", help="create a key; it is printed once, only its hash is stored", parents=[opts.common]
    )
    create.add_argument(
        "--namespaces",
        action="append",
        required=True,
        metavar="PATTERN",
        help="namespace name or shell pattern the key may use, e.g. 'team-a/*' (repeatable)",
    )
    create.add_argument("--read-only", action="store_true", help="the key may read but not write")
    create.add_argument("--label", default="", help="a note shown by `ltm keys list`")
    listing = keys.add_parser(
        "list", help="list live keys (ids, namespaces, mode; never the keys)", parents=[opts.common]
    )
    listing.add_argument("--json", action="store_true", help="one JSON object per key")
    revoke = keys.add_parser("revoke", help="revoke a key by its id", parents=[opts.common])
    revoke.add_argument("key_id", help="the id `ltm keys list` shows (the part after ltm_)")
    p.set_defaults(func=cmd_keys)

    p = add("mcp")
    p.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (key from LTM_API_KEY) or streamable HTTP at /mcp/ (Bearer keys)",
    )
    _listen(p, 8766)
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="the MCP server's log, on stderr (default warning)",
    )
    p.set_defaults(func=cmd_mcp)
