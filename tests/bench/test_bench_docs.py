"""bench/ has a front door that stays true: bench/README.md names every tool, every command BENCHMARKS.md and the
README name is a module that runs, every result file they name is committed, and every committed result file is
read or named by something."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import page

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
README = BENCH / "README.md"
PAGES = [ROOT / "BENCHMARKS.md", README]
# the other pages that may name a bench command or a result file by its path
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
COMMAND = re.compile(r"python -m (bench(?:\.\w+)*)")
RESULT_PATH = re.compile(r"bench/results/([\w.{},-]+)")
RESULT_NAME = re.compile(r"`([\w.-]+\.(?:json|md|png))`")


def _expand(name: str) -> list[str]:
    """``peers_stores.{md,json}`` as its two names."""
    m = re.search(r"\{([^}]*)\}", name)
    if m is None:
        return [name.rstrip(".,")]
    return [name[: m.start()] + part + name[m.end() :] for part in m.group(1).split(",")]


def _module_file(module: str) -> Path | None:
    """The file ``python -m module`` runs, if there is one."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__main__.py"):
        if candidate.is_file():
            return candidate
    return None


def commands_in(text: str) -> set[str]:
    return set(COMMAND.findall(text))


def results_named_in(text: str) -> set[str]:
    names = {n for m in RESULT_PATH.findall(text) for n in _expand(m)}
    return names | set(RESULT_NAME.findall(text))


TOOLS = sorted(
    p
    for p in BENCH.rglob("*.py")
    if p.name not in ("__init__.py", "__main__.py")
    and not any(part.startswith(".") or part in ("data", "results") for part in p.relative_to(BENCH).parts)
)


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_bench_command_named_is_a_module_that_runs(doc: Path) -> None:
    text = doc.read_text("utf-8")
    named = commands_in(text)
    assert named, f"{doc.name} names no bench command"
    for module in sorted(named):
        path = _module_file(module)
        assert path is not None, f"{doc.relative_to(ROOT)} names `python -m {module}`: no such module"
        assert '__name__ == "__main__"' in path.read_text("utf-8") or path.name == "__main__.py", (
            f"{doc.relative_to(ROOT)} names `python -m {module}`, which runs nothing"
        )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_name_bench_commands_and_results_that_exist(doc: Path) -> None:
    text = doc.read_text("utf-8")
    missing = sorted(f"python -m {m}" for m in commands_in(text) if _module_file(m) is None)
    missing += sorted(f"bench/results/{n}" for m in RESULT_PATH.findall(text) for n in _expand(m))
    missing = [m for m in missing if not m.startswith("bench/results/") or not (ROOT / m).is_file()]
    assert not missing, f"{doc.relative_to(ROOT)} names what bench/ does not have: {missing}"


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_result_file_named_is_committed(doc: Path) -> None:
    for name in sorted(results_named_in(doc.read_text("utf-8"))):
        assert (RESULTS / name).is_file(), f"{doc.relative_to(ROOT)} names bench/results/{name}: not committed"


def test_every_committed_result_file_is_read_or_named() -> None:
    sources = {f for _, files, _ in page.SOURCES for f in files} | {name for name, _ in page.PLOTS}
    named = sources.union(*(results_named_in(p.read_text("utf-8")) for p in PAGES))
    unread = sorted(p.name for p in RESULTS.iterdir() if p.name not in named)
    assert not unread, f"bench/results/ files nothing reads or names (delete them, or say what they are): {unread}"


def test_the_readme_names_every_command_behind_benchmarks_md() -> None:
    text = README.read_text("utf-8")
    for section, files, commands in page.SOURCES:
        for command in commands:
            assert f"`{command}`" in text, f"bench/README.md misses the command behind {section!r}: {command}"
        for name in files:
            assert f"`{name}`" in text, f"bench/README.md misses {section!r}'s result file {name}"


def test_each_run_recorded_the_command_benchmarks_md_names() -> None:
    for section, files, commands in page.SOURCES:
        for name in files:
            path = RESULTS / name
            argv = json.loads(path.read_text("utf-8")).get("argv") if path.suffix == ".json" else None
            if isinstance(argv, list):
                assert any(c.split()[3:] == argv for c in commands), f"{section!r}: {name} was made by {argv}"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_readme_names_every_tool(tool: Path) -> None:
    module = ".".join(tool.relative_to(ROOT).with_suffix("").parts)
    text = README.read_text("utf-8")
    assert f"{module}`" in text or f"{module} " in text or f"`{tool.name}`" in text or f"{tool.name}`" in text, (
        f"bench/README.md does not say what {tool.relative_to(ROOT)} is"
    )


def test_the_checks_see_a_wrong_command_and_a_missing_file() -> None:
    text = "`python -m bench.no_such_tool`, `python -m bench.peers.stores`; bench/results/gone.json, `peers.json`"
    assert {m for m in commands_in(text) if _module_file(m) is None} == {"bench.no_such_tool"}
    assert {n for n in results_named_in(text) if not (RESULTS / n).is_file()} == {"gone.json"}
    assert results_named_in("writes `bench/results/peers_stores.{md,json}`") >= {"peers_stores.md", "peers_stores.json"}
