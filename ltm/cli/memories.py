"""Commands that treat a namespace as a document store: list (filtered, paged), update, history, delete-where.

Filters are the store's one filter language, given as JSON with ``--where`` (see ``ltm.store`` filters), e.g.
``--where '{"run_id": "r1", "created_at": {"gte": "2024-05-01"}}'``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ltm.cli.common import (
    EXIT_DECLINED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    AddCommand,
    Options,
    filters_from,
    no_hits,
    open_storage,
    parse_meta,
    print_messages,
)
from ltm.cli.output import format_time, json_line, visible
from ltm.cli.times import add_time_options, times_from
from ltm.errors import InvalidInput

COMMANDS = {
    "list": "list a namespace's messages, oldest first, filtered with --where (paged with --cursor)",
    "update": "change a message's content and/or metadata (recorded in its history)",
    "history": "show a message's ADD / UPDATE / DELETE events with old and new values",
    "delete-where": "delete every message matching a filter (asks first unless --yes)",
}


def _local(args: argparse.Namespace, *, embeds: bool = False) -> Any:
    """The namespace's local store: these commands are not served by ``ltm serve`` yet, so --url is refused.
    ``embeds``: the command embeds text (otherwise any namespace opens, whatever its model)."""
    store = open_storage(args, existing=True, embeds=embeds)
    if not hasattr(store, "history"):
        store.close()
        raise InvalidInput(f"`ltm {args.command}` works on local files only for now; drop --url / LTM_URL")
    return store


def cmd_list(args: argparse.Namespace) -> int:
    with _local(args) as store:
        page = store.list(filters_from(args), limit=args.limit, cursor=args.cursor, **times_from(args))
        print_messages(args, page.messages)
    if page.next_cursor:
        print(f"more: --cursor {page.next_cursor}", file=sys.stderr)
    return EXIT_OK if page.messages else no_hits(f"{args.kind}/{args.namespace}")


def cmd_update(args: argparse.Namespace) -> int:
    content = " ".join(args.content) if args.content else None
    metadata = parse_meta(args.set) if args.set else None
    with _local(args, embeds=content is not None) as store:
        message = store.update(args.id, content=content, metadata=metadata)
    if args.format == "json":
        print_messages(args, [message])
    else:
        print(f"updated {visible(message.id)}")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    with _local(args) as store:
        events = store.history(args.id)
    for event in events:
        if args.format == "json":
            print(json_line(event.to_dict()))
            continue
        old = event.old.content if event.old is not None else "-"
        new = event.new.content if event.new is not None else "-"
        print(f"{format_time(event.at, utc=args.utc)}  {event.event:<6}  {old!r} -> {new!r}")
    if not events:
        print(visible(f"ltm: no history for message {args.id} in {args.kind}/{args.namespace}"), file=sys.stderr)
    return EXIT_OK if events else EXIT_NOT_FOUND


def cmd_delete_where(args: argparse.Namespace) -> int:
    filters = filters_from(args)
    if not filters:
        raise InvalidInput("delete-where needs a filter (--where JSON or --role/--meta...); nothing was deleted")
    with _local(args) as store:
        matching = store.count(filters)
        if not args.yes:
            if not sys.stdin.isatty():
                raise InvalidInput(f"{matching} messages match; pass --yes to delete them without a prompt")
            answer = input(visible(f"delete {matching} messages from {args.kind}/{args.namespace}? [y/N] "))
            if answer.strip().lower() not in ("y", "yes"):
                return EXIT_DECLINED
        deleted = store.delete_where(filters)
    print(f"deleted {deleted}")
    return EXIT_OK


def register(add: AddCommand, opts: Options) -> None:
    ns, filt = opts.namespace, opts.filters
    p = add("list", ns, filt, opts.output)
    p.add_argument("--limit", type=int, default=100, help="messages per page (default 100)")
    p.add_argument("--cursor", help="the cursor printed after the previous page")
    add_time_options(p)
    p.set_defaults(func=cmd_list)

    p = add("update", ns, opts.output)
    p.add_argument("id", help="message id")
    p.add_argument("content", nargs="*", help="the new content (none: keep it)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="metadata to merge in (repeatable; JSON values; null removes the key)",
    )
    p.set_defaults(func=cmd_update)

    p = add("history", ns, opts.output)
    p.add_argument("id", help="message id")
    p.set_defaults(func=cmd_history)

    p = add("delete-where", ns, filt)
    p.add_argument("--yes", action="store_true", help="do not ask")
    p.set_defaults(func=cmd_delete_where)
