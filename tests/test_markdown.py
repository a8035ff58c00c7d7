"""The project's Markdown, comments and docstrings read as documentation, not as a work log, and the changelog goes
by version.

A work log shows as numbered work periods ("round 7", "the eighth round", "session 30", "stop 11"), references to
issue numbers, dated entries ("## ... (2026-11-25)") and notes about the machine a run happened to be on. Each
is refused in every Markdown file of the project (README.md, BENCHMARKS.md, CHANGELOG.md, docs/, the generated
tables in bench/results/).

The code's comments and docstrings (ltm/, bench/) also hold no measured history: a recall delta ("REALTALK 0.635 ->
0.651") belongs with the figures it came from, in docs/search.md or BENCHMARKS.md, and the code says why its value
is what it is and links there.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

import ltm

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    p
    for p in ROOT.rglob("*.md")
    if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
    and p.relative_to(ROOT).parts[:2] != ("bench", "data")
)
_ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
WORK_LOG = {
    "round N": re.compile(r"\bround \d+\b", re.I),
    "an ordinal round": re.compile(rf"\b(?:{_ORDINALS}) round\b", re.I),
    "an issue number": re.compile(r"\bissues? #?\d+\b", re.I),
    "a session": re.compile(r"\b(?:session|stop|work period) #?\d+\b|\bthis session\b", re.I),
    "a dated heading": re.compile(r"^#+ .*\b20\d\d-\d\d-\d\d\b", re.M),
    "the machine of one run": re.compile(r"\bon this machine\b|\bthis machine's\b", re.I),
}


def offences(text: str) -> list[str]:
    """Each work-log pattern ``text`` holds, with the line it is on."""
    found = []
    for what, pattern in WORK_LOG.items():
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"line {line}: {what} ({m.group(0)!r})")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_reads_as_a_work_log(page: Path) -> None:
    found = offences(page.read_text("utf-8"))
    assert not found, f"{page.relative_to(ROOT)} reads as a work log:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "## Eighth round (after 08f6fd4)",
        "measured in session 30",
        "issue 21 item 3",
        "REALTALK 0.565 -> 0.572 (round 2)",
        "## HNSW recall (2026-11-25)",
        "(load 11 on this machine)",
    ],
)
def test_each_work_log_pattern_is_caught(text: str) -> None:
    assert offences(text)


def test_documentation_text_passes() -> None:
    assert not offences("ltm search --after 2026-11-01\n| round | success |\nthe first three rounds of the bench")


def _versions() -> list[str]:
    return re.findall(r"^## (\d+\.\d+\.\d+)\b", (ROOT / "CHANGELOG.md").read_text("utf-8"), re.M)


def test_changelog_goes_by_version_newest_first() -> None:
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert re.search(r"^## Unreleased$", text, re.M), "CHANGELOG.md keeps an Unreleased section on top"
    versions = _versions()
    assert versions, "CHANGELOG.md has no version sections"
    keys = [tuple(int(x) for x in v.split(".")) for v in versions]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys)


def test_the_newest_version_is_what_ltm_reports() -> None:
    assert _versions()[0] == ltm.__version__, "the newest CHANGELOG version is ltm.__version__"
    out = subprocess.run(
        [sys.executable, "-m", "ltm.cli", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert ltm.__version__ in out.stdout


def _prose_of(source: str) -> str:
    """A Python file's comments and docstrings, one per line (what a reader takes as the code's explanation)."""
    parts = [
        tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    return "\n".join(parts)


CODE = sorted(
    p
    for folder in ("ltm", "bench", "tests", "examples", "docs")
    for p in (ROOT / folder).rglob("*.py")
    if p != Path(__file__).resolve()  # and not what a run installs there (bench/.venvs: others' code)
    and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
)
SCRIPTS = sorted(p for p in (ROOT / "scripts").rglob("*") if p.is_file() and not p.suffix)


@pytest.mark.parametrize("path", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_comment_or_docstring_reads_as_a_work_log(path: Path) -> None:
    found = offences(_prose_of(path.read_text("utf-8")))
    assert not found, f"{path.relative_to(ROOT)}'s comments or docstrings read as a work log:\n" + "\n".join(found)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_script_comment_reads_as_a_work_log(path: Path) -> None:
    comments = "\n".join(line for line in path.read_text("utf-8").splitlines() if line.lstrip().startswith("#"))
    found = offences(comments)
    assert not found, f"{path.relative_to(ROOT)}'s comments read as a work log:\n" + "\n".join(found)


def test_the_code_check_reads_comments_and_docstrings() -> None:
    source = '"""Fixed in issue 13."""\n\n\ndef f() -> str:\n    return "round 2 of the game"  # the eighth round\n'
    prose = _prose_of(source)
    assert "issue 13" in prose and "eighth round" in prose and "round 2 of the game" not in prose


# "0.635 -> 0.651", "0.635→0.651": two figures of at least two decimals joined by an arrow (a load "1.0 -> 1.2" is not)
RECALL_DELTA = re.compile(r"(?<![\w.])[01]?\.\d{2,}\s*(?:->|→)\s*[01]?\.\d{2,}(?![\w.])")
MEASURED = sorted(p for p in CODE if p.relative_to(ROOT).parts[0] in ("ltm", "bench"))


def recall_deltas(prose: str) -> list[str]:
    """Each line of ``prose`` that carries a recall delta, with its number."""
    return [f"line {i}: {line.strip()}" for i, line in enumerate(prose.splitlines(), 1) if RECALL_DELTA.search(line)]


@pytest.mark.parametrize("path", MEASURED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_comment_or_docstring_carries_a_recall_delta(path: Path) -> None:
    found = recall_deltas(_prose_of(path.read_text("utf-8")))
    assert not found, (
        f"{path.relative_to(ROOT)}'s comments or docstrings carry measured history (move the figures to "
        "docs/search.md or BENCHMARKS.md and link there):\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "comment",
    [
        "# REALTALK 0.635 -> 0.651, FriendsQA 0.679 -> 0.694",
        "# MADial-Bench recall@10 0.723→0.765",
        "# dense .409->.531",
    ],
)
def test_a_recall_delta_in_a_comment_is_caught(comment: str) -> None:
    assert recall_deltas(_prose_of(f"WEIGHT = 0.5  {comment}\n"))


def test_what_is_not_a_recall_delta_passes() -> None:
    source = (
        '"""Load average 1.0 -> 1.2 -> 1.7; 16.9 -> 8.6 ms; weights 0.25-0.30; see docs/search.md."""\n\n'
        'FIGURES = "0.635 -> 0.651"  # a string the code uses is not prose\n'
    )
    assert not recall_deltas(_prose_of(source))
