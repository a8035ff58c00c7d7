"""The seam between the store's facade and its engines (ltm/store/backend.py) stays typed: no engine or facade
function takes the handle as ``Any``."""

from __future__ import annotations

import ast
from pathlib import Path

STORE = Path(__file__).resolve().parents[2] / "ltm" / "store"


def test_no_function_of_the_store_takes_the_handle_untyped() -> None:
    untyped = []
    for path in sorted(STORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if (
                    arg.arg in {"store", "handle", "backend"}
                    and ast.unparse(arg.annotation or ast.Name("Any")) == "Any"
                ):
                    untyped.append(f"{path.relative_to(STORE.parent.parent)}:{node.lineno} {node.name}({arg.arg})")
    assert not untyped, f"the handle crosses the seam as Any: {untyped}"
