"""Memory as files: :class:`MemoryFS` (one scope's files, validated, versioned, approved) and :class:`MergedFS`."""

from __future__ import annotations

from ltm.files.fs import MemoryFS
from ltm.files.merge import MergedFS
from ltm.files.records import Change, FileInfo, FileOp, GrepMatch, SearchHit, Version

__all__ = ["Change", "FileInfo", "FileOp", "GrepMatch", "MemoryFS", "MergedFS", "SearchHit", "Version"]
