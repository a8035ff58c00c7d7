"""bench/peers/frameworks: the table, the labels, and a tiny run of LangGraph's stores through the real driver and
worker processes (the project's venv has LangGraph, so a stand-in framework environment points at it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.peers import corpus, frameworks
from bench.peers.frameworks import SPECS, Samples


def test_the_table_gives_rates_percentiles_and_a_dash_where_a_store_has_no_figure() -> None:
    specs = [s for s in SPECS if s.framework == "autogen"]
    samples = {
        "LtmMemory": Samples(
            put=[0.5, 0.5], items=2000, search=[0.010] * 19 + [0.100], reopen=[0.2, 0.4], labelled=[1.0, 0.5]
        ),
        "ChromaDBVectorMemory": Samples(put=[4.0], items=2000, search=[0.004] * 20, reopen=[1.5], exact=[1.0, 0.9]),
        "ListMemory": Samples(put=[0.1], items=2000),
    }
    rows = frameworks.rows_of("autogen", specs, samples)
    text = frameworks.table(rows)
    ltm, chroma, listed = text.splitlines()[2:]  # p95 of 19 x 10 ms and one 100 ms: 14.5 ms (interpolated)
    assert ltm.startswith("| autogen | LtmMemory | 2,000 items/s | 10.0 ms | 14.5 ms | 300.0 ms | 0.750 | - |")
    assert chroma.startswith("| autogen | ChromaDBVectorMemory | 500 items/s | 4.0 ms | 4.0 ms | 1.50 s | - | 0.950 |")
    assert listed.startswith("| autogen | ListMemory | 20,000 items/s | - | - | - | - | - |")
    assert ltm.endswith(f"| {frameworks.HYBRID} |")
    assert [r["store"] for r in rows] == ["LtmMemory", "ChromaDBVectorMemory", "ListMemory"]


def test_labels_are_the_rows_of_each_questions_evidence_turns_below_the_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = [{"id": f"t{i}", "speaker": "A", "text": "  " if i == 1 else f"turn {i}", "time": 0} for i in range(5)]
    data = {
        "conversations": [
            {
                "id": "c1",
                "turns": turns,
                "questions": [{"question": "where?", "evidence": ["t2", "t4"]}, {"question": "none?", "evidence": []}],
            }
        ]
    }
    (tmp_path / "realtalk.json").write_text(json.dumps(data))
    monkeypatch.setattr(corpus, "DATA", tmp_path)
    # turn t1 is blank and has no row: t2 is row 1, t4 is row 3 (and is cut off at size 3)
    assert frameworks.labels(5, ["where?", "none?", "unknown?"]) == [{1, 3}, set(), set()]
    assert frameworks.labels(3, ["where?"]) == [{1}]
    assert frameworks.recall([1, 7, 3], {1, 3}, 2) == 0.5 and frameworks.recall([1], set(), 10) is None


def test_a_missing_framework_environment_names_the_command_that_builds_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="LTM_FRAMEWORKS=crewai bash scripts/test-frameworks"):
        frameworks.main(["--frameworks", "crewai", "--venv-dir", str(tmp_path)])


def _unit(rows: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, 384)).astype(np.float32)
    return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)


def test_langgraph_stores_run_in_their_own_processes_through_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size, asked = 24, 6
    words = [
        "apple",
        "river",
        "candle",
        "orbit",
        "meadow",
        "violin",
        "harbor",
        "pepper",
        "glacier",
        "lantern",
        "comet",
        "saddle",
    ]
    texts = [f"{words[i % 12]} {words[(i * 5 + 1) % 12]} note {i}" for i in range(size)]
    texts[3] = texts[4] = "ok"  # a text twice in one batch: InMemoryStore refuses it unless the batch is cut
    vectors = _unit(size, 3)
    vectors[4] = vectors[3]
    questions = [f"question about {words[i]}" for i in range(asked)]
    wanted = [5, 7, 9, 11, 13, 15]  # each question's vector is that row's: its nearest item
    path = tmp_path / "data" / "c.json"
    path.parent.mkdir()
    turns = [{"text": t, "speaker": "A", "time": 1.7e9 + i} for i, t in enumerate(texts)]
    path.write_text(json.dumps({"turns": turns, "questions": questions}))
    np.savez(path.with_suffix(".npz"), vectors=vectors, queries=vectors[wanted])
    monkeypatch.setattr(corpus, "build", lambda n, q: path)
    monkeypatch.setattr(corpus, "OUT", tmp_path / "data")
    monkeypatch.setattr(corpus, "real_turns", lambda: (turns, questions))
    monkeypatch.setattr(frameworks, "labels", lambda n, q: [{r} for r in wanted])
    venvs = tmp_path / "venvs" / "langgraph" / "bin"
    venvs.mkdir(parents=True)
    (venvs / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # the project's venv stands in
    (venvs / "python").chmod(0o755)
    out = tmp_path / "out"
    args = ["--frameworks", "langgraph", "--stores", "LtmStore,InMemoryStore", "--size", str(size)]
    args += ["--queries", str(asked), "--batch", "10", "--reopens", "1", "-k", "3"]
    assert frameworks.main([*args, "--venv-dir", str(tmp_path / "venvs"), "--out", str(out)]) == 0
    result: dict[str, Any] = json.loads(out.with_suffix(".json").read_text())
    rows = {r["store"]: r for r in result["rows"]}
    assert set(rows) == {"LtmStore", "InMemoryStore"}
    for row in rows.values():
        assert row["put_per_s"] > 0 and 0 < row["search_p50"] <= row["search_p95"]
        assert row["recall_labels"] == 1.0  # every question found its own row in the top 3
    assert rows["InMemoryStore"]["overlap_exact"] == 1.0  # exact dense search: the exact top 3
    assert rows["LtmStore"]["reopen_first"] > 0 and rows["InMemoryStore"]["reopen_first"] is None  # not durable
    assert "load average (1 min)" in result["head"] and len(result["loads"]) == 2
    assert "| langgraph | LtmStore |" in out.with_suffix(".md").read_text()
