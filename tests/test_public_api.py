from __future__ import annotations

import importlib

import ltm


def test_all_is_sorted_and_matches_exports() -> None:
    assert ltm.__all__ == sorted(ltm.__all__)
    assert set(ltm.__all__) == set(ltm._EXPORTS)


def test_every_public_name_imports() -> None:
    for name in ltm.__all__:
        module = importlib.import_module(ltm._EXPORTS[name])
        assert getattr(module, name) is getattr(ltm, name)


def test_design_names_are_public() -> None:
    for name in ("Message", "Memory", "MemoryItem", "StepMemory", "Settings", "LTMError"):
        assert name in ltm.__all__
