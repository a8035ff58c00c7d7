"""Commands over the data root: stats of every namespace, wipe."""

from __future__ import annotations

import argparse
import shutil
import sys

from ltm.cli.common import EXIT_DECLINED, EXIT_OK, AddCommand, Options, settings_from
from ltm.errors import InvalidInput
from ltm.store import namespace_path, namespaces

COMMANDS = {
    "stats": "per namespace: messages, bytes on disk, model, index type",
    "wipe": "delete a namespace (or --all data); asks first",
}


def cmd_stats(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    settings = settings_from(args)
    table = Table(title=f"namespaces under {settings.storage_dir}")
    for column in ("kind", "namespace", "messages", "bytes on disk", "model", "index"):
        table.add_column(column, justify="right" if column in ("messages", "bytes on disk") else "left")
    rows = 0
    for info in namespaces(settings, args.only_kind):
        messages = f"{info.messages:,}" if info.messages is not None else "unreadable"
        table.add_row(info.kind, info.namespace, messages, f"{info.bytes_on_disk:,}", str(info.embedding_model),
                      str(info.index_type))
        if info.problem:
            print(f"ltm: {info.kind}/{info.namespace}: {info.problem}", file=sys.stderr)
        rows += 1
    if rows:
        Console(width=max(100, shutil.get_terminal_size().columns)).print(table)
    else:
        print(f"no namespaces under {settings.storage_dir}")
    return EXIT_OK


def cmd_wipe(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if args.all:
        target, what = settings.storage_dir, f"ALL ltm data under {settings.storage_dir}"
    else:
        target, what = namespace_path(settings, args.kind, args.namespace), f"namespace {args.kind}/{args.namespace}"
    if not target.exists():
        print(f"nothing to wipe: {what} does not exist")
        return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"wipe deletes {what}; pass --yes to confirm when not at a terminal")
        answer = input(f"Delete {what}? This cannot be undone. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return EXIT_DECLINED
    if args.all:  # the data root stays, with its README; everything else in it goes
        for child in target.iterdir():
            if child.name == "README.md":
                continue
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
    else:
        shutil.rmtree(target)
    print(f"wiped {what}")
    return EXIT_OK



def register(add: AddCommand, opts: Options) -> None:
    p = add("stats")
    p.add_argument("--kind", dest="only_kind", help="only namespaces of this kind")
    p.set_defaults(func=cmd_stats)

    p = add("wipe", opts.namespace)
    p.add_argument("--all", action="store_true", help="every namespace under the data root")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask")
    p.set_defaults(func=cmd_wipe)
