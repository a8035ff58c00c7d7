"""MemoryFS to and from a real directory, so a memory folder moves to other agent harnesses and back.

Export writes each file byte for byte (no newline translation) into an empty directory. Import reads a
directory tree, refuses symbolic links (they could point anywhere on the host) and non-UTF-8 files, checks
every path and every file's shape, and reports all problems at once before anything is proposed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ltm.errors import InvalidInput, NotFound, ValidationFailed
from ltm.files.paths import normalize_path
from ltm.files.validate import Limits, problems

__all__ = ["export_files", "read_dir"]

_SKIP_DIRS = {".git"}  # a memory folder kept under git exports and imports cleanly


def export_files(directory: Path, files: dict[str, str]) -> list[str]:
    """Write ``files`` (normalised path -> text) under ``directory``, which must not exist or be empty."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise InvalidInput(f"export target {directory} is not an empty directory; choose a new or empty one")
    directory.mkdir(parents=True, exist_ok=True)
    root = directory.resolve()
    written = []
    for path, text in files.items():
        target = (root / path).resolve()
        if root not in target.parents:  # paths are normalised on the way in; this is defence in depth
            raise InvalidInput(f"{path} would be written outside {root}; refusing to export it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        written.append(path)
    return written


def read_dir(directory: Path, limits: Limits) -> dict[str, str]:
    """Every file under ``directory`` as normalised path -> text; ValidationFailed lists every problem."""
    if not directory.is_dir():
        raise NotFound(f"{directory} is not a directory; pass the folder that holds AGENTS.md and skills/")
    found: dict[str, str] = {}
    errors: list[str] = []
    for dirpath, dirnames, filenames in os.walk(directory, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames):
            if name in _SKIP_DIRS:
                dirnames.remove(name)
            elif (here / name).is_symlink():
                errors.append(f"{_rel(here / name, directory)}: is a symbolic link; copy the folder itself")
        for name in sorted(filenames):
            _read_one(here / name, directory, limits, found, errors)
    if errors:
        raise ValidationFailed(
            f"{directory} was not imported ({len(errors)} problem(s) to fix, then import again):\n"
            + "\n".join(f"- {e}" for e in errors)
        )
    return dict(sorted(found.items()))


def _read_one(file: Path, root: Path, limits: Limits, found: dict[str, str], errors: list[str]) -> None:
    rel = _rel(file, root)
    if file.is_symlink():
        errors.append(f"{rel}: is a symbolic link; copy the file itself")
        return
    try:
        path = normalize_path(rel)
    except InvalidInput as exc:
        errors.append(f"{rel}: {exc}")
        return
    size = file.stat().st_size
    if size > limits.max_file_bytes:
        errors.append(f"{path}: {size} bytes, over the {limits.max_file_bytes}-byte cap; split it")
        return
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        errors.append(f"{path}: is not UTF-8 text; memory holds text files only")
        return
    if path.lower() in {p.lower() for p in found}:
        errors.append(f"{path}: another file differs from it only in case; rename one of them")
        return
    errors.extend(f"{path}: {p}" for p in problems(path, text, limits))
    found[path] = text


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
