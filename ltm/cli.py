"""The ``ltm`` command: a thin layer over the library (every command calls the public API).

Exit codes: 0 success; 1 an ltm error (one line on stderr, no traceback); 2 bad usage; 3 not found;
4 declined at a prompt; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, TextIO

from ltm.config import Settings
from ltm.errors import InvalidInput, LTMError, NotFound
from ltm.message import Message

__all__ = ["COMMANDS", "main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DECLINED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
INGEST_CHUNK = 256


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in (("storage_dir", args.storage_dir), ("embedding", args.embedding)) if v}
    return Settings.load(**overrides)


def _storage(args: argparse.Namespace, settings: Settings | None = None) -> Any:
    from ltm.store import MemoryStorage

    return MemoryStorage(args.namespace, kind=args.kind, settings=settings or _settings(args))


def _meta(pairs: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--meta takes key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def _filters(args: argparse.Namespace) -> dict[str, Any] | None:
    filters: dict[str, Any] = {}
    for name in ("role", "cause_by", "sent_from", "created_after", "created_before"):
        value = getattr(args, name, None)
        if value is not None:
            filters[name] = value
    meta = _meta(getattr(args, "meta", None))
    if meta:
        filters["metadata"] = meta
    return filters or None


def _print_messages(messages: Sequence[Message], out: TextIO, scores: Sequence[str] | None = None) -> None:
    for i, m in enumerate(messages):
        prefix = f"{scores[i]}  " if scores else ""
        out.write(f"{prefix}{m.id}  {m.role}: {m.content}\n")


def _jsonl(stream: TextIO) -> Iterator[tuple[Message, list[float] | None]]:
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"line {number} is not JSON ({exc}); each line must be one message object") from exc
        if isinstance(data, str):
            data = {"content": data}
        if not isinstance(data, dict):
            raise InvalidInput(f"line {number}: expected a JSON object or string, got {type(data).__name__}")
        vector = data.pop("embedding", None)
        data.pop("embedding_model", None)
        yield Message.load(data), vector


def _progress() -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    return Progress(*columns, transient=True, disable=not sys.stderr.isatty())


# -- commands ----------------------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from ltm.demo import run_demo

    run_demo(_settings(args), reset=args.reset)
    return EXIT_OK


def _ingest(store: Any, items: Iterator[tuple[Message, list[float] | None]], label: str) -> tuple[int, int]:
    added = seen = 0
    with _progress() as progress:
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
    with _storage(args) as store:
        if args.text and args.text != ["-"]:
            message = Message(" ".join(args.text), role=args.role, cause_by=args.cause_by or "",
                              sent_from=args.sent_from or "", metadata=_meta(args.meta))
            added = store.add(message)
            print(message.id if added else f"{message.id} (already stored)")
            return EXIT_OK
        if sys.stdin.isatty():
            raise InvalidInput("give the text to add, or pipe JSONL messages on stdin (one object per line)")
        added, seen = _ingest(store, _jsonl(sys.stdin), "adding")
        print(f"added {added} of {seen} messages to {args.kind}/{args.namespace}")
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    with _storage(args) as store:
        hits = store.search(args.query, k=args.k, mode=args.mode, filters=_filters(args))
        if args.json:
            for hit in hits:
                print(json.dumps({"score": hit.score, "signals": list(hit.signals), **hit.message.to_dict()}))
        else:
            _print_messages([h.message for h in hits], sys.stdout, [f"{h.score:8.4f}" for h in hits])
    return EXIT_OK if hits else EXIT_NOT_FOUND


def cmd_recent(args: argparse.Namespace) -> int:
    with _storage(args) as store:
        _print_messages(store.recent(args.n), sys.stdout)
    return EXIT_OK


def _namespaces(root: Path) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """(kind, directory, manifest) of every namespace under ``root``; an unreadable manifest reads as {}."""
    for manifest in sorted(root.glob("*/*/manifest.json")):
        try:
            data = json.loads(manifest.read_text("utf-8"))
        except ValueError:
            data = {}
        yield manifest.parent.parent.name, manifest.parent, data


def _count_rows(directory: Path) -> int:
    from ltm.store.log import MessageLog

    log = MessageLog(directory / "memory.sqlite")
    try:
        return log.count()
    finally:
        log.close()


def cmd_stats(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    settings = _settings(args)
    table = Table(title=f"namespaces under {settings.storage_dir}")
    for column in ("kind", "namespace", "messages", "bytes on disk", "model", "index"):
        table.add_column(column, justify="right" if column in ("messages", "bytes on disk") else "left")
    rows = 0
    for kind, directory, manifest in _namespaces(settings.storage_dir):
        if args.only_kind and kind != args.only_kind:
            continue
        size = sum(f.stat().st_size for f in directory.iterdir() if f.is_file())
        table.add_row(kind, str(manifest.get("namespace", directory.name)), f"{_count_rows(directory):,}", f"{size:,}",
                      str(manifest.get("embedding_model")), str(manifest.get("index_type")))
        rows += 1
    if rows:
        Console(width=max(100, shutil.get_terminal_size().columns)).print(table)
    else:
        print(f"no namespaces under {settings.storage_dir}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with _storage(args) as store:
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
        with _storage(args) as store:
            added, seen = _ingest(store, _jsonl(source), "importing")
    finally:
        if source is not sys.stdin:
            source.close()
    print(f"imported {added} new of {seen} messages into {args.kind}/{args.namespace}")
    return EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    with _storage(args) as store:
        missing = [i for i in args.ids if not store.delete(i)]
    if missing:
        raise NotFound(f"no message with id {', '.join(missing)} in {args.kind}/{args.namespace} (see `ltm recent`)")
    print(f"deleted {len(args.ids)}")
    return EXIT_OK


def cmd_wipe(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.all:
        target, what = settings.storage_dir, f"ALL ltm data under {settings.storage_dir}"
    else:
        from ltm.store.naming import namespace_dir

        target, what = namespace_dir(settings.storage_dir, args.kind, args.namespace), \
            f"namespace {args.kind}/{args.namespace}"
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


# -- the parser ---------------------------------------------------------------------------------------------
COMMANDS: dict[str, str] = {
    "demo": "run the demo: a team of agents that remembers across a restart",
    "add": "add a message (text), or JSONL messages from stdin",
    "search": "search a namespace (hybrid, dense or keyword) with filters",
    "recent": "show the most recent messages of a namespace",
    "stats": "per namespace: messages, bytes on disk, model, index type",
    "export": "write a namespace as JSONL (optionally with embeddings)",
    "import": "read JSONL messages into a namespace (lossless round trip with export)",
    "delete": "delete messages by id",
    "wipe": "delete a namespace (or --all data); asks first",
}


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--storage-dir", help="data root (default: LTM_STORAGE_DIR or ./storage)")
    common.add_argument("--embedding", choices=["local", "openai", "hash"],
                        help="embedding (default: LTM_EMBEDDING or local)")
    ns = argparse.ArgumentParser(add_help=False)
    ns.add_argument("-n", "--namespace", default="default", help="namespace (default: default)")
    ns.add_argument("--kind", default="cli", help="namespace kind: role, user, cli... (default: cli)")
    filt = argparse.ArgumentParser(add_help=False)
    filt.add_argument("--role", help="only messages of this role")
    filt.add_argument("--cause-by", help="only messages caused by this action")
    filt.add_argument("--sent-from", help="only messages sent from this sender")
    filt.add_argument("--after", dest="created_after", type=float, help="created at or after (unix seconds)")
    filt.add_argument("--before", dest="created_before", type=float, help="created before (unix seconds)")
    filt.add_argument("--meta", action="append", metavar="KEY=VALUE", help="metadata equality (repeatable)")

    parser = argparse.ArgumentParser(prog="ltm", description="ltm: long-term memory for LLM agents.",
                                     epilog="Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 declined.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=COMMANDS[name], description=COMMANDS[name], parents=[common, *parents])

    p = add("demo")
    p.add_argument("--reset", action="store_true", help="forget the demo team's memory first")
    p.set_defaults(func=cmd_demo)

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

    p = add("stats")
    p.add_argument("--kind", dest="only_kind", help="only namespaces of this kind")
    p.set_defaults(func=cmd_stats)

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

    p = add("wipe", ns)
    p.add_argument("--all", action="store_true", help="every namespace under the data root")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask")
    p.set_defaults(func=cmd_wipe)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ltm`` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except NotFound as exc:
        print(f"ltm: not found: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except LTMError as exc:
        print(f"ltm: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("ltm: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
