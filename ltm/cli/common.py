"""What every ``ltm`` command shares: settings from the options, the store, option groups, printing, exit codes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.message import Message

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DECLINED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

# add(name, *parents) -> the sub-parser of command ``name`` (its help text comes from the module's COMMANDS)
AddCommand = Callable[..., argparse.ArgumentParser]


class Options:
    """Option groups shared by several commands, used as argparse ``parents``."""

    def __init__(self) -> None:
        self.common = argparse.ArgumentParser(add_help=False)
        self.common.add_argument("--storage-dir", help="data root (default: LTM_STORAGE_DIR or ./storage)")
        self.common.add_argument("--embedding", choices=["local", "openai", "hash"],
                                 help="embedding (default: LTM_EMBEDDING or local)")
        self.namespace = argparse.ArgumentParser(add_help=False)
        self.namespace.add_argument("-n", "--namespace", default="default", help="namespace (default: default)")
        self.namespace.add_argument("--kind", default="cli", help="namespace kind: role, user, cli... (default: cli)")
        self.filters = argparse.ArgumentParser(add_help=False)
        self.filters.add_argument("--role", help="only messages of this role")
        self.filters.add_argument("--cause-by", help="only messages caused by this action")
        self.filters.add_argument("--sent-from", help="only messages sent from this sender")
        self.filters.add_argument("--after", dest="created_after", type=float,
                                  help="created at or after (unix seconds)")
        self.filters.add_argument("--before", dest="created_before", type=float,
                                  help="created before (unix seconds)")
        self.filters.add_argument("--meta", action="append", metavar="KEY=VALUE",
                                  help="metadata equality (repeatable)")
        self.filters.add_argument("--where", metavar="JSON",
                                  help='a filter in the store\'s language, e.g. \'{"run_id": "r1", "created_at": '
                                       '{"gte": "2024-05-01"}}\' (AND-ed with the flags above)')


def settings_from(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in (("storage_dir", args.storage_dir), ("embedding", args.embedding)) if v}
    return Settings.load(**overrides)


def open_storage(args: argparse.Namespace, settings: Settings | None = None) -> Any:
    from ltm.store import MemoryStorage

    return MemoryStorage(args.namespace, kind=args.kind, settings=settings or settings_from(args))


def parse_meta(pairs: Sequence[str] | None) -> dict[str, Any]:
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


def filters_from(args: argparse.Namespace) -> dict[str, Any] | None:
    filters: dict[str, Any] = {}
    for name in ("role", "cause_by", "sent_from", "created_after", "created_before"):
        value = getattr(args, name, None)
        if value is not None:
            filters[name] = value
    meta = parse_meta(getattr(args, "meta", None))
    if meta:
        filters["metadata"] = meta
    where = getattr(args, "where", None)
    if where:
        try:
            parsed = json.loads(where)
        except ValueError as exc:
            raise InvalidInput(f"--where takes a JSON object such as '{{\"role\": \"user\"}}' ({exc})") from exc
        if not isinstance(parsed, dict):
            raise InvalidInput(f"--where takes a JSON object, got {type(parsed).__name__}")
        return {"AND": [filters, parsed]} if filters else parsed
    return filters or None


def print_messages(messages: Sequence[Message], out: TextIO, scores: Sequence[str] | None = None) -> None:
    for i, m in enumerate(messages):
        prefix = f"{scores[i]}  " if scores else ""
        out.write(f"{prefix}{m.id}  {m.role}: {m.content}\n")


def read_jsonl(stream: TextIO) -> Iterator[tuple[Message, list[float] | None]]:
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


def progress_bar() -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    return Progress(*columns, transient=True, disable=not sys.stderr.isatty())
