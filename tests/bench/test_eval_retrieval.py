"""The labelled conversation set and bench/eval_retrieval.py (recall of dense, keyword and hybrid search)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bench import eval_retrieval as ev
from bench import make_conversations as maker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def turns() -> list[dict[str, Any]]:
    return ev.load_jsonl(ev.TURNS_PATH)


@pytest.fixture(scope="module")
def questions() -> list[dict[str, Any]]:
    return ev.load_jsonl(ev.QUESTIONS_PATH)


def test_dataset_size_sessions_and_speakers(turns: list[dict[str, Any]]) -> None:
    assert len(turns) >= 300
    assert len({t["id"] for t in turns}) == len(turns)
    for t in turns:
        assert set(t) == {"id", "session", "date", "speaker", "text"}
        assert re.fullmatch(r"s\d{2}-t\d{3}", t["id"]) and t["id"].startswith(t["session"] + "-")
        assert t["text"].strip()
    dates = {t["session"]: t["date"] for t in turns}
    assert len(dates) >= 10
    for t in turns:  # one date per session
        assert dates[t["session"]] == t["date"]
    parsed = [date.fromisoformat(dates[s]) for s in sorted(dates)]
    assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)
    speakers = Counter(t["speaker"] for t in turns)
    assert len(speakers) == 2 and min(speakers.values()) >= 100


def test_questions_point_at_existing_turns(turns: list[dict[str, Any]], questions: list[dict[str, Any]]) -> None:
    ids = {t["id"] for t in turns}
    assert len(questions) >= 60
    assert len({q["id"] for q in questions}) == len(questions)
    assert len({q["question"] for q in questions}) == len(questions)
    for q in questions:
        assert q["question"].endswith("?")
        assert q["answers"] and set(q["answers"]) <= ids, q
    kinds = Counter(q["kind"] for q in questions)
    assert set(kinds) == {"lexical", "paraphrase", "speaker_time", "neighbour", "rare"}
    assert min(kinds.values()) >= 5


def test_committed_data_matches_its_generator() -> None:
    assert maker.main(["--check"]) == 0


def test_recall_and_turn_time() -> None:
    assert ev.recall(["a", "b", "c"], ["c", "x"], 2) == 0.0
    assert ev.recall(["a", "b", "c"], ["c", "x"], 3) == 0.5
    turn = {"date": "2024-01-08"}
    assert ev.turn_time(turn, 2) - ev.turn_time(turn, 0) == 120.0
    assert ev.turn_time(turn, 0) == 1704704400.0  # 2024-01-08T09:00:00Z


def test_messages_carry_speaker_date_and_ids(turns: list[dict[str, Any]]) -> None:
    messages = ev.to_messages(turns[:30])
    assert [m.role for m in messages] == [t["speaker"] for t in turns[:30]]
    assert [m.metadata["turn"] for m in messages] == [t["id"] for t in turns[:30]]
    times = [m.created_at for m in messages]
    assert times == sorted(times) and len(set(times)) == len(times)


def test_eval_machinery_with_hash_embedding(tmp_path: Path) -> None:
    out = tmp_path / "recall.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.eval_retrieval", "--embedding", "hash", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| hybrid |" in proc.stdout
    results = json.loads(out.read_text())
    assert set(results["modes"]) == {"dense", "keyword", "hybrid"}
    for mode, row in results["modes"].items():
        values = [row["recall@1"], row["recall@5"], row["recall@10"]]
        assert all(0.0 <= v <= 1.0 for v in values), (mode, values)
        assert values == sorted(values), (mode, values)
        ranked = results["ranked"][mode]
        assert len(ranked) == results["dataset"]["questions"]
        assert all(len(ids) <= 10 and len(set(ids)) == len(ids) for ids in ranked.values())
    # BM25 does not depend on the embedding: exact names and rare tokens must be found by keyword search.
    assert results["by_kind"]["keyword"]["lexical"] >= 0.7
    assert results["by_kind"]["keyword"]["rare"] >= 0.7
    # Hybrid fuses keyword's ranking in, so it keeps most of keyword's lexical hits even with meaningless vectors.
    assert results["by_kind"]["hybrid"]["lexical"] >= 0.5


@pytest.fixture(scope="module")
def local_results() -> dict[str, Any]:
    """One eval run with the real local model, shared by the slow tests below."""
    results: dict[str, Any] = ev.run(embedding="local")
    return results


@pytest.mark.slow
def test_local_model_dense_and_fusion_add_over_bag_of_words(local_results: dict[str, Any]) -> None:
    recall10 = {mode: row["recall@10"] for mode, row in local_results["modes"].items()}
    # Fusion recovers what the bare-content vectors miss (speaker, date and neighbours are keyword-indexed).
    assert recall10["hybrid"] > recall10["dense"], recall10
    # Meaning matters: hybrid does better than keyword search on the paraphrased questions.
    assert local_results["by_kind"]["hybrid"]["paraphrase"] > local_results["by_kind"]["keyword"]["paraphrase"]


@pytest.mark.slow
def test_hybrid_beats_dense_and_keyword_with_the_local_model(local_results: dict[str, Any]) -> None:
    recall10 = {mode: row["recall@10"] for mode, row in local_results["modes"].items()}
    assert recall10["hybrid"] > recall10["dense"], recall10
    assert recall10["hybrid"] > recall10["keyword"], recall10
