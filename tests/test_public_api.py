from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import ltm


def test_all_is_sorted_and_matches_exports() -> None:
    assert ltm.__all__ == sorted(ltm.__all__)
    assert set(ltm.__all__) == set(ltm._EXPORTS)


def test_type_checking_block_matches_exports() -> None:
    """The names type checkers see (the ``if TYPE_CHECKING:`` imports) are exactly the lazy exports, each from
    the module ``_EXPORTS`` loads it from: a name added to one and not the other fails here."""
    tree = ast.parse(inspect.getsource(ltm))
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1
    imported = {
        alias.asname or alias.name: node.module
        for node in blocks[0].body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == ltm._EXPORTS


def test_every_public_name_imports() -> None:
    for name in ltm.__all__:
        module = importlib.import_module(ltm._EXPORTS[name])
        assert getattr(module, name) is getattr(ltm, name)


def test_design_names_are_public() -> None:
    for name in ("Message", "Memory", "MemoryItem", "StepMemory", "Settings", "LTMError"):
        assert name in ltm.__all__
    for name in ("KVStore", "LLM", "with_context"):  # what the README and BrainMemory(kv=...) need
        assert name in ltm.__all__


def test_with_context_is_the_message_module_s() -> None:
    from ltm.message import with_context

    assert with_context is ltm.with_context


def test_version_is_written_once() -> None:
    """pyproject.toml has no version of its own: setuptools reads ltm.__version__ (dynamic)."""
    from setuptools.config.pyprojecttoml import read_configuration

    project = read_configuration(Path(__file__).parent.parent / "pyproject.toml")["project"]
    assert project["dynamic"] == ["version"] and project["version"] == ltm.__version__
