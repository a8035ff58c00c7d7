"""``ltm forget``: erase memories with every copy the store keeps (``MemoryStorage.forget``), or one user across every
memory kind (``ltm.forget_user``), and print the receipt (``--json``: the receipt as one JSON object).

Unlike ``delete`` / ``delete-where`` (whose old contents stay in ``history`` on purpose) nothing of the text is left;
see docs/forget.md for what each engine guarantees."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ltm.cli.common import (
    EXIT_DECLINED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    AddCommand,
    Options,
    filters_from,
    open_storage,
    settings_from,
)
from ltm.errors import InvalidInput

__all__ = ["COMMANDS", "register"]

COMMANDS = {
    "forget": "erase memories and every copy of them (--id, --where) or a user everywhere (--user); prints a receipt",
}


def cmd_forget(args: argparse.Namespace) -> int:
    filters = filters_from(args)
    ids = [i for group in args.ids or () for i in group]
    if args.user is not None:
        if ids or filters:
            raise InvalidInput("--user erases the user everywhere: give it alone, without --id or a filter")
        if not _confirmed(args, f"erase user {args.user!r} from every memory kind?"):
            return EXIT_DECLINED
        from ltm.forget import forget_user

        return _show(args, forget_user(args.user, settings_from(args), reason=args.reason).to_dict())
    if not ids and not filters:
        raise InvalidInput(
            "forget needs --id ID..., a filter (--where JSON or --role/--meta...) or --user; nothing was erased"
        )
    with open_storage(args, existing=True, embeds=False) as store:
        if not ids and not args.yes:
            # a local store counts the matches; a server's (--url) answers only its total
            matching = f"the {store.count(filters)}" if hasattr(store, "history") else "the"
            if not _confirmed(args, f"erase {matching} matching messages of {args.namespace}?"):
                return EXIT_DECLINED
        receipt = store.forget(ids or None, filters=filters, reason=args.reason)
    code = _show(args, receipt.to_dict())
    return EXIT_NOT_FOUND if ids and receipt.not_found and not receipt.ids else code


def _confirmed(args: argparse.Namespace, question: str) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise InvalidInput(f"{question.rstrip('?')}: pass --yes to confirm when not at a terminal")
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _show(args: argparse.Namespace, receipt: dict[str, Any]) -> int:
    if args.format == "json":
        print(json.dumps(receipt, ensure_ascii=False))
        return EXIT_OK
    if "user_id" in receipt:
        print(
            f"forgot user {receipt['user_id']}: {receipt['removed']} memories, {len(receipt['stores'])} namespaces, "
            f"{len(receipt['chats'])} chats, {len(receipt['files'])} file scopes, {receipt['kv_keys']} KV keys"
        )
        for skipped in receipt["skipped"]:
            print(f"ltm: skipped {skipped}", file=sys.stderr)
        return EXIT_OK
    print(
        f"forgot {receipt['removed']} ({receipt['rows']} rows, {receipt['keyword_entries']} keyword entries, "
        f"{receipt['vectors']} vectors, {receipt['history_scrubbed']} history contents, {receipt['staged']} staged)"
    )
    if receipt["not_found"]:
        print(f"ltm: not found: {', '.join(receipt['not_found'])}", file=sys.stderr)
    return EXIT_OK


def register(add: AddCommand, opts: Options) -> None:
    p = add("forget", opts.namespace, opts.filters, opts.output)
    p.add_argument("--id", dest="ids", action="append", nargs="+", metavar="ID", help="message ids (repeatable)")
    p.add_argument("--user", metavar="USER_ID", help="erase this user from every memory kind (alone)")
    p.add_argument("--reason", help="why, kept in each FORGET history event (no content is kept)")
    p.add_argument("--yes", action="store_true", help="do not ask (a filter or --user asks first)")
    p.set_defaults(func=cmd_forget)
