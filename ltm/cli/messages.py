"""Commands over one namespace's messages: add, search, recent, export, import, delete."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from itertools import islice
from typing import Any

from ltm.cli.common import (
    EXIT_OK,
    AddCommand,
    Line,
    Options,
    filters_from,
    no_hits,
    not_found,
    open_storage,
    parse_meta,
    print_messages,
    read_jsonl,
    resolve_kind,
    settings_from,
)
from ltm.cli.output import Progress, json_line, visible
from ltm.cli.times import add_time_options, times_from
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
    "get": "show messages by id",
}


def _ingest(store: Any, lines: Iterator[Line], label: str, total: int | None = None) -> tuple[int, int]:
    """Store ``lines`` in chunks; returns (new, read). An error or Ctrl-C says how many were stored, and
    running the same input again continues where it stopped (stored ids are skipped)."""
    added = seen = 0
    foreign: dict[str, int] = {}
    before = store.count()
    chunk: list[Line] = []
    try:
        with Progress(label, total) as progress:
            while chunk := list(islice(lines, INGEST_CHUNK)):
                added += _flush(store, chunk, foreign)
                seen += len(chunk)
                progress.advance(len(chunk))
                chunk = []
    except KeyboardInterrupt:
        # Ctrl-C can land after a chunk's commit and before add_batch returns: the store says what it holds
        stored = store.count() - before
        seen += len(chunk) if stored > added else 0
        raise KeyboardInterrupt(
            f"{stored} new messages of the first {seen} read were stored; run the same "
            "command again to continue (stored ids are skipped)"
        ) from None
    except InvalidInput as exc:
        raise InvalidInput(f"{exc}; {added} stored before it (run again once fixed: stored ids are skipped)") from exc
    for model, n in sorted(foreign.items()):
        print(
            f"ltm: note: re-embedded {n} messages whose embedding came from {model}, not this namespace's "
            f"model {store.embedder.model!r}",
            file=sys.stderr,
        )
    return added, seen


def _flush(store: Any, chunk: list[Line], foreign: dict[str, int]) -> int:
    """One chunk in one transaction. Given vectors are kept only when they come from the namespace's own model:
    another model's vectors (even of the same size) would rank nonsense, so those messages are re-embedded."""
    model = store.embedder.model
    for line in chunk:
        if line.vector is not None and line.model != model:
            name = repr(line.model) if line.model else "an unnamed model (no embedding_model)"
            foreign[name] = foreign.get(name, 0) + 1
    messages = [line.message for line in chunk]
    try:
        if all(line.vector is not None and line.model == model for line in chunk):
            return int(store.add_batch(messages, vectors=[line.vector for line in chunk]))
        return int(store.add_batch(messages))
    except InvalidInput as exc:
        culprit = next((line.number for line in chunk if line.message.id in str(exc)), None)
        where = f"line {culprit}" if culprit is not None else f"lines {chunk[0].number}-{chunk[-1].number}"
        raise InvalidInput(f"{where}: {exc}") from exc


def _count_lines(path: str) -> int | None:
    """Non-blank lines of a file, the total a progress bar shows (None for stdin or an unreadable file)."""
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return None


def cmd_add(args: argparse.Namespace) -> int:
    with open_storage(args) as store:
        if args.text and args.text != ["-"]:
            message = Message(
                " ".join(args.text),
                role=args.role,
                cause_by=args.cause_by or "",
                sent_from=args.sent_from or "",
                metadata=parse_meta(args.meta),
            )
            added = store.add(message)
            print(visible(message.id if added else f"{message.id} (already stored)"))
            return EXIT_OK
        if sys.stdin.isatty():
            raise InvalidInput("give the text to add, or pipe JSONL messages on stdin (one object per line)")
        added, seen = _ingest(store, read_jsonl(getattr(sys.stdin, "buffer", sys.stdin)), "adding")
        print(visible(f"added {added} of {seen} messages to {args.kind}/{args.namespace}"))
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    if args.also:
        return _search_many(args)
    with open_storage(args, existing=True, embeds=args.mode != "keyword") as store:
        hits = store.search(args.query, k=args.k, mode=args.mode, filters=filters_from(args), **times_from(args))
        print_messages(args, [h.message for h in hits], [{"score": h.score, "signals": list(h.signals)} for h in hits])
    return EXIT_OK if hits else no_hits(f"{args.kind}/{args.namespace}")


def _search_many(args: argparse.Namespace) -> int:
    """``ltm search -n A --also B --also C``: one search over several namespaces, merged by score."""
    if getattr(args, "url", None) or os.environ.get("LTM_URL"):
        raise InvalidInput("--also searches local namespaces; with --url, search each namespace on its own")
    from ltm.store import namespace_exists, search_many

    settings = settings_from(args)
    resolve_kind(args, settings)
    names = list(dict.fromkeys([args.namespace, *args.also]))
    missing = [n for n in names if not namespace_exists(settings, args.kind, n)]
    if missing:
        raise not_found(settings, args.kind, missing)
    hits = search_many(
        names,
        args.query,
        k=args.k,
        mode=args.mode,
        filters=filters_from(args),
        settings=settings,
        kind=args.kind,
        **times_from(args),
    )
    print_messages(
        args,
        [h.message for h in hits],
        [{"namespace": h.namespace, "score": h.score, "signals": list(h.signals)} for h in hits],
    )
    return EXIT_OK if hits else no_hits(", ".join(f"{args.kind}/{n}" for n in names))


def cmd_recent(args: argparse.Namespace) -> int:
    with open_storage(args, existing=True, embeds=False) as store:
        newest = store.recent(args.n)
    # by creation time: an edited message keeps its place (its new version is stored after newer messages)
    print_messages(args, sorted(newest, key=lambda m: m.created_at))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with open_storage(args, existing=True, embeds=False) as store:
        out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        try:
            n = 0
            for message, vector in store.export(with_vectors=args.with_embeddings):
                data = message.to_dict()
                if vector is not None:
                    data["embedding"] = [round(float(x), 7) for x in vector]
                    data["embedding_model"] = store.embedder.model
                out.write(json_line(data) + "\n")
                n += 1
        finally:
            if out is not sys.stdout:
                out.close()
    print(visible(f"exported {n} messages from {args.kind}/{args.namespace}"), file=sys.stderr)
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    source = getattr(sys.stdin, "buffer", sys.stdin) if args.input == "-" else open(args.input, "rb")  # noqa: SIM115
    try:
        with open_storage(args) as store:
            total = None if args.input == "-" else _count_lines(args.input)
            added, seen = _ingest(store, read_jsonl(source), "importing", total)
    finally:
        if args.input != "-":
            source.close()
    print(visible(f"imported {added} new of {seen} messages into {args.kind}/{args.namespace}"))
    return EXIT_OK


def _get(store: Any, message_id: str) -> Message | None:
    try:
        found: Message | None = store.get(message_id)
    except NotFound:  # the remote client says so with an error, the local store with None
        return None
    return found


def cmd_get(args: argparse.Namespace) -> int:
    with open_storage(args, existing=True, embeds=False) as store:
        found = [_get(store, i) for i in args.ids]
    print_messages(args, [m for m in found if m is not None])
    missing = [i for i, m in zip(args.ids, found, strict=True) if m is None]
    if missing:
        raise NotFound(f"no message with id {', '.join(missing)} in {args.kind}/{args.namespace} (see `ltm recent`)")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    with open_storage(args, existing=True, embeds=False) as store:
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

    p = add("search", ns, filt, opts.output)
    p.add_argument("query", help="free text")
    p.add_argument("-k", "--k", type=int, default=10, help="how many results (default 10)")
    p.add_argument("--mode", choices=["hybrid", "dense", "keyword"], default="hybrid", help="default hybrid")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help="also search this namespace of the same kind (repeatable): hits merged by score",
    )
    add_time_options(p)
    p.set_defaults(func=cmd_search)

    p = add("recent", ns, opts.output)
    p.add_argument("-N", "--n", type=int, default=10, help="how many (default 10)")
    p.set_defaults(func=cmd_recent)

    p = add("export", ns)
    p.add_argument("-o", "--output", help="file to write (default stdout)")
    p.add_argument("--with-embeddings", action="store_true", help="include each message's embedding")
    p.set_defaults(func=cmd_export)

    p = add("import", ns)
    p.add_argument("input", nargs="?", default="-", help="JSONL file (default stdin)")
    p.set_defaults(func=cmd_import)

    p = add("get", ns, opts.output)
    p.add_argument("ids", nargs="+", help="message ids")
    p.set_defaults(func=cmd_get)

    p = add("delete", ns)
    p.add_argument("ids", nargs="+", help="message ids")
    p.set_defaults(func=cmd_delete)
