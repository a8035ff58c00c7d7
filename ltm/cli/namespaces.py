"""Commands over the data root: stats of every namespace, wipe."""

from __future__ import annotations

import argparse
import shutil
import sys

from ltm.cli.common import EXIT_DECLINED, EXIT_OK, AddCommand, Options, resolve_kind, settings_from
from ltm.cli.output import json_line, visible
from ltm.errors import InvalidInput
from ltm.store import namespace_path, namespaces

COMMANDS = {
    "stats": "per namespace: messages, bytes on disk, model, index type",
    "wipe": "delete a namespace (or --all data); asks first",
}


RICH_ROWS = 200  # above this many namespaces, `ltm stats` prints plain aligned columns


def cmd_stats(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if args.format == "json":  # one object per namespace, as every --json of the CLI prints
        for info in namespaces(settings, args.only_kind):
            print(
                json_line(
                    {
                        "kind": info.kind,
                        "namespace": info.namespace,
                        "messages": info.messages,
                        "bytes_on_disk": info.bytes_on_disk,
                        "embedding_model": info.embedding_model,
                        "index_type": info.index_type,
                        "dim": info.dim,
                        "path": str(info.path),
                        "problem": info.problem,
                    }
                )
            )
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    columns = ("kind", "namespace", "messages", "bytes on disk", "model", "index")
    right = {"messages", "bytes on disk"}
    rows: list[tuple[str, ...]] = []
    for info in namespaces(settings, args.only_kind):
        messages = f"{info.messages:,}" if info.messages is not None else "unreadable"
        # every cell shown as text: a name is data, never markup ("a[/b]" would end a tag) nor an escape sequence
        cells = (
            info.kind,
            info.namespace,
            messages,
            f"{info.bytes_on_disk:,}",
            str(info.embedding_model),
            str(info.index_type),
        )
        rows.append(tuple(visible(cell) for cell in cells))
        if info.problem:
            print(visible(f"ltm: {info.kind}/{info.namespace}: {info.problem}"), file=sys.stderr)
    root = visible(settings.storage_dir)
    if not rows:
        print(f"no namespaces under {root}")
    elif len(rows) > RICH_ROWS:  # a framed table costs ~0.4 ms a row to lay out: 10,000 namespaces took 4 s
        print(f"namespaces under {root} ({len(rows):,})")
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
        for row in (columns, *rows):
            print(
                "  ".join(
                    cell.rjust(w) if col in right else cell.ljust(w)
                    for cell, w, col in zip(row, widths, columns, strict=True)
                ).rstrip()
            )
    else:
        table = Table(title=Text(f"namespaces under {root}"))
        for column in columns:
            table.add_column(column, justify="right" if column in right else "left")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        Console(width=max(100, shutil.get_terminal_size().columns)).print(table)
    return EXIT_OK


def cmd_wipe(args: argparse.Namespace) -> int:
    """Delete what ltm made and nothing else: namespace folders identified by their manifest (only their ltm
    files; a foreign file inside stays, with its folder), the embedded KV file, then folders left empty."""
    from ltm.cli.ownership import find_owned, remove_owned

    settings = settings_from(args)
    root = settings.storage_dir
    if args.all:
        owned = find_owned(root)
        what = (
            f"{len(owned.namespaces)} namespaces" + (" and the key-value store" if owned.kv else "") + f" under {root}"
        )
        if not owned:
            if owned.foreign:
                raise InvalidInput(
                    f"{root} does not look like an ltm storage root (no namespace folder with a "
                    "manifest.json, no kv.sqlite); nothing deleted. Pass the folder ltm writes to"
                )
            print(visible(f"nothing to wipe: no ltm data under {root}"))
            return EXIT_OK
    else:
        resolve_kind(args, settings)
        directory = namespace_path(settings, args.kind, args.namespace)
        owned = find_owned(root, only=directory)
        what = f"namespace {args.kind}/{args.namespace}"
        if not owned:
            print(visible(f"nothing to wipe: {what} does not exist"))
            return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"wipe deletes {what}; pass --yes to confirm when not at a terminal")
        answer = input(visible(f"Delete {what}? This cannot be undone. [y/N] "))
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return EXIT_DECLINED
    kept = remove_owned(root, owned)
    print(
        visible(
            f"wiped {what}"
            + (f"; kept {len(kept)} files ltm did not make: {', '.join(map(str, kept[:5]))}" if kept else "")
        )
    )
    return EXIT_OK


def register(add: AddCommand, opts: Options) -> None:
    p = add("stats", opts.output)
    p.add_argument("--kind", dest="only_kind", help="only namespaces of this kind")
    p.set_defaults(func=cmd_stats)

    p = add("wipe", opts.namespace)
    p.add_argument("--all", action="store_true", help="every namespace under the data root")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask")
    p.set_defaults(func=cmd_wipe)
