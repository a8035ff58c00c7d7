"""docs/ARCHITECTURE.md and its layout table cannot go stale: what they name exists."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = (ROOT / "docs" / "ARCHITECTURE.md").read_text()

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def test_paths_and_modules_named_in_the_architecture_page_exist() -> None:
    paths = set(re.findall(r"`(ltm/[\w/]+(?:\.py)?)`", ARCHITECTURE))
    assert paths, "the page names no files"
    missing = [p for p in sorted(paths) if not (ROOT / p).exists()]
    assert not missing, f"docs/ARCHITECTURE.md names files that do not exist: {missing}"
    modules = set(re.findall(r"\b(ltm(?:\.[a-z_]+)+)\b", ARCHITECTURE))
    absent = [m for m in sorted(modules) if not _module_exists(m)]
    assert not absent, f"docs/ARCHITECTURE.md names modules that do not exist: {absent}"


def test_the_architecture_page_states_the_enforced_layers() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    layers = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")["layers"]
    stated = " > ".join(layer.strip("()") for layer in layers)
    match = re.search(r"\*\*layers\*\*: (.*?) \(`\|`", ARCHITECTURE, re.DOTALL)
    assert match, "the page lists the layers after **layers**:"
    assert " ".join(match.group(1).split()).replace("`", "") == stated


def test_layout_table_lists_real_paths_without_globs() -> None:
    table = ARCHITECTURE[ARCHITECTURE.index("## Layout") :]
    table = table[: table.index("\n## ", 1)]
    assert "docs/gen_ref.py" in table
    cells = re.findall(r"^\| (.+?) \|", table, re.MULTILINE)[2:]  # skip the header and the rule
    paths = [p for cell in cells for p in re.findall(r"`([^`]+)`", cell)]
    assert paths and not [p for p in paths if any(c in p for c in "*?[")], "no globs in the layout table"
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"the layout table of docs/ARCHITECTURE.md names paths that do not exist: {missing}"


# Modules still past MODULE_LINES, each to be split by idea; a split removes its entry (a missing file fails below).
LONG_MODULES: set[str] = set()  # modules allowed past the limit while a split is pending: none
MODULE_LINES = 400


def test_no_module_of_ltm_is_over_400_lines() -> None:
    """A module says one idea: past 400 lines it gets split by idea into modules of its package, not trimmed."""
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in (ROOT / "ltm").rglob("*.py")}
    long = {path: n for path, n in sorted(sizes.items()) if n > MODULE_LINES and path not in LONG_MODULES}
    assert not long, f"split these modules by idea into modules of their package (at most {MODULE_LINES} lines): {long}"
    gone = sorted(LONG_MODULES - set(sizes))
    assert not gone, f"{gone} no longer exist: remove them from LONG_MODULES in {Path(__file__).name}"


def test_short_file_and_module_names_in_the_page_exist() -> None:
    """The page also names files by their short path (``mirror.py``, ``embedded/filters.py``) and names by their
    module (``adding.STAGE_MAX``): each must be a file of ltm/, and each name an attribute of a store module so
    called (a move leaves no stale name behind)."""
    files = [p.relative_to(ROOT).as_posix() for p in (ROOT / "ltm").rglob("*.py")]
    short = set(re.findall(r"`((?:[a-z_]+/)?[a-z_]+\.py)`", ARCHITECTURE))
    missing = [
        name for name in sorted(short) if not (ROOT / name).exists() and not any(f.endswith("/" + name) for f in files)
    ]
    assert not missing, f"docs/ARCHITECTURE.md names files that do not exist: {missing}"
    store: dict[str, list[str]] = {}
    for path in (ROOT / "ltm" / "store").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        store.setdefault(path.stem, []).append(module)
    stale = [
        f"{stem}.{name}"
        for stem, name in sorted(set(re.findall(r"`([a-z_]+)\.([A-Za-z_]+)`", ARCHITECTURE)))
        if stem in store
        and name != "py"
        and not any(hasattr(importlib.import_module(m), name) for m in store[stem] if _importable(m))
    ]
    assert not stale, f"docs/ARCHITECTURE.md names what its module does not hold: {stale}"


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:  # an engine's optional driver (psycopg) is not installed
        return False
    return True


def test_every_facade_module_is_held_to_the_engine_free_contract() -> None:
    """The ``facade-engine-free`` contract lists the facade's modules one by one (a package would take the engines
    with it): a new top-level module of ltm/store must join the list, so only backend.py may name an engine."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "facade-engine-free")
    modules = {f"ltm.store.{p.stem}" for p in (ROOT / "ltm" / "store").glob("*.py")} - {
        "ltm.store.__init__",
        "ltm.store.backend",
    }
    assert set(contract["source_modules"]) == modules
    assert {"ltm.store.embedded", "ltm.store.pg", "sqlite3", "faiss", "psycopg"} <= set(contract["forbidden_modules"])
    # the package's own __init__ cannot be listed without its sub-packages: read its imports here
    tree = ast.parse((ROOT / "ltm" / "store" / "__init__.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    }
    engines = ("ltm.store.embedded", "ltm.store.pg", "sqlite3", "faiss", "psycopg")
    assert not [m for m in imported if m.startswith(engines)]


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.parametrize("name", ["metagpt", "langgraph", "autogen", "crewai", "llama_index"])
def test_every_framework_has_the_one_layout(name: str) -> None:
    """Each framework's adapter, page, tests and test leg sit where every other framework's do."""
    assert (ROOT / "ltm" / "integrations" / f"{name}.py").is_file() or (
        ROOT / "ltm" / "integrations" / name / "__init__.py"
    ).is_file()
    assert (ROOT / "docs" / "frameworks" / f"{name}.md").is_file()
    tests = ROOT / "tests" / "integrations"
    assert (tests / f"test_{name}.py").is_file() or (tests / name / "__init__.py").is_file()
    if name != "llama_index":  # a dependency of the core: its tests run in ltm's own environment
        assert (ROOT / "scripts" / "frameworks" / name).is_file()
