from __future__ import annotations

import pytest

from ltm.errors import InvalidInput
from ltm.files.paths import MAX_DEPTH, MAX_SEGMENT_CHARS, glob_regex, normalize_dir, normalize_path


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("AGENTS.md", "AGENTS.md"),
        ("skills/pdf/SKILL.md", "skills/pdf/SKILL.md"),
        ("skills\\pdf\\SKILL.md", "skills/pdf/SKILL.md"),
        ("skills//pdf///SKILL.md", "skills/pdf/SKILL.md"),
        ("  notes/todo.md ", "notes/todo.md"),
        ("notes/cafe\u0301.md", "notes/caf\u00e9.md"),  # NFC: one spelling per file
        (".gitignore", ".gitignore"),
    ],
)
def test_accepted_paths_are_normalised(given: str, expected: str) -> None:
    assert normalize_path(given) == expected


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ("../etc/passwd", "traversal"),
        ("skills/../../x.md", "traversal"),
        ("skills/..\\..\\x.md", "traversal"),
        ("./AGENTS.md", "traversal"),
        ("/etc/passwd", "absolute"),
        ("\\\\host\\share\\x.md", "absolute"),
        ("C:\\Windows\\x.md", "absolute"),
        ("c:x.md", "absolute"),
        ("~/x.md", "home"),
        ("", "empty"),
        ("   ", "empty"),
        ("notes/a\x00b.md", "forbidden"),
        ("notes/a\nb.md", "forbidden"),
        ("notes/what?.md", "forbidden"),
        ("notes/a:b.md", "forbidden"),
        ("notes/CON.md", "reserved"),
        ("nul", "reserved"),
        ("notes./x.md", "dot or space"),
        ("notes/", "directory"),
        ("a" * (MAX_SEGMENT_CHARS + 1), "shorten"),
        ("/".join(["d"] * (MAX_DEPTH + 1)), "deep"),
        ("/".join(["d" * 100] * 6), "characters"),
    ],
)
def test_unsafe_paths_are_rejected_with_the_reason(given: str, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment):
        normalize_path(given)


def test_non_string_path_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="string"):
        normalize_path(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("root", ["", "/", ".", "./"])
def test_root_directory_spellings(root: str) -> None:
    assert normalize_dir(root) == ""


def test_directory_is_normalised_like_a_path() -> None:
    assert normalize_dir("skills/") == "skills"
    with pytest.raises(InvalidInput):
        normalize_dir("../x")
    with pytest.raises(InvalidInput):
        normalize_dir("/skills")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("skills/*/SKILL.md", "skills/pdf/SKILL.md", True),
        ("skills/*/SKILL.md", "skills/pdf/ref/SKILL.md", False),
        ("**/*.md", "AGENTS.md", True),
        ("**/*.md", "skills/pdf/SKILL.md", True),
        ("*.md", "skills/pdf/SKILL.md", False),
        ("/AGENTS.md", "AGENTS.md", True),
        ("notes/?.md", "notes/a.md", True),
        ("notes/[ab].md", "notes/b.md", True),
        ("notes/[!ab].md", "notes/b.md", False),
        ("skills/**", "skills/pdf/SKILL.md", True),
        ("a.md", "a_md", False),
    ],
)
def test_glob(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


@pytest.mark.parametrize("pattern", ["", "  ", "notes/[ab.md"])
def test_bad_glob_is_rejected(pattern: str) -> None:
    with pytest.raises(InvalidInput):
        glob_regex(pattern)


def test_unpaired_surrogate_in_path_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="surrogate"):
        normalize_path("notes/\udc80.md")
