"""The namespace names of a data root, read from each namespace's manifest (the directory names are hashed)."""

from __future__ import annotations

import json
from pathlib import Path

from ltm.config import Settings

__all__ = ["namespace_names"]


def namespace_names(settings: Settings, kind: str = "role") -> list[str]:
    """Sorted names of the ``kind`` namespaces under ``settings.storage_dir`` (unreadable manifests skipped)."""
    names: set[str] = set()
    for manifest in sorted(Path(settings.storage_dir, kind).glob("*/manifest.json")):
        try:
            name = json.loads(manifest.read_text(encoding="utf-8")).get("namespace")
        except (OSError, ValueError):
            continue
        if isinstance(name, str):
            names.add(name)
    return sorted(names)
