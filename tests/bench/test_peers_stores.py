"""bench/peers/stores: the blended corpus, the table's ratios to Chroma, and the ltm store worker's protocol."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench import ROOT
from bench.peers import corpus, hybrid_quality, pairs, stores
from ltm.config import Settings
from ltm.llm.embeddings import resolve_embedding
from ltm.message import Message
from ltm.store import MemoryStorage


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)


def test_blends_come_after_the_real_turns_as_unit_vectors_of_two_halves() -> None:
    turns = [{"text": f"w{i} x{i} y{i} z{i}", "speaker": f"s{i}", "time": 100.0 + i} for i in range(5)]
    rows, vectors = corpus.blended(turns, _unit(5, 8, 1), 9)
    assert rows[:5] == turns and len(rows) == 9 and vectors.shape == (9, 8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for row in rows[5:]:
        first, second = row["text"].split()[:2], row["text"].split()[2:]
        assert first[0].startswith("w") and second[-1].startswith("z")  # one turn's first half, one's second
        assert row["time"] > 104.0  # after every real turn


def test_the_chat_shape_fills_with_the_real_turns_most_frequent_words_zipf_weighted() -> None:
    common = ["yeah", "really", "going", "today"]
    turns = [
        {"text": " ".join(common[: 1 + i % 4] + [f"rare{i}"]), "speaker": f"s{i % 2}", "time": 100.0 + i}
        for i in range(40)
    ]
    rows, vectors = corpus.blended(turns, _unit(40, 8, 2), 2000, shape="chat")
    assert rows[:40] == turns and len(rows) == 2000 and vectors.shape == (2000, 8)
    fill = [w for row in rows[40:] for w in row["text"].split()]
    assert 4 <= min(len(row["text"].split()) for row in rows[40:]) <= max(len(row["text"].split()) for row in rows[40:])
    counts = {w: fill.count(w) for w in set(fill)}
    assert max(counts, key=counts.__getitem__) == "yeah"  # the most frequent real word, drawn most
    assert counts["yeah"] > 3 * counts.get("today", 0) > 0  # ranks 1 and 4 of the vocabulary: ~1/r
    assert all(row["speaker"] in ("s0", "s1") and row["time"] > 139.0 for row in rows[40:])
    with pytest.raises(SystemExit, match="unknown corpus shape"):
        corpus.build(10, 1, shape="poem")


def test_the_table_is_of_medians_and_rates_with_ltm_over_chroma() -> None:
    run = stores.Run()
    run.add("dense search end to end (at 10)", "ltm", [0.004, 0.005, 0.100], 3)
    run.add("dense search end to end (at 10)", "chroma", [0.010, 0.010, 0.011], 3)
    run.add("ingest, given vectors, batches of 2 (to 10)", "ltm", [0.002, 0.002], 4)
    run.add("ingest, given vectors, batches of 2 (to 10)", "chroma", [0.004, 0.004], 4)
    run.recall["recall@10 vs exact (at 10)"] = {"ltm": [1.0, 0.9], "chroma": [0.8, 0.8]}
    rows, text = stores.table(run, ["ltm", "chroma", "qdrant"])
    assert "| dense search end to end (at 10) | 5.00 ms | 10.00 ms |  | 0.50x time |" in text
    assert "| ingest, given vectors, batches of 2 (to 10) | 1,000/s | 500/s |  | 0.50x time |" in text
    assert "| recall@10 vs exact (at 10) | 0.950 | 0.800 |  | 1.19x |" in text  # a store absent at a size: blank
    assert {r["operation"] for r in rows} >= {"recall@10 vs exact (at 10)"}


def test_ltms_default_search_is_set_against_chromas_dense_search_of_the_same_size() -> None:
    run = stores.Run()
    for size, chroma in ((10, [0.010, 0.010, 0.012]), (20, [0.020, 0.020, 0.020])):
        run.add(f"{stores.DENSE_ROW} (at {size})", "ltm", [0.004, 0.004, 0.004], 3)
        run.add(f"{stores.DENSE_ROW} (at {size})", "chroma", chroma, 3)
        run.add(f"{stores.HYBRID_ROW} (at {size})", "ltm", [0.006, 0.005, 0.007], 3)
    _, text = stores.table(run, ["ltm", "chroma"])
    assert f"| {stores.HYBRID_ROW} (at 10) | 6.00 ms |  | 0.60x time (vs dense) |" in text
    assert f"| {stores.HYBRID_ROW} (at 20) | 6.00 ms |  | 0.30x time (vs dense) |" in text
    alone = stores.Run()  # no Chroma in the run: no ratio
    alone.add(f"{stores.HYBRID_ROW} (at 10)", "ltm", [0.006], 1)
    assert f"| {stores.HYBRID_ROW} (at 10) | 6.00 ms |  |" in stores.table(alone, ["ltm"])[1]


@pytest.mark.parametrize("rows", [6])
def test_the_ltm_store_worker_answers_by_corpus_row(tmp_path: Path, rows: int) -> None:
    dim = len(resolve_embedding(Settings(embedding="hash")).get_query_embedding("probe"))
    vectors = _unit(rows, dim, 2)
    turns = [{"text": f"turn number {i}", "speaker": "Maya", "time": 1.7e9 + i} for i in range(rows)]
    (tmp_path / "c.json").write_text(json.dumps({"turns": turns, "questions": ["q0", "q1"]}))
    np.savez(tmp_path / "c.npz", vectors=vectors, queries=vectors[[4, 1]])
    (tmp_path / "store").mkdir()
    requests = [
        {"op": "open", "dir": str(tmp_path / "store"), "corpus": str(tmp_path / "c.json"), "model": False},
        {"op": "add_batch", "rows": [0, 1, 2, 3]},
        {"op": "add_one", "rows": [4, 5]},
        {"op": "search", "rows": [0, 1], "kind": "vector", "k": 2},
        {"op": "nonsense"},
        {"op": "close"},
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT), LTM_EMBEDDING="hash")
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers.embedded", "ltm"],
        cwd=tmp_path,
        env=env,
        timeout=120,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(requests), done.stderr[-2000:]
    opened, batch, ones, search, bad, _ = answers
    assert "import" in opened and len(batch["times"]) == 1 and len(ones["times"]) == 2
    assert [hits[0] for hits in search["out"]] == [4, 1]  # each query is a stored row's vector: that row first
    assert "unknown op" in bad["error"]


def test_the_hybrid_quality_comparison_counts_overlap_identity_and_evidence() -> None:
    graph = [["1", "2", "3"], ["4", "5", "6"], ["7", "8", "9"]]
    exact = [["1", "2", "3"], ["4", "6", "0"], ["9", "8", "7"]]
    evidence = [{"1"}, {"0", "5"}, set()]  # the third question has no evidence: left out of the recall
    got = hybrid_quality.compare(graph, exact, evidence)
    assert got["overlap"] == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert got["identical"] == pytest.approx(1 / 3)
    assert got["recall_graph"] == pytest.approx((1 + 0.5) / 2)
    assert got["recall_exact"] == pytest.approx((1 + 0.5) / 2)


def test_pairs_summary_is_medians_and_the_median_ratio_per_question() -> None:
    times = {"ltm": [0.010, 0.020, 0.030], "ltm@x": [0.005, 0.030, 0.030]}
    lists = {"ltm": [["1", "2"], ["3"], ["4"]], "ltm@x": [["1", "2"], ["4"], ["4"]]}
    lines = pairs.summary(times, lists)
    assert lines[0].split()[:3] == ["ltm", "p50", "20.00"] and lines[0].endswith("ltm 1.000")
    assert lines[1].split()[:3] == ["ltm@x", "p50", "30.00"] and lines[1].endswith("ltm 1.000")  # 0.5, 1.5, 1.0
    assert lines[2] == "identical top 10: 2 of 3"


def test_pairs_sets_a_backend_constant_or_a_dotted_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    from ltm.store.embedded import backend, snapshot

    monkeypatch.setattr(backend, "READ_BESIDE_FROM", backend.READ_BESIDE_FROM)  # restored after the test
    monkeypatch.setattr(snapshot, "HALF_FROM", snapshot.HALF_FROM)
    pairs.apply_set({"READ_BESIDE_FROM": "7", "ltm.store.embedded.snapshot.HALF_FROM": "9"})
    assert backend.READ_BESIDE_FROM == 7 and snapshot.HALF_FROM == 9


def test_the_pairs_worker_searches_its_store_by_question(tmp_path: Path) -> None:
    settings = Settings.load(storage_dir=tmp_path / "store", embedding="hash")
    with MemoryStorage("pairs", kind="bench", settings=settings) as store:
        store.add_batch([Message(content=text) for text in ("sushi with Elise", "a pottery class", "rain all day")])
    (tmp_path / "c.json").write_text(json.dumps({"questions": ["who likes sushi?", "pottery?"]}))
    requests = [
        {"op": "open", "dir": str(tmp_path / "store"), "corpus": str(tmp_path / "c.json")},
        {"op": "search", "question": 1},
        {"op": "close"},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "bench.peers.pairs", "--serve"],
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT), LTM_EMBEDDING="hash", PAIRS_SET='{"READ_BESIDE_FROM": "0"}'),
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == 3, done.stderr[-2000:]
    found = answers[1]
    assert found["seconds"] > 0 and found["ids"]
    with MemoryStorage("pairs", kind="bench", settings=settings) as store:
        assert store.get(found["ids"][0]).content == "a pottery class"


def test_the_time_after_the_model_is_timed_from_each_searchs_own_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.peers import profile_search

    settings = Settings.load(storage_dir=tmp_path, embedding="hash", query_cache_size=0)
    with MemoryStorage("after", kind="bench", settings=settings) as store:
        store.add_batch([Message(content=text) for text in ("sushi with Elise", "a pottery class", "rain all day")])
        calls: list[str] = []
        embed = store._embed

        def counted(texts: list[str], purpose: str, *rest: Any, **named: Any) -> Any:
            calls.append(purpose)
            return embed(texts, purpose, *rest, **named)

        store._embed = counted  # type: ignore[method-assign]
        profile_search.after_model(store, ["who likes sushi?", "pottery?"])
        assert len(calls) == 4  # one model call per search, dense and default for each question
        assert "_embed" in vars(store) and len(calls) == 4  # the model call it found is put back as it was
        store.search("sushi", k=1)
        assert len(calls) == 5
    line = capsys.readouterr().out.strip()
    numbers = [float(n) for n in re.findall(r"-?\d+\.\d+", line)]  # the difference may be below 0 on a busy machine
    assert line.startswith("after the model returns: dense search") and len(numbers) == 3
    assert numbers[2] == pytest.approx(numbers[1] - numbers[0], abs=0.011)
