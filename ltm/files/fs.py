"""MemoryFS: an agent's memory as files, stored in a key-value backend and exposed as a file system.

Agents are good at reading and editing files, and people can read files too. Procedural memory lives in
``AGENTS.md`` and ``tools.json``, semantic memory in ``skills/<name>/SKILL.md`` and free knowledge files.
Every write is validated before anything is stored (:mod:`ltm.files.validate`; the error tells the agent what
to fix), becomes a *pending change* a person approves when ``approval="required"`` (the guard against prompt
injection; ``"yolo"`` applies directly; :mod:`ltm.files.approval`), and is kept as a version so nothing is ever
lost.

Key layout in the backend (the ``{scope}`` hash tag keeps a scope's keys in one Redis Cluster slot, which
:meth:`~ltm.kv.base.KVStore.atomic` needs)::

    fs:{scope}:head          hash  path -> FileInfo JSON (live files only)
    fs:{scope}:v:<path>      list  Version JSON, oldest first (deletions included)
    fs:{scope}:vseq:<path>   int   last version number handed out for <path>
    fs:{scope}:pending       hash  change id -> Change JSON
    fs:{scope}:decided       list  applied and rejected Change JSON (the audit log)
    fs:{scope}:cseq          int   last change number handed out
    fs:{scope}:claim:<id>    int   an approver's hold on pending change <id> (expires after a minute)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.files.approval import Approval, ChangeQueue, rebase
from ltm.files.index import FileIndex
from ltm.files.io import export_files, read_dir
from ltm.files.llm import propose_compact, propose_remember, resolve
from ltm.files.merge import MergedFS
from ltm.files.paths import glob_regex, normalize_dir, normalize_path
from ltm.files.records import Change, FileInfo, FileOp, GrepMatch, SearchHit, Version, check_scope, sha256
from ltm.files.text import compile_regex, grep_text, list_entries, missing_message, replace_once, unified_diff
from ltm.files.validate import Limits, check_ops
from ltm.kv import KVStore, open_kv
from ltm.llm.base import LLM, LLMLike

__all__ = ["MemoryFS"]


class MemoryFS:
    """One scope's memory files (``agent:<id>``, ``user:<id>`` or ``org:<id>``).

    Reads (``ls``, ``read``, ``glob``, ``grep``, ``search``, ``history``) see approved content only. Writes
    (``write``, ``edit``, ``delete``, ``restore``, ``import_dir``, ``remember``, ``compact``) return a
    :class:`~ltm.files.records.Change`: pending until :meth:`approve` when ``approval="required"``, already
    applied when ``"yolo"``. An invalid write raises :class:`~ltm.errors.ValidationFailed` and stores nothing.

    The backend is ``kv`` when given (not closed by :meth:`close`), else ``open_kv(settings)``: Redis when
    ``settings.redis_url`` is set, else the embedded SQLite store. ``llm`` (an ltm LLM with ``ask``/``aask``,
    or a llama-index LLM; default: the one ``settings.llm`` configures) is used by :meth:`remember` and
    :meth:`compact`. The search index is local to this host (``storage_dir/files/<scope>``) and catches up
    with the backend on each search, so hosts sharing Redis all search the same approved files.

    Change ids count up (``"1"``, ``"2"``, ...); with ``secret_ids`` each also carries 16 random hex digits
    (``"3-9f0c..."``), so a page that can make a browser post cannot name a pending change (the service
    uses it).
    """

    def __init__(
        self,
        scope: str,
        *,
        settings: Settings | None = None,
        approval: Approval = "required",
        kv: KVStore | None = None,
        llm: LLMLike | None = None,
        embedding: Any = None,
        secret_ids: bool = False,
    ) -> None:
        self.scope = check_scope(scope)
        self.secret_ids = secret_ids
        if approval not in ("required", "yolo"):
            raise InvalidInput(f"approval must be 'required' (a person approves edits) or 'yolo', got {approval!r}")
        self.approval: Approval = approval
        self.settings = settings if settings is not None else Settings.load()
        self.limits = Limits(self.settings.files_max_bytes, self.settings.agents_md_max_bytes)
        self._owns_kv = kv is None
        self.kv: KVStore = kv if kv is not None else open_kv(self.settings)
        self.llm = llm
        self._embedding = embedding
        self._index: FileIndex | None = None
        self._key = f"fs:{{{self.scope}}}:"
        self._changes = ChangeQueue(self.kv, self._key, self.scope, secret_ids=secret_ids)

    def __repr__(self) -> str:
        return f"MemoryFS({self.scope!r}, approval={self.approval!r}, kv={self.kv!r})"

    def __enter__(self) -> MemoryFS:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the search index and, when this object opened it, the backend."""
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._owns_kv:
            self.kv.close()

    @staticmethod
    def merged(layers: Sequence[MemoryFS]) -> MergedFS[MemoryFS]:
        """A read-only view over several scopes where agent overrides user overrides org (see MergedFS)."""
        return MergedFS(layers)

    # ---- reading -------------------------------------------------------------------------------------

    def files(self) -> dict[str, FileInfo]:
        """Every live file's head, by path (sorted)."""
        heads = {p: FileInfo.from_json(raw) for p, raw in self.kv.hgetall(self._key + "head").items()}
        return dict(sorted(heads.items()))

    def stat(self, path: str) -> FileInfo:
        """The head of ``path``: version, size, hash, update time; NotFound when it is not a live file."""
        path = normalize_path(path)
        raw = self.kv.hget(self._key + "head", path)
        if raw is None:
            raise NotFound(self._missing(path))
        return FileInfo.from_json(raw)

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a live file."""
        return self.kv.hget(self._key + "head", normalize_path(path)) is not None

    def read(self, path: str, version: int | None = None) -> str:
        """The approved text of ``path`` (or of one of its versions); NotFound says what exists instead."""
        path = normalize_path(path)
        if version is None:
            self.stat(path)
            last = self.kv.lrange(self._key + "v:" + path, -1, -1)
            if not last or Version.from_json(last[0]).deleted:  # deleted between the two reads
                raise NotFound(self._missing(path))
            return Version.from_json(last[0]).text
        found = self._version(path, version)
        if found.deleted:
            raise NotFound(f"version {version} of {path} is its deletion; read an earlier version")
        return found.text

    def ls(self, path: str = "/") -> list[str]:
        """Names directly under folder ``path`` (folders end with ``/``), sorted; ``"/"`` is the memory root.

        ``ls`` of a file gives that file's path; of a folder that holds nothing, NotFound.
        """
        folder = normalize_dir(path)
        heads = self.files()
        if folder and folder in heads:
            return [folder]
        return list_entries(heads, folder, self._missing)

    def glob(self, pattern: str) -> list[str]:
        """Paths matching ``pattern`` (``*``/``?`` within a folder, ``**/`` across folders), sorted."""
        regex = glob_regex(pattern)
        return [p for p in self.files() if regex.match(p)]

    def grep(self, regex: str, *, glob: str | None = None, ignore_case: bool = False) -> list[GrepMatch]:
        """Lines matching ``regex`` (Python syntax) in every file, or in those matching ``glob``."""
        compiled = compile_regex(regex, ignore_case)
        paths = self.glob(glob) if glob else list(self.files())
        return [m for p in paths for m in grep_text(compiled, p, self.read(p), self.scope)]

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """The ``k`` file chunks closest in meaning to ``query``, best first (hybrid dense + keyword). The index
        (a store namespace of kind ``files``) catches up with approved changes of any process first."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the search query is empty; describe what you are looking for")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a positive int, got {k!r}")
        index = self._open_index()
        heads = self.files()
        index.sync({p: (info.version, self._reader(p)) for p, info in heads.items()})
        return index.search(query, k, {p: info.version for p, info in heads.items()})

    def reindex(self) -> int:
        """Rebuild the search index of this scope from the files; returns the number of chunks indexed."""
        index = self._open_index()
        index.clear()
        index.sync({p: (info.version, self._reader(p)) for p, info in self.files().items()})
        return index.count()

    def history(self, path: str) -> list[Version]:
        """Every version of ``path``, oldest first, deletions included; NotFound if it never existed."""
        path = normalize_path(path)
        raw = self.kv.lrange(self._key + "v:" + path)
        if not raw:
            raise NotFound(self._missing(path))
        return [Version.from_json(r) for r in raw]

    # ---- proposing changes ---------------------------------------------------------------------------

    def write(self, path: str, text: str, *, reason: str = "", author: str = "agent") -> Change:
        """Propose ``path`` with content ``text`` (created or replaced). Validated now; see the class doc."""
        path = normalize_path(path)
        base = self._head_version(path)
        return self.propose([FileOp("write", path, text, base)], author=author, reason=reason)

    def edit(self, path: str, old: str, new: str, *, reason: str = "", author: str = "agent") -> Change:
        """Propose replacing ``old`` by ``new`` in ``path``; ``old`` must occur exactly once in the file."""
        path = normalize_path(path)
        info = self.stat(path)
        text = replace_once(path, self.read(path), old, new)
        return self.propose([FileOp("write", path, text, info.version, old, new)], author=author, reason=reason)

    def delete(self, path: str, *, reason: str = "", author: str = "agent") -> Change:
        """Propose deleting ``path``. Its history stays; :meth:`restore` brings any version back."""
        path = normalize_path(path)
        info = self.stat(path)
        return self.propose([FileOp("delete", path, None, info.version)], author=author, reason=reason)

    def restore(self, path: str, version: int, *, reason: str = "") -> Change:
        """Propose ``path``'s content at ``version`` as a new version (through approval like any write)."""
        path = normalize_path(path)
        old = self._version(path, version)
        if old.deleted:
            raise InvalidInput(f"version {version} of {path} is its deletion; restore version {version - 1} instead")
        note = reason or f"restore {path} to version {version}"
        return self.propose([FileOp("write", path, old.text, self._head_version(path))], author="restore", reason=note)

    def import_dir(self, directory: str | Path, *, reason: str = "") -> Change | None:
        """Propose every file of a real ``directory`` as one change (None when all already match).

        All files are checked first (UTF-8 text, safe paths, validators); any problem raises ValidationFailed
        listing every file to fix, and nothing is stored. Files of this scope missing from the folder stay.
        """
        incoming = read_dir(Path(directory), self.limits)
        heads = self.files()
        ops = [
            FileOp("write", p, text, heads[p].version if p in heads else None)
            for p, text in incoming.items()
            if p not in heads or heads[p].sha256 != sha256(text)
        ]
        if not ops:
            return None
        note = reason or f"import {len(ops)} file(s) from {Path(directory).name}"
        return self.propose(ops, author="import", reason=note)

    def export(self, directory: str | Path) -> list[str]:
        """Write every live file under ``directory`` (created; must be empty), byte for byte; returns the paths."""
        return export_files(Path(directory), {p: self.read(p) for p in self.files()})

    def remember(self, conversation: Any, llm: LLMLike | None = None) -> Change | None:
        """Ask an LLM which durable preferences or facts in ``conversation`` belong in memory; propose them.

        ``conversation`` is text, or a list of Messages / ``{"role", "content"}`` dicts / strings. The LLM
        sees AGENTS.md and the skill list, and answers with whole-file rewrites; a proposal that fails
        validation is handed back to it with the errors (twice at most). Returns None when nothing is worth
        remembering. Without an LLM (none passed, none at construction, ``settings.llm == "none"``) raises
        ConfigError saying how to configure one.
        """
        return propose_remember(self, conversation, self._llm_for(llm, "remember"))

    def compact(self, path: str, llm: LLMLike | None = None) -> Change | None:
        """Ask an LLM to generalise the specific cases in ``path`` into rules and merge repeats; propose it.

        Returns None when the LLM keeps the text as it is. Offline: ConfigError, as for :meth:`remember`.
        """
        return propose_compact(self, normalize_path(path), self._llm_for(llm, "compact"))

    # ---- approval ------------------------------------------------------------------------------------

    def pending(self) -> list[Change]:
        """Changes waiting for approval, oldest first."""
        return self._changes.pending()

    def change(self, change_id: str) -> Change:
        """A pending change by id; NotFound lists the pending ids."""
        return self._changes.get(change_id)

    def decided(self, limit: int = 50) -> list[Change]:
        """The last ``limit`` applied or rejected changes, oldest first (the audit log)."""
        return self._changes.decided(limit)

    def diff(self, change_id: str) -> str:
        """A unified diff of a pending change against the approved files, for the person approving it."""
        change = self.change(change_id)
        return unified_diff(
            [(op.path, self.read(op.path) if self.exists(op.path) else None, op.text) for op in change.ops]
        )

    def approve(self, change_id: str) -> Change:
        """Apply a pending change (all its files together) and return it with the versions it created.

        If a file moved on since the proposal, an edit is re-applied to the newer text; a whole-file write
        or delete of a file someone else changed raises InvalidInput (reject it and propose again).
        """
        change = self.change(change_id)
        with self._changes.claim(change.id):
            return self._apply(change)

    def reject(self, change_id: str, reason: str = "") -> Change:
        """Drop a pending change; it is kept in the audit log (:meth:`decided`) with ``reason``."""
        return self._changes.reject(self.change(change_id), reason)

    def propose(self, ops: Sequence[FileOp], *, author: str = "agent", reason: str = "") -> Change:
        """Propose several file operations as one change (applied together); validated now, like :meth:`write`."""
        heads = self.files()
        self._check(ops, heads)
        change = Change(
            id=self._changes.new_id(),
            scope=self.scope,
            ops=tuple(ops),
            author=author,
            reason=reason,
            created_at=time.time(),
        )
        if self.approval == "yolo":
            return self._apply(change, heads)
        self._changes.hold(change)
        return change

    def check(self, ops: Iterable[FileOp]) -> None:
        """Raise ValidationFailed (every problem, every file) if ``ops`` could not be stored as they are."""
        self._check(ops, self.files())

    def _check(self, ops: Iterable[FileOp], heads: dict[str, FileInfo]) -> None:
        check_ops(ops, heads, self.limits)

    # ---- internals -----------------------------------------------------------------------------------

    def _apply(self, change: Change, heads: dict[str, FileInfo] | None = None) -> Change:
        heads = self.files() if heads is None else heads
        ops = [rebase(op, heads, self.read) for op in change.ops]
        self._check(ops, heads)
        now = time.time()
        versions = {op.path: self.kv.incr(self._key + "vseq:" + op.path) for op in ops}
        done = change.decided("applied", now, versions)
        with self.kv.atomic() as batch:
            for op in ops:
                text = op.text if op.text is not None else ""
                v = Version(op.path, versions[op.path], text, op.op == "delete", now, change.id, change.author)
                batch.rpush(self._key + "v:" + op.path, v.to_json())
                if op.op == "delete":
                    batch.hdel(self._key + "head", op.path)
                else:
                    info = FileInfo(op.path, v.version, len(text.encode("utf-8")), sha256(text), now)
                    batch.hset(self._key + "head", {op.path: info.to_json()})
            self._changes.settle(batch, done)
        return done

    def _head_version(self, path: str) -> int | None:
        raw = self.kv.hget(self._key + "head", path)
        return FileInfo.from_json(raw).version if raw is not None else None

    def _version(self, path: str, version: int) -> Version:
        history = self.history(path)
        if isinstance(version, int) and 1 <= version <= len(history) and history[version - 1].version == version:
            return history[version - 1]
        for v in history:
            if v.version == version:
                return v
        raise NotFound(f"{path} has no version {version!r}; its versions are {[v.version for v in history]}")

    def _missing(self, path: str) -> str:
        return missing_message(path, list(self.files()), self.scope)

    def _llm_for(self, llm: LLMLike | None, what: str) -> LLM:
        return resolve(llm if llm is not None else self.llm, self.settings, what)

    def _reader(self, path: str) -> Callable[[], str]:
        return lambda: self.read(path)

    def _open_index(self) -> FileIndex:
        if self._index is None:
            self._index = FileIndex(self.scope, self.settings, self._embedding)
        return self._index
