"""A merged, read-only view over several MemoryFS scopes: agent overrides user overrides org.

An agent reads one folder in which its own files win over its user's, which win over its organisation's
(``AGENTS.md`` from the agent scope hides the org's; an org-wide skill shows through until the agent has a
skill of the same path). Writes go to one scope explicitly (``view.layer("agent").write(...)``), so an agent
never edits an org's memory by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from ltm.errors import InvalidInput, NotFound
from ltm.files.paths import glob_regex, normalize_dir, normalize_path
from ltm.files.records import SCOPE_KINDS, FileInfo, GrepMatch, MemoryView, SearchHit
from ltm.files.text import compile_regex, grep_text, list_entries

__all__ = ["MergedFS"]

# The layer type: MergedFS[MemoryFS] hands back MemoryFS layers (to write to) without importing MemoryFS here.
V = TypeVar("V", bound=MemoryView)


class MergedFS(Generic[V]):
    """Read-only union of scopes. ``layers`` may come in any order; they are ranked agent > user > org.

    At most one layer per kind (two agents' memories have no defined precedence).
    """

    def __init__(self, layers: Sequence[V]) -> None:
        if not layers:
            raise InvalidInput("a merged view needs at least one MemoryFS (agent, user and/or org scope)")
        kinds = [fs.scope.split(":", 1)[0] for fs in layers]
        if len(set(kinds)) != len(kinds):
            raise InvalidInput(f"one scope per kind in a merged view, got {[fs.scope for fs in layers]}")
        self.layers = sorted(layers, key=lambda fs: SCOPE_KINDS.index(fs.scope.split(":", 1)[0]))

    def __repr__(self) -> str:
        return f"MergedFS({[fs.scope for fs in self.layers]})"

    def layer(self, kind: str) -> V:
        """The layer of one kind (``agent``, ``user`` or ``org``), to write to; NotFound if absent."""
        for fs in self.layers:
            if fs.scope.startswith(kind + ":"):
                return fs
        raise NotFound(f"this view has no {kind!r} layer; it has {[fs.scope for fs in self.layers]}")

    def owners(self) -> dict[str, V]:
        """Each visible path -> the layer whose file wins, sorted by path."""
        owner: dict[str, V] = {}
        for fs in reversed(self.layers):  # lowest precedence first, so higher layers overwrite
            for path in fs.files():
                owner[path] = fs
        return dict(sorted(owner.items()))

    def files(self) -> dict[str, FileInfo]:
        """Each visible path -> the head of the winning file."""
        return {path: fs.stat(path) for path, fs in self.owners().items()}

    def where(self, path: str) -> str:
        """The scope whose file is visible at ``path``."""
        return self._owner(normalize_path(path)).scope

    def read(self, path: str) -> str:
        """The visible text of ``path`` (from the highest-precedence scope that has it)."""
        path = normalize_path(path)
        return self._owner(path).read(path)

    def exists(self, path: str) -> bool:
        path = normalize_path(path)
        return any(fs.exists(path) for fs in self.layers)

    def ls(self, path: str = "/") -> list[str]:
        """Like :meth:`MemoryFS.ls` over the union of the layers."""
        folder = normalize_dir(path)
        owners = self.owners()
        if folder and folder in owners:
            return [folder]
        scopes = [fs.scope for fs in self.layers]
        return list_entries(owners, folder, lambda p: f"{p} does not exist in any of {scopes}")

    def glob(self, pattern: str) -> list[str]:
        regex = glob_regex(pattern)
        return [p for p in self.owners() if regex.match(p)]

    def grep(self, regex: str, *, glob: str | None = None, ignore_case: bool = False) -> list[GrepMatch]:
        """Matching lines of the visible files; each match names the scope it came from."""
        compiled = compile_regex(regex, ignore_case)
        owners = self.owners()
        paths = self.glob(glob) if glob else list(owners)
        return [m for p in paths for m in grep_text(compiled, p, owners[p].read(p), owners[p].scope)]

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """Search every layer, keep chunks of visible files only, best score first (scores share one scale:
        the store's hybrid fusion)."""
        owners = self.owners()
        hits = [h for fs in self.layers for h in fs.search(query, k) if owners.get(h.path) is fs]
        return sorted(hits, key=lambda h: -h.score)[:k]

    def _owner(self, path: str) -> V:
        for fs in self.layers:
            if fs.exists(path):
                return fs
        raise NotFound(f"{path} does not exist in any of {[fs.scope for fs in self.layers]}")
