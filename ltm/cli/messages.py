"""Commands over one namespace's messages: add, search, recent, export, import, delete."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from itertools import islice
from typing import Any

from ltm.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    AddCommand,
    Options,
    filters_from,
    open_storage,
    parse_meta,
    print_messages,
    progress_bar,
    read_jsonl,
)
from ltm.errors import InvalidInput, NotFound
from ltm.message import Message

INGEST_CHUNK = 256

COMMANDS = {
    "add": "add a message (text), or JSONL messages from stdin",
    "search": "search a namespace (hybrid, dense or keyword) with filters",
    "recent": "show the most recent messages of a namespace",
    "export": "write a namespace as JSONL (optionally with embeddings)",
    "import": "read JSONL messages into a namespace (lossless round trip with export)",
    "delete": "delete messages by id",
}


def _ingest(store: Any, items: Iterator[tuple[Message, list[float] | None]], label: str) -> tuple[int, int]:
    added = seen = 0
    with progress_bar() as progress:
        task = progress.add_task(label, total=None)
        while chunk := list(islice(items, INGEST_CHUNK)):
            added += _flush(store, chunk)
            seen += len(chunk)
            progress.update(task, advance=len(chunk))
    return added, seen


def _flush(store: Any, chunk: list[tuple[Message, list[float] | None]]) -> int:
    messages = [m for m, _ in chunk]
    vectors = [v for _, v in chunk]
    if all(v is not None for v in vectors):
        return int(store.add_batch(messages, vectors=vectors))
    return int(store.add_batch(messages))


def cmd_add(args: argparse.Namespace) -> int:
    with open_storage(args) as store:
        if args.text and args.text != ["-"]:
            message = Message(" ".join(args.text), role=args.role, cause_by=args.cause_by or "",
                              sent_from=args.sent_from or "", metadata=parse_meta(args.meta))
            added = store.add(message)
            print(message.id if added else f"{message.id} (already stored)")
            return EXIT_OK
        if sys.stdin.isatty():
            raise InvalidInput("give the text to add, or pipe JSONL messages on stdin (one object per line)")
        added, seen = _ingest(store, read_jsonl(sys.stdin), "adding")
        print(f"added {added} of {seen} messages to {args.kind}/{args.namespace}")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    with open_storage(args) as store:
        hits = store.search(args.query, k=args.k, mode=args.mode, filters=filters_from(args))
        if args.json:
            for hit in hits:
                print(json.dumps({"score": hit.score, "signals": list(hit.signals), **hit.message.to_dict()}))
        else:
            print_messages([h.message for h in hits], sys.stdout, [f"{h.score:8.4f}" for h in hits])
    return EXIT_OK if hits else EXIT_NOT_FOUND


def cmd_recent(args: argparse.Namespace) -> int:
    with open_storage(args) as store:
        print_messages(store.recent(args.n), sys.stdout)
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with open_storage(args) as store:
        out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        try:
            n = 0
            for message, vector in store.export(with_vectors=args.with_embeddings):
                data = message.to_dict()
                if vector is not None:
                    data["embedding"] = [round(float(x), 7) for x in vector]
                    data["embedding_model"] = store.embedder.model
                out.write(json.dumps(data, ensure_ascii=False) + "\n")
                n += 1
        finally:
            if out is not sys.stdout:
                out.close()
    print(f"exported {n} messages from {args.kind}/{args.namespace}", file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")  # noqa: SIM115
    try:
        with open_storage(args) as store:
            added, seen = _ingest(store, read_jsonl(source), "importing")
    finally:
        if source is not sys.stdin:
            source.close()
    print(f"imported {added} new of {seen} messages into {args.kind}/{args.namespace}")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    with open_storage(args) as store:
        missing = [i for i in args.ids if not store.delete(i)]
    if missing:
        raise NotFound(f"no message with id {', '.join(missing)} in {args.kind}/{args.namespace} (see `ltm recent`)")
    print(f"deleted {len(args.ids)}")
    return EXIT_OK



def register(add: AddCommand, opts: Options) -> None:
    ns, filt = opts.namespace, opts.filters
    p = add("add", ns)
    p.add_argument("text", nargs="*", help="the message text; none or '-' reads JSONL from stdin")
    p.add_argument("--role", default="user", help="the message's role (default: user)")
    p.add_argument("--cause-by", help="the action that produced it")
    p.add_argument("--sent-from", help="its sender")
    p.add_argument("--meta", action="append", metavar="KEY=VALUE", help="metadata (repeatable; values may be JSON)")
    p.set_defaults(func=cmd_add)

    p = add("search", ns, filt)
    p.add_argument("query", help="free text")
    p.add_argument("-k", "--k", type=int, default=10, help="how many results (default 10)")
    p.add_argument("--mode", choices=["hybrid", "dense", "keyword"], default="hybrid", help="default hybrid")
    p.add_argument("--json", action="store_true", help="one JSON object per hit")
    p.set_defaults(func=cmd_search)

    p = add("recent", ns)
    p.add_argument("-N", "--n", type=int, default=10, help="how many (default 10)")
    p.set_defaults(func=cmd_recent)

    p = add("export", ns)
    p.add_argument("-o", "--output", help="file to write (default stdout)")
    p.add_argument("--with-embeddings", action="store_true", help="include each message's embedding")
    p.set_defaults(func=cmd_export)

    p = add("import", ns)
    p.add_argument("input", nargs="?", default="-", help="JSONL file (default stdin)")
    p.set_defaults(func=cmd_import)

    p = add("delete", ns)
    p.add_argument("ids", nargs="+", help="message ids")
    p.set_defaults(func=cmd_delete)

