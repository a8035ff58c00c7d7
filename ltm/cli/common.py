"""What every ``ltm`` command shares: settings from the options, the store, option groups, printing, exit codes."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ltm.cli.models import check_embeddable, how_to_embed_with, model_overrides, reading
from ltm.cli.output import parse_time, visible, write_messages
from ltm.config import Settings, mask_url
from ltm.errors import ConfigError, InvalidInput, NotFound, StoreMismatch
from ltm.message import Message

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DECLINED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

# add(name, *parents) -> the sub-parser of command ``name`` (its help text comes from the module's COMMANDS)
AddCommand = Callable[..., argparse.ArgumentParser]

# The kind of namespace a command uses without --kind: the library's (MemoryStorage), the demo's and the HTTP API's,
# so `ltm recent -n NAME` reads what they wrote. Namespaces the command wrote before under its own default (cli)
# keep being found there: a name that exists only under LEGACY_KIND resolves to it.
DEFAULT_KIND = "role"
LEGACY_KIND = "cli"


class Options:
    """Option groups shared by several commands, used as argparse ``parents``."""

    def __init__(self) -> None:
        self.common = argparse.ArgumentParser(add_help=False)
        self.common.add_argument("--storage-dir", help="data root (default: LTM_STORAGE_DIR or ./storage)")
        self.common.add_argument(
            "--embedding", choices=["local", "openai", "hash"], help="embedding (default: LTM_EMBEDDING or local)"
        )
        self.common.add_argument(
            "--embedding-model",
            metavar="NAME",
            help="for commands that embed: the namespace's model as `ltm stats` shows it "
            "(e.g. text-embedding-ada-002, hash-384); reading needs none",
        )
        self.common.add_argument("--utc", action="store_true", help="read and print times in UTC (default: local)")
        self.common.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=0,
            help="log more (-v info, -vv debug; default: LTM_LOG_LEVEL or warning)",
        )
        self.output = argparse.ArgumentParser(add_help=False)
        self.output.add_argument(
            "--format",
            choices=["table", "json"],
            default="table",
            help="table (default) or json: one JSON object per line",
        )
        self.output.add_argument(
            "--json", dest="format", action="store_const", const="json", help="the same as --format json"
        )
        self.namespace = argparse.ArgumentParser(add_help=False)
        self.namespace.add_argument("-n", "--namespace", default="default", help="namespace (default: default)")
        self.namespace.add_argument(
            "--kind",
            help=f"namespace kind: role, user, cli... (default: {DEFAULT_KIND}, the kind `ltm demo` and `ltm serve` "
            f"write; a name found only under the old default {LEGACY_KIND} is read and written there)",
        )
        self.namespace.add_argument(
            "--url",
            help="use a running `ltm serve` at this URL instead of local files "
            "(default: LTM_URL; the key comes from LTM_API_KEY)",
        )
        self.filters = argparse.ArgumentParser(add_help=False)
        self.filters.add_argument("--role", help="only messages of this role")
        self.filters.add_argument("--cause-by", help="only messages caused by this action")
        self.filters.add_argument("--sent-from", help="only messages sent from this sender")
        self.filters.add_argument(
            "--after",
            dest="created_after",
            metavar="TIME",
            help="created at or after TIME (ISO-8601 such as 2026-11-01, or unix seconds)",
        )
        self.filters.add_argument(
            "--before", dest="created_before", metavar="TIME", help="created before TIME (ISO-8601 or unix seconds)"
        )
        self.filters.add_argument("--meta", action="append", metavar="KEY=VALUE", help="metadata equality (repeatable)")
        self.filters.add_argument(
            "--where",
            metavar="JSON",
            help='a filter in the store\'s language, e.g. \'{"run_id": "r1", "created_at": '
            '{"gte": "2024-05-01"}}\' (AND-ed with the flags above)',
        )


def settings_from(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {
        k: v for k, v in (("storage_dir", args.storage_dir), ("embedding", args.embedding)) if v
    }
    model = getattr(args, "embedding_model", None)
    if model:
        check_embeddable(model)
        overrides.update(model_overrides(model, kind=args.embedding))
    return Settings.load(**overrides)


def open_storage(
    args: argparse.Namespace, settings: Settings | None = None, *, existing: bool = False, embeds: bool = True
) -> Any:
    """The namespace's store. ``existing``: reading commands never create a namespace (a mistyped name would
    otherwise leave an empty one behind): NotFound when it is not there. ``embeds=False`` (the command embeds
    nothing): the namespace is opened with the model it records, whatever the settings say, and none is loaded;
    a command that embeds into a namespace of another model is refused with how to name that model."""
    url = getattr(args, "url", None) or os.environ.get("LTM_URL")
    if url:  # a running `ltm serve` answers: nothing is loaded here, not even the store
        return _remote(args, url)
    from ltm.llm.names import configured_model_name
    from ltm.store import MemoryStorage, namespace_exists, namespace_model

    settings = settings or settings_from(args)
    resolve_kind(args, settings)
    if existing and not namespace_exists(settings, args.kind, args.namespace):
        raise not_found(settings, args.kind, [args.namespace])
    recorded = namespace_model(settings, args.kind, args.namespace)
    if recorded is not None and recorded != configured_model_name(settings):
        if not embeds:
            settings = reading(settings, recorded)
        else:  # a namespace records its model with its first vector: one without vectors takes any model
            held = MemoryStorage(args.namespace, kind=args.kind, settings=reading(settings, recorded))
            try:
                count = held.count()
            finally:
                held.close()
            if count:
                raise StoreMismatch(
                    f"namespace {args.kind}/{args.namespace} holds the vectors of {count} "
                    f"message{'s' if count != 1 else ''} made by embedding model {recorded!r}, not "
                    f"{configured_model_name(settings)!r}, and this command embeds text: {how_to_embed_with(recorded)}"
                )
    return MemoryStorage(args.namespace, kind=args.kind, settings=settings)


def resolve_kind(args: argparse.Namespace, settings: Settings) -> str:
    """``args.kind``, set to the default's when --kind was not given (see :data:`DEFAULT_KIND`)."""
    from ltm.store import namespace_exists

    if args.kind is None:
        legacy = not namespace_exists(settings, DEFAULT_KIND, args.namespace) and namespace_exists(
            settings, LEGACY_KIND, args.namespace
        )
        args.kind = LEGACY_KIND if legacy else DEFAULT_KIND
    return str(args.kind)


def kinds_holding(settings: Settings, namespace: str) -> list[str]:
    """The kinds under which a namespace named ``namespace`` exists (for a "not found" that says where to look)."""
    from ltm.store import database_namespaces, namespace_exists

    if settings.store_url:
        return sorted({row.kind for row in database_namespaces(settings.store_url) if row.name == namespace})
    try:
        kinds = sorted(entry.name for entry in os.scandir(settings.storage_dir) if entry.is_dir())
    except OSError:
        return []
    found = []
    for kind in kinds:
        try:
            if namespace_exists(settings, kind, namespace):
                found.append(kind)
        except InvalidInput:  # a folder that is not a kind's
            continue
    return found


def not_found(settings: Settings, kind: str, names: Sequence[str]) -> NotFound:
    """NotFound for namespaces ``names`` of ``kind``, naming the kinds where each name does exist."""
    where = mask_url(settings.store_url) if settings.store_url else settings.storage_dir
    elsewhere = [f"{k}/{name}" for name in names for k in kinds_holding(settings, name) if k != kind]
    missing = ", ".join(f"{kind}/{name}" for name in names)
    if elsewhere:
        hint = f"it exists as {', '.join(elsewhere)}: pass --kind {elsewhere[0].split('/', 1)[0]}"
    else:
        hint = "`ltm stats` lists the namespaces there"
    return NotFound(f"no namespace {missing} in {where}; {hint}")


def _remote(args: argparse.Namespace, url: str) -> Any:
    if args.kind not in (None, LEGACY_KIND):  # LEGACY_KIND: the value --kind defaulted to, accepted as before
        raise InvalidInput("--kind does not apply with --url: a server's namespaces are named by --namespace alone")
    args.kind = DEFAULT_KIND  # the server's namespaces are of the default kind
    try:
        from ltm.client import RemoteStorage
    except ImportError as exc:
        raise ConfigError("--url needs the client: pip install '/path/to/ltm[service]' (the ltm checkout)") from exc
    return RemoteStorage(args.namespace, url=url, api_key=os.environ.get("LTM_API_KEY"))


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
    for name in ("role", "cause_by", "sent_from"):
        value = getattr(args, name, None)
        if value is not None:
            filters[name] = value
    for name in ("created_after", "created_before"):
        value = getattr(args, name, None)
        if value is not None:
            filters[name] = parse_time(value, utc=args.utc)
    meta = parse_meta(getattr(args, "meta", None))
    if meta:
        filters["metadata"] = meta
    where = getattr(args, "where", None)
    if where:
        try:
            parsed = json.loads(where)
        except ValueError as exc:
            raise InvalidInput(f'--where takes a JSON object such as \'{{"role": "user"}}\' ({exc})') from exc
        if not isinstance(parsed, dict):
            raise InvalidInput(f"--where takes a JSON object, got {type(parsed).__name__}")
        return {"AND": [filters, parsed]} if filters else parsed
    return filters or None


def no_hits(where: str) -> int:
    """Say on stderr that nothing matched (stdout stays empty for pipes); the not-found exit code."""
    print(f"ltm: no messages match in {visible(where)}", file=sys.stderr)
    return EXIT_NOT_FOUND


def print_messages(
    args: argparse.Namespace, messages: Sequence[Message], extra: Sequence[dict[str, Any]] | None = None
) -> None:
    """The messages on stdout in the format the command line asked for (see :mod:`ltm.cli.output`)."""
    write_messages(messages, sys.stdout, fmt=getattr(args, "format", "table"), utc=args.utc, extra=extra)


@dataclass(frozen=True)
class Line:
    """One JSONL line read as a message: its line number, and the embedding it carried with its model name."""

    number: int
    message: Message
    vector: list[float] | None
    model: str | None


def read_jsonl(stream: Iterable[str | bytes]) -> Iterator[Line]:
    """Messages from JSONL (an object or a bare string per line), each decoded on its own so an error names
    its line. A line without an ``id`` gets one derived from its text (repeats in one file numbered), so
    importing the same file twice stores it once."""
    occurrences: dict[str, int] = {}
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"line {number} is not UTF-8 ({exc.reason} at byte {exc.start}); "
                "re-encode the file as UTF-8 (e.g. iconv -t UTF-8)"
            ) from exc
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InvalidInput(f"line {number} is not JSON ({exc}); each line must be one message object") from exc
        if isinstance(data, str):
            data = {"content": data}
        if not isinstance(data, dict):
            raise InvalidInput(f"line {number}: expected a JSON object or string, got {type(data).__name__}")
        vector = data.pop("embedding", None)
        model = data.pop("embedding_model", None)
        if not data.get("id"):
            digest = hashlib.sha256(line.strip().encode("utf-8", "surrogatepass")).hexdigest()[:32]
            occurrences[digest] = occurrences.get(digest, 0) + 1
            data["id"] = digest if occurrences[digest] == 1 else f"{digest}-{occurrences[digest]}"
        try:
            message = Message.load(data)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc}") from exc
        yield Line(number, message, vector, model if isinstance(model, str) else None)
